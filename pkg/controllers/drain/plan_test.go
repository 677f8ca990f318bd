package drain

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func shardWith(name string, used int64, annotations map[string]string) *corev1alpha1.Shard {
	return &corev1alpha1.Shard{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Status: corev1alpha1.ShardStatus{Used: corev1.ResourceList{
			corev1alpha1.ResourceWorkspaces: *resource.NewQuantity(used, resource.DecimalSI),
		}},
	}
}

func migrationOf(cluster string, phase migrationv1alpha1.LogicalClusterMigrationPhaseType) *migrationv1alpha1.LogicalClusterMigration {
	m := &migrationv1alpha1.LogicalClusterMigration{
		Spec:   migrationv1alpha1.LogicalClusterMigrationSpec{LogicalCluster: cluster, DestinationShard: "b"},
		Status: migrationv1alpha1.LogicalClusterMigrationStatus{Phase: phase},
	}
	if phase == migrationv1alpha1.LogicalClusterMigrationPhaseFailed {
		m.Status.Conditions = conditionsv1alpha1.Conditions{{Type: migrationv1alpha1.LCMigrationDataCopied, Status: corev1.ConditionFalse, Message: "copy mismatch"}}
	}
	return m
}

func residentsOf(names ...string) []resident {
	var out []resident
	for _, n := range names {
		out = append(out, resident{cluster: logicalcluster.Name(n)})
	}
	return out
}

func TestDrainPlansAtMostMaxMovesToTheShardsTheSchedulerPicks(t *testing.T) {
	cordoned := map[string]string{corev1alpha1.ShardUnschedulableAnnotationKey: "true"}
	shards := []*corev1alpha1.Shard{shardWith("a", 5, cordoned), shardWith("b", 3, nil), shardWith("c", 1, nil), shardWith("d", 0, cordoned)}
	moves, cond := plan("a", residentsOf("c1", "c2", "c3", "c4", "c5"), nil, shards, 3)
	got := []string{}
	for _, m := range moves {
		got = append(got, string(m.cluster)+"->"+m.destination)
	}
	// c is the least loaded: it takes two until it is level with b; the
	// cordoned d and the drained a take none.
	if want := "c1->c c2->c c3->b"; strings.Join(got, " ") != want {
		t.Errorf("moves %v, want %s", got, want)
	}
	if cond.Status != corev1.ConditionFalse || cond.Reason != corev1alpha1.ShardReasonDraining || !strings.Contains(cond.Message, "5 logical clusters left on the shard, 3 moving") {
		t.Errorf("condition %+v, want Draining with 5 left, 3 moving", cond)
	}
}

func TestDrainWaitsForRunningMovesAndRetriesFailedOnes(t *testing.T) {
	shards := []*corev1alpha1.Shard{shardWith("a", 3, nil), shardWith("b", 0, nil)}
	running := migrationOf("c1", migrationv1alpha1.LogicalClusterMigrationPhaseMigrating)
	failed := migrationOf("c2", migrationv1alpha1.LogicalClusterMigrationPhaseFailed)
	moves, _ := plan("a", residentsOf("c1", "c2", "c3"), []*migrationv1alpha1.LogicalClusterMigration{running, failed}, shards, 1)
	if len(moves) != 0 {
		t.Errorf("moves %v while the one slot is taken, want none", moves)
	}

	// The running move ended: c2's failed move is tried again first.
	moves, _ = plan("a", residentsOf("c2", "c3"), []*migrationv1alpha1.LogicalClusterMigration{failed}, shards, 1)
	if len(moves) != 1 || moves[0].cluster != "c2" || moves[0].attempt != 2 || migrationName("a", "c2", 2) != "drain-a-c2-2" {
		t.Errorf("moves %v, want c2's second try", moves)
	}

	// After its last try fails, c2 is reported and left alone.
	last := migrationOf("c2", migrationv1alpha1.LogicalClusterMigrationPhaseFailed)
	last.Labels = map[string]string{AttemptLabel: strconv.Itoa(maxAttempts)}
	moves, cond := plan("a", residentsOf("c2"), []*migrationv1alpha1.LogicalClusterMigration{failed, last}, shards, 1)
	if len(moves) != 0 || cond.Reason != corev1alpha1.ShardReasonDrainBlocked || !strings.Contains(cond.Message, "c2 (copy mismatch)") {
		t.Errorf("moves %v, condition %+v; want none, DrainBlocked naming c2's failure", moves, cond)
	}
}

func TestDrainIsBlockedWhenNoShardTakesAWorkspace(t *testing.T) {
	full := shardWith("b", 2, nil)
	full.Spec.ResourceLimits = &corev1alpha1.ShardResourceLimits{Hard: corev1.ResourceList{corev1alpha1.ResourceWorkspaces: *resource.NewQuantity(2, resource.DecimalSI)}}
	moves, cond := plan("a", residentsOf("c1"), nil, []*corev1alpha1.Shard{shardWith("a", 1, nil), full}, 4)
	if len(moves) != 0 || cond.Reason != corev1alpha1.ShardReasonDrainBlocked || !strings.Contains(cond.Message, `shard "b" is at its hard limit`) {
		t.Errorf("moves %v, condition %+v; want none, DrainBlocked naming b's hard limit", moves, cond)
	}
}

func TestDrainSkipsDeletingClustersAndEndsDrained(t *testing.T) {
	shards := []*corev1alpha1.Shard{shardWith("a", 1, nil), shardWith("b", 0, nil)}
	moves, cond := plan("a", []resident{{cluster: "c1", deleting: true}}, nil, shards, 4)
	if len(moves) != 0 || !strings.Contains(cond.Message, "1 being deleted") {
		t.Errorf("moves %v, condition %+v; want none, the deleting cluster counted", moves, cond)
	}
	if _, cond = plan("a", nil, nil, shards, 4); cond.Status != corev1.ConditionTrue || cond.Type != corev1alpha1.ShardDrained {
		t.Errorf("condition %+v, want Drained True", cond)
	}
}

func TestDrainCountsMovesUnderWayAgainstTheDestinationsHardLimit(t *testing.T) {
	full := shardWith("b", 8, nil)
	full.Spec.ResourceLimits = &corev1alpha1.ShardResourceLimits{Hard: corev1.ResourceList{corev1alpha1.ResourceWorkspaces: *resource.NewQuantity(10, resource.DecimalSI)}}
	shards := []*corev1alpha1.Shard{shardWith("a", 6, nil), full, shardWith("c", 20, nil)}
	// b reports 8 of 10; two moves onto it are under way, not reported yet.
	underWay := []*migrationv1alpha1.LogicalClusterMigration{
		migrationOf("c1", migrationv1alpha1.LogicalClusterMigrationPhaseMigrating),
		migrationOf("c2", migrationv1alpha1.LogicalClusterMigrationPhasePreparing),
	}
	moves, _ := plan("a", residentsOf("c1", "c2", "c3", "c4"), underWay, shards, 4)
	for _, m := range moves {
		if m.destination == "b" {
			t.Errorf("move %s planned onto b, which is at its hard limit with the moves under way", m.cluster)
		}
	}
	if len(moves) != 2 {
		t.Errorf("moves %v, want c3 and c4 onto c", moves)
	}
}

// A shard is not drained while a cluster that moved away waits for its
// clean-up there: removing the shard then would strand the move.
func TestDrainWaitsForTheCleanUpOfWhatMovedAway(t *testing.T) {
	shards := []*corev1alpha1.Shard{shardWith("a", 1, nil), shardWith("b", 0, nil)}
	moves, cond := plan("a", []resident{{cluster: "c1", leaving: true}}, nil, shards, 4)
	if len(moves) != 0 || cond.Status == corev1.ConditionTrue || !strings.Contains(cond.Message, "1 moving") {
		t.Errorf("moves %v, condition %+v; want none, not Drained, the leaving cluster counted as moving", moves, cond)
	}
}
