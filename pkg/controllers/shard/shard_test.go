package shard

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
)

func limits(soft, hard string) *corev1alpha1.ShardResourceLimits {
	l := &corev1alpha1.ShardResourceLimits{}
	if soft != "" {
		l.Soft = corev1.ResourceList{corev1alpha1.ResourceWorkspaces: resource.MustParse(soft)}
	}
	if hard != "" {
		l.Hard = corev1.ResourceList{corev1alpha1.ResourceWorkspaces: resource.MustParse(hard)}
	}
	return l
}

// TestReportStatusAcknowledgesCordonAndLimits mirrors kcp's shard
// controller tests: Schedulable follows the cordon annotation and
// ResourceLimitsApplied spells out the limits in force.
func TestReportStatusAcknowledgesCordonAndLimits(t *testing.T) {
	tests := []struct {
		name            string
		annotations     map[string]string
		limits          *corev1alpha1.ShardResourceLimits
		wantSchedulable corev1.ConditionStatus
		wantApplied     corev1.ConditionStatus
		wantMessage     string
	}{
		{name: "no limits", wantSchedulable: corev1.ConditionTrue, wantApplied: corev1.ConditionTrue, wantMessage: "no limits configured"},
		{name: "cordoned", annotations: map[string]string{corev1alpha1.ShardUnschedulableAnnotationKey: "true"}, wantSchedulable: corev1.ConditionFalse, wantApplied: corev1.ConditionTrue, wantMessage: "no limits configured"},
		{name: "both limits", limits: limits("450", "500"), wantSchedulable: corev1.ConditionTrue, wantApplied: corev1.ConditionTrue, wantMessage: "soft/hard: workspaces=450/500"},
		{name: "hard only", limits: limits("", "7"), wantSchedulable: corev1.ConditionTrue, wantApplied: corev1.ConditionTrue, wantMessage: "soft/hard: workspaces=-/7"},
		{name: "soft at hard", limits: limits("20", "20"), wantSchedulable: corev1.ConditionTrue, wantApplied: corev1.ConditionFalse,
			wantMessage: "soft/hard: workspaces=20/20; soft workspaces=20 is not below hard workspaces=20, so the shard is never deprioritized before it refuses new workspaces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shard := &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "root", Annotations: tt.annotations}}
			shard.Spec.ResourceLimits = tt.limits
			now := metav1.Now()
			reportStatus(shard, 12, now)
			if got := shard.UsedWorkspaces(); got != 12 {
				t.Errorf("used = %d, want 12", got)
			}
			if !shard.Status.LastHeartbeatTime.Equal(&now) || !shard.Status.Conditions.IsTrue(corev1alpha1.ShardReady) {
				t.Errorf("heartbeat %v, Ready %v; want now and True", shard.Status.LastHeartbeatTime, shard.Status.Conditions.Get(corev1alpha1.ShardReady))
			}
			sched := shard.Status.Conditions.Get(corev1alpha1.ShardSchedulable)
			if sched == nil || sched.Status != tt.wantSchedulable || (tt.wantSchedulable == corev1.ConditionFalse && sched.Reason != corev1alpha1.ShardReasonCordoned) {
				t.Errorf("Schedulable = %+v, want %s", sched, tt.wantSchedulable)
			}
			applied := shard.Status.Conditions.Get(corev1alpha1.ShardResourceLimitsApplied)
			if applied == nil || applied.Status != tt.wantApplied || applied.Message != tt.wantMessage {
				t.Errorf("ResourceLimitsApplied = %+v, want %s %q", applied, tt.wantApplied, tt.wantMessage)
			}
		})
	}
}

func TestReporterWritesOnlyHeartbeatsWhenNothingElseChanged(t *testing.T) {
	stored := &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "alpha"}}
	writes, count := 0, 3
	clock := time.Now()
	r := &Reporter{
		name: "alpha", count: func() int { return count },
		get: func(context.Context) (*corev1alpha1.Shard, error) { return stored.DeepCopy(), nil },
		updateStatus: func(_ context.Context, s *corev1alpha1.Shard) error {
			writes++
			stored = s
			return nil
		},
		now: func() time.Time { clock = clock.Add(time.Second); return clock },
	}
	ctx := context.Background()
	for _, step := range []struct {
		heartbeat bool
		count     int
		want      int
	}{
		{heartbeat: false, count: 3, want: 1}, // first report
		{heartbeat: false, count: 3, want: 1}, // nothing changed
		{heartbeat: false, count: 4, want: 2}, // a new logical cluster
		{heartbeat: true, count: 4, want: 3},  // heartbeats always write
	} {
		count = step.count
		if err := r.report(ctx, step.heartbeat); err != nil {
			t.Fatal(err)
		}
		if writes != step.want {
			t.Fatalf("after report(heartbeat=%v, count=%d): %d writes, want %d", step.heartbeat, step.count, writes, step.want)
		}
	}
	if stored.UsedWorkspaces() != 4 {
		t.Errorf("stored used = %d, want 4", stored.UsedWorkspaces())
	}
}

func TestLivenessMarksShardsWithoutRecentHeartbeatNotReady(t *testing.T) {
	now := time.Now()
	beat := func(name string, ago time.Duration) *corev1alpha1.Shard {
		s := &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
		reportStatus(s, 1, metav1.NewTime(now.Add(-ago)))
		return s
	}
	fresh, old := beat("fresh", time.Second), beat("old", time.Minute)
	never := &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "never", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))}}
	justCreated := &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "new", CreationTimestamp: metav1.NewTime(now)}}
	var written []*corev1alpha1.Shard
	l := &Liveness{
		timeout: 10 * time.Second,
		list: func() ([]*corev1alpha1.Shard, error) {
			return []*corev1alpha1.Shard{fresh, old, never, justCreated}, nil
		},
		updateStatus: func(_ context.Context, s *corev1alpha1.Shard) error {
			written = append(written, s)
			return nil
		},
		now: func() time.Time { return now },
	}
	if err := l.check(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A shard that never reported may lack the right to: it is left alone.
	if len(written) != 1 || written[0].Name != "old" {
		t.Fatalf("marked %v, want only old", written)
	}
	ready := written[0].Status.Conditions.Get(corev1alpha1.ShardReady)
	if ready.Status != corev1.ConditionFalse || ready.Reason != corev1alpha1.ShardReasonHeartbeatMissed || !strings.Contains(ready.Message, "has not reported for more than 10s") {
		t.Errorf("Ready = %+v", ready)
	}
	if !old.Status.Conditions.IsTrue(corev1alpha1.ShardReady) {
		t.Errorf("the informer's copy was changed")
	}
	// Marked once: a shard already not Ready is not written again.
	l.list = func() ([]*corev1alpha1.Shard, error) { return written, nil }
	l.updateStatus = func(context.Context, *corev1alpha1.Shard) error { return errors.New("unexpected write") }
	if err := l.check(context.Background()); err != nil {
		t.Errorf("check of shards already not Ready: %v", err)
	}
}
