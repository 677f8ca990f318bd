package workspace

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
)

// limitedShard is a Shard that reported used workspaces, with limits (0:
// none).
func limitedShard(name string, used, soft, hard int64) *corev1alpha1.Shard {
	s := &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: name}}
	s.Status.Used = corev1.ResourceList{corev1alpha1.ResourceWorkspaces: *resource.NewQuantity(used, resource.DecimalSI)}
	s.Spec.ResourceLimits = &corev1alpha1.ShardResourceLimits{Soft: corev1.ResourceList{}, Hard: corev1.ResourceList{}}
	if soft != 0 {
		s.Spec.ResourceLimits.Soft[corev1alpha1.ResourceWorkspaces] = *resource.NewQuantity(soft, resource.DecimalSI)
	}
	if hard != 0 {
		s.Spec.ResourceLimits.Hard[corev1alpha1.ResourceWorkspaces] = *resource.NewQuantity(hard, resource.DecimalSI)
	}
	now := metav1.Now()
	s.Status.LastHeartbeatTime = &now
	return s
}

func TestShardFitRefusesCordonedUnreadyAndFullShards(t *testing.T) {
	cordoned := limitedShard("a", 0, 0, 0)
	cordoned.Annotations = map[string]string{corev1alpha1.ShardUnschedulableAnnotationKey: ""}
	unready := limitedShard("b", 0, 0, 0)
	unready.Status.Conditions = conditionsv1alpha1.Conditions{{Type: corev1alpha1.ShardReady, Status: corev1.ConditionFalse, Reason: corev1alpha1.ShardReasonHeartbeatMissed, Message: "no heartbeat for 10s"}}
	ready := limitedShard("c", 0, 0, 0)
	ready.Status.Conditions = conditionsv1alpha1.Conditions{{Type: corev1alpha1.ShardReady, Status: corev1.ConditionTrue}}
	tests := []struct {
		name          string
		shard         *corev1alpha1.Shard
		wantReason    string
		wantUnderSoft bool
	}{
		{"no limits: unlimited", limitedShard("s", 1000, 0, 0), "", true},
		{"never reported: takes workspaces", &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, "", true},
		{"cordoned, whatever the annotation's value", cordoned, "cordoned (experimental.core.kcp.io/unschedulable)", false},
		{"not ready", unready, "not ready: no heartbeat for 10s", false},
		{"ready", ready, "", true},
		{"under both limits", limitedShard("s", 4, 5, 10), "", true},
		{"at the soft limit", limitedShard("s", 5, 5, 10), "", false},
		{"just under the hard limit", limitedShard("s", 9, 5, 10), "", false},
		{"at the hard limit", limitedShard("s", 10, 5, 10), "at its hard limit of 10 workspaces", false},
		{"over the hard limit", limitedShard("s", 12, 0, 10), "at its hard limit of 10 workspaces", false},
		// kcp: if hard < soft, the hard limit wins.
		{"hard below soft", limitedShard("s", 3, 10, 3), "at its hard limit of 3 workspaces", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, underSoft := shardFit(tt.shard, (*corev1alpha1.Shard).UsedWorkspaces)
			if reason != tt.wantReason || underSoft != tt.wantUnderSoft {
				t.Errorf("shardFit = %q, %v; want %q, %v", reason, underSoft, tt.wantReason, tt.wantUnderSoft)
			}
		})
	}
}

func TestRankShardsPrefersShardsUnderTheirSoftLimit(t *testing.T) {
	used := func(s *corev1alpha1.Shard) int64 { return s.UsedWorkspaces() }
	names := func(shards []*corev1alpha1.Shard) []string {
		var out []string
		for _, s := range shards {
			out = append(out, s.Name)
		}
		return out
	}
	// b is emptier but over its soft limit: a and c are preferred.
	fitting, refused := rankShards([]*corev1alpha1.Shard{limitedShard("a", 50, 100, 0), limitedShard("b", 3, 2, 10), limitedShard("c", 70, 0, 0), limitedShard("d", 10, 0, 10)}, used)
	if got := fmt.Sprint(names(fitting)); got != "[a c]" {
		t.Errorf("fitting = %s, want [a c]", got)
	}
	if len(refused) != 1 || refused["d"] == "" {
		t.Errorf("refused = %v, want only d", refused)
	}
	// Every fitting shard over its soft limit: they all take workspaces.
	fitting, _ = rankShards([]*corev1alpha1.Shard{limitedShard("a", 5, 2, 10), limitedShard("b", 3, 2, 10)}, used)
	if got := fmt.Sprint(names(fitting)); got != "[a b]" {
		t.Errorf("all over soft: fitting = %s, want [a b]", got)
	}
}

func TestPickShardSaysWhyNoShardTakesTheWorkspace(t *testing.T) {
	cordoned := limitedShard("alpha", 0, 0, 0)
	cordoned.Annotations = map[string]string{corev1alpha1.ShardUnschedulableAnnotationKey: "true"}
	c := &Controller{shards: staticShards{cordoned, limitedShard("beta", 3, 0, 3)}, load: newShardLoad()}
	_, err := c.pickShard("root|w", &tenancyv1alpha1.Workspace{})
	var none noShardError
	if !errors.As(err, &none) {
		t.Fatalf("got %v, want a noShardError", err)
	}
	want := `No available shards to schedule the workspace: shard "alpha" is cordoned (experimental.core.kcp.io/unschedulable); shard "beta" is at its hard limit of 3 workspaces`
	if err.Error() != want {
		t.Errorf("message\n got %s\nwant %s", err, want)
	}
}

// TestPlacementsCountTowardsTheHardLimitUntilTheShardReportsThem: a shard
// reports its count only every heartbeat, so workspaces placed one after
// the other must not all see the same stale count and overshoot the hard
// limit.
func TestPlacementsCountTowardsTheHardLimitUntilTheShardReportsThem(t *testing.T) {
	now := time.Now()
	shard := limitedShard("beta", 1, 0, 3)
	shard.Status.LastHeartbeatTime = &metav1.Time{Time: now}
	c := &Controller{shards: staticShards{shard}, load: newShardLoad()}
	c.load.now = func() time.Time { return now.Add(time.Second) }
	for i := range 2 {
		if got, err := c.pickShard(fmt.Sprintf("root|w%d", i), &tenancyv1alpha1.Workspace{}); err != nil || got == nil {
			t.Fatalf("pick %d: %v, %v; want beta (1 reported + %d placed < 3)", i, got, err, i)
		}
	}
	if _, err := c.pickShard("root|w2", &tenancyv1alpha1.Workspace{}); err == nil {
		t.Fatalf("third pick: want none (1 reported + 2 placed = hard limit 3)")
	}
	// A failed placement frees its place.
	c.load.forget("root|w1")
	if got, err := c.pickShard("root|w2", &tenancyv1alpha1.Workspace{}); err != nil || got == nil {
		t.Fatalf("after forgetting w1: %v, %v; want beta", got, err)
	}
	// A report well after the placements counts them itself.
	later := metav1.NewTime(now.Add(time.Second + reportSlack + time.Millisecond))
	shard.Status.LastHeartbeatTime = &later
	shard.Status.Used[corev1alpha1.ResourceWorkspaces] = resource.MustParse("2")
	if got := c.load.used(shard); got != 2 {
		t.Errorf("used after the report = %d, want the reported 2", got)
	}
}
