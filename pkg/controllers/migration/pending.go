package migration

import (
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Pending returns the migration among ms that is moving cluster, nil when
// none: one that started (the origin recorded itself) and is neither
// Completed nor Failed, or a Completed one whose origin has cleaned the
// cluster while its Workspace still names that origin (the parent's shard
// has yet to point it at the destination). shard is the shard the
// Workspace names, present whether that shard still holds the cluster.
// A migration that has not started is no move yet: the origin fails it
// once the cluster is being deleted.
func Pending(ms []*migrationv1alpha1.LogicalClusterMigration, cluster logicalcluster.Name, shard string, present bool) *migrationv1alpha1.LogicalClusterMigration {
	for _, m := range ms {
		if logicalcluster.Name(m.Spec.LogicalCluster) != cluster {
			continue
		}
		switch m.Status.Phase {
		case "", migrationv1alpha1.LogicalClusterMigrationPhaseFailed:
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
