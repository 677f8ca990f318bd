package migration

import (
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Pending returns the migration among ms that a deletion of cluster must
// wait for, nil when none: one past the start of its cut-over (the
// destination's final copy began, as for CutOverFinalizer) that is
// neither Completed nor Failed, or a Completed one whose origin has
// cleaned the cluster while its Workspace still names that origin (the
// parent's shard has yet to point it at the destination). shard is the
// shard the Workspace names, present whether that shard still holds the
// cluster. Before the cut-over a deletion aborts the move instead.
func Pending(ms []*migrationv1alpha1.LogicalClusterMigration, cluster logicalcluster.Name, shard string, present bool) *migrationv1alpha1.LogicalClusterMigration {
	for _, m := range ms {
		if logicalcluster.Name(m.Spec.LogicalCluster) != cluster {
			continue
		}
		switch m.Status.Phase {
		case "", migrationv1alpha1.LogicalClusterMigrationPhaseFailed, migrationv1alpha1.LogicalClusterMigrationPhasePreparing:
		case migrationv1alpha1.LogicalClusterMigrationPhaseMigrating:
			if m.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationStarted) {
				return m
			}
		case migrationv1alpha1.LogicalClusterMigrationPhaseCompleted:
			if !present && m.Status.OriginShard == shard && m.Spec.DestinationShard != shard {
				return m
			}
		default:
			return m
		}
	}
	return nil
}
