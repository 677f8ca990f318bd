package migration

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
)

func TestPendingNamesTheMoveADeletionWaitsFor(t *testing.T) {
	m := func(cluster string, phase migrationv1alpha1.LogicalClusterMigrationPhaseType) *migrationv1alpha1.LogicalClusterMigration {
		return &migrationv1alpha1.LogicalClusterMigration{
			ObjectMeta: metav1.ObjectMeta{Name: "move-" + cluster + "-" + string(phase)},
			Spec:       migrationv1alpha1.LogicalClusterMigrationSpec{LogicalCluster: cluster, DestinationShard: "b"},
			Status:     migrationv1alpha1.LogicalClusterMigrationStatus{Phase: phase, OriginShard: "a"},
		}
	}
	started := func(m *migrationv1alpha1.LogicalClusterMigration) *migrationv1alpha1.LogicalClusterMigration {
		m.Status.Conditions = conditionsv1alpha1.Conditions{{Type: migrationv1alpha1.LCMigrationStarted, Status: corev1.ConditionTrue}}
		return m
	}
	for _, tc := range []struct {
		name    string
		ms      []*migrationv1alpha1.LogicalClusterMigration
		shard   string
		present bool
		want    bool
	}{
		{name: "none", present: true},
		{name: "another cluster's", ms: []*migrationv1alpha1.LogicalClusterMigration{m("other", migrationv1alpha1.LogicalClusterMigrationPhaseMigrating)}, shard: "a", present: true},
		{name: "not started", ms: []*migrationv1alpha1.LogicalClusterMigration{m("abc", "")}, shard: "a", present: true},
		{name: "preparing", ms: []*migrationv1alpha1.LogicalClusterMigration{m("abc", migrationv1alpha1.LogicalClusterMigrationPhasePreparing)}, shard: "a", present: true},
		{name: "bulk copy", ms: []*migrationv1alpha1.LogicalClusterMigration{m("abc", migrationv1alpha1.LogicalClusterMigrationPhaseMigrating)}, shard: "a", present: true},
		{name: "cut-over", ms: []*migrationv1alpha1.LogicalClusterMigration{started(m("abc", migrationv1alpha1.LogicalClusterMigrationPhaseMigrating))}, shard: "a", present: true, want: true},
		{name: "finalizing", ms: []*migrationv1alpha1.LogicalClusterMigration{m("abc", migrationv1alpha1.LogicalClusterMigrationPhaseDestinationFinalize)}, shard: "a", want: true},
		{name: "failed", ms: []*migrationv1alpha1.LogicalClusterMigration{m("abc", migrationv1alpha1.LogicalClusterMigrationPhaseFailed)}, shard: "a", present: true},
		{name: "completed, workspace repointed", ms: []*migrationv1alpha1.LogicalClusterMigration{m("abc", migrationv1alpha1.LogicalClusterMigrationPhaseCompleted)}, shard: "b", present: true},
		{name: "completed, workspace names the cleaned origin", ms: []*migrationv1alpha1.LogicalClusterMigration{m("abc", migrationv1alpha1.LogicalClusterMigrationPhaseCompleted)}, shard: "a", want: true},
		{name: "completed, moved back since", ms: []*migrationv1alpha1.LogicalClusterMigration{m("abc", migrationv1alpha1.LogicalClusterMigrationPhaseCompleted)}, shard: "a", present: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Pending(tc.ms, "abc", tc.shard, tc.present); (got != nil) != tc.want {
				t.Errorf("Pending = %v, want a migration: %v", got, tc.want)
			}
		})
	}
}
