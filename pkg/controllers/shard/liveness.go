package shard

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/shardlookup"
)

// Liveness runs on the root shard: it marks a Shard whose last heartbeat is
// older than the timeout Ready=False, reason HeartbeatMissed, so that no
// new workspace goes there. The shard's next report makes it Ready again.
type Liveness struct {
	timeout      time.Duration
	list         func() ([]*corev1alpha1.Shard, error)
	updateStatus func(ctx context.Context, shard *corev1alpha1.Shard) error
	now          func() time.Time
}

// LivenessConfig holds the Liveness controller's dependencies.
type LivenessConfig struct {
	// Timeout is how old a heartbeat may grow.
	Timeout time.Duration
	// Shards are root's Shards.
	Shards shardlookup.Source
	// Root writes into the root logical cluster.
	Root *kcpclient.Client
}

// NewLiveness returns the controller.
func NewLiveness(cfg LivenessConfig) *Liveness {
	return &Liveness{
		timeout: cfg.Timeout,
		list:    cfg.Shards.List,
		updateStatus: func(ctx context.Context, shard *corev1alpha1.Shard) error {
			shard.APIVersion, shard.Kind = corev1alpha1.SchemeGroupVersion.String(), "Shard"
			return cfg.Root.Update(ctx, logicalcluster.Root, kcpclient.Shards, shard.Name, shard, &corev1alpha1.Shard{}, "status")
		},
		now: time.Now,
	}
}

// Run checks the heartbeats several times per timeout until ctx is done;
// workers is ignored.
func (l *Liveness) Run(ctx context.Context, _ int) {
	ticker := time.NewTicker(max(l.timeout/4, 100*time.Millisecond))
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if err := l.check(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).Error(err, "Checking the shards' heartbeats failed")
		}
	}
}

// check marks the shards with a stale heartbeat not Ready.
func (l *Liveness) check(ctx context.Context) error {
	shards, err := l.list()
	if err != nil {
		return err
	}
	now := l.now()
	for _, s := range shards {
		if !stale(s, now, l.timeout) {
			continue
		}
		shard := s.DeepCopy()
		markUnready(shard, now, l.timeout)
		klog.FromContext(ctx).Info("Shard missed its heartbeats, marking it not Ready", "shard", shard.Name, "lastHeartbeatTime", shard.Status.LastHeartbeatTime)
		// A conflict is a report that just came in, or is retried next time.
		if err := l.updateStatus(ctx, shard); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("mark shard %s not ready: %w", shard.Name, err)
		}
	}
	return nil
}

// stale tells whether a shard not yet marked unready has a last heartbeat
// older than timeout at now. A shard that never reported is left alone: its
// credentials for root may not write the status (kcp-admin's do not), and
// it then schedules as before heartbeats existed.
func stale(s *corev1alpha1.Shard, now time.Time, timeout time.Duration) bool {
	return s.Status.LastHeartbeatTime != nil && now.Sub(s.Status.LastHeartbeatTime.Time) > timeout &&
		!s.Status.Conditions.IsFalse(corev1alpha1.ShardReady)
}

// markUnready sets Ready=False, reason HeartbeatMissed, on a stale shard.
func markUnready(s *corev1alpha1.Shard, now time.Time, timeout time.Duration) {
	msg := fmt.Sprintf("the shard has not reported for more than %s", timeout)
	if s.Status.LastHeartbeatTime != nil {
		msg += fmt.Sprintf(" (last heartbeat at %s)", s.Status.LastHeartbeatTime.UTC().Format(time.RFC3339))
	}
	conditionsv1alpha1.Set(s, conditionsv1alpha1.Condition{
		Type: corev1alpha1.ShardReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now),
		Severity: conditionsv1alpha1.ConditionSeverityError, Reason: corev1alpha1.ShardReasonHeartbeatMissed, Message: msg,
	})
}
