package drain

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func drainMigration(cluster logicalcluster.Name, shard, name string) *migrationv1alpha1.LogicalClusterMigration {
	return &migrationv1alpha1.LogicalClusterMigration{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Annotations: map[string]string{logicalcluster.AnnotationKey: string(cluster)},
		Labels:      map[string]string{ShardLabel: shard},
	}}
}

func TestDrainIndexHoldsRootsMigrationsByTheirDrain(t *testing.T) {
	for name, tc := range map[string]struct {
		obj  interface{}
		want []string
	}{
		"a drain's migration in root":    {obj: drainMigration(logicalcluster.Root, "shard-1", "m"), want: []string{"shard-1"}},
		"its deletion, state unknown":    {obj: cache.DeletedFinalStateUnknown{Obj: drainMigration(logicalcluster.Root, "shard-1", "m")}, want: []string{"shard-1"}},
		"a migration in another cluster": {obj: drainMigration("2x9kq7z1", "shard-1", "m")},
		"a migration no drain created":   {obj: drainMigration(logicalcluster.Root, "", "m")},
		"not a migration":                {obj: &corev1alpha1.Shard{}},
	} {
		got, err := drainIndex(tc.obj)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: drainIndex = %v, %v; want %v", name, got, err, tc.want)
		}
	}
}

// The informer reads replicas that come after the create: a reconcile in
// between must not start more than max-moves.
func TestDrainCountsTheMigrationsItCreatedBeforeTheInformerShowsThem(t *testing.T) {
	shards := []*corev1alpha1.Shard{shardWith("a", 4, map[string]string{corev1alpha1.ShardUnschedulableAnnotationKey: "true"}), shardWith("b", 0, nil)}
	residents := residentsOf("c1", "c2", "c3", "c4")
	now := time.Now()
	var c created

	moves, _ := plan("a", residents, c.merge(nil, now), shards, 2)
	if len(moves) != 2 {
		t.Fatalf("first plan: %d moves, want 2", len(moves))
	}
	for _, mv := range moves {
		m := drainMigration(logicalcluster.Root, "a", migrationName("a", mv.cluster, mv.attempt))
		m.Spec = migrationv1alpha1.LogicalClusterMigrationSpec{LogicalCluster: string(mv.cluster), DestinationShard: mv.destination}
		c.add(m, now)
	}
	// The informer shows none of them yet.
	if moves, cond := plan("a", residents, c.merge(nil, now), shards, 2); len(moves) != 0 {
		t.Fatalf("a second plan before the informer caught up started %d more moves (%s)", len(moves), cond.Message)
	}
	// Once it shows one, the other still counts; the one shown is
	// forgotten.
	shown := drainMigration(logicalcluster.Root, "a", migrationName("a", "c1", 1))
	shown.Spec = migrationv1alpha1.LogicalClusterMigrationSpec{LogicalCluster: "c1", DestinationShard: "b"}
	mine := c.merge([]*migrationv1alpha1.LogicalClusterMigration{shown}, now)
	if len(mine) != 2 {
		t.Fatalf("merged %d migrations, want the one shown and the one not yet", len(mine))
	}
	if len(c.byName) != 1 {
		t.Errorf("remembers %d created migrations, want the one not shown", len(c.byName))
	}
	// One created and never shown (deleted at once) is forgotten in time.
	if mine := c.merge(nil, now.Add(createdTTL+time.Second)); len(mine) != 0 || len(c.byName) != 0 {
		t.Errorf("after %v still counts %d created migrations", createdTTL, len(mine))
	}
}

func TestDrainWritesItsConditionOnlyWhenItChanges(t *testing.T) {
	cond := conditionsv1alpha1.Condition{Type: corev1alpha1.ShardDrained, Status: corev1.ConditionFalse, Reason: corev1alpha1.ShardReasonDraining, Message: "3 logical clusters left on the shard, 2 moving"}
	shard := shardWith("a", 3, nil)
	if !withDrained(shard, &cond) {
		t.Fatal("setting the condition on a shard without it changed nothing")
	}
	if withDrained(shard, &cond) {
		t.Error("setting the same condition again changed the shard")
	}
	next := cond
	next.Message = "2 logical clusters left on the shard, 2 moving"
	if !withDrained(shard, &next) {
		t.Error("a new message changed nothing")
	}
	if !withDrained(shard, nil) || shard.Status.Conditions.Get(corev1alpha1.ShardDrained) != nil {
		t.Error("removing the condition left it")
	}
	if withDrained(shard, nil) {
		t.Error("removing an absent condition changed the shard")
	}
}
