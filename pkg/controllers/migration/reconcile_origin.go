package migration

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Reasons of the conditions the origin sets.
const (
	// ReasonLogicalClusterDeleting: the cluster is being deleted.
	ReasonLogicalClusterDeleting = "LogicalClusterDeleting"
	// ReasonAlreadyMigrating is kcp's: another migration claimed the cluster.
	ReasonAlreadyMigrating = "LogicalClusterAlreadyMigrating"
	// ReasonAlreadyOnDestination: the cluster is on the destination already.
	ReasonAlreadyOnDestination = "AlreadyOnDestination"
)

// originReconciler is the origin shard's part of a move before the copy:
// it claims the logical cluster for the migration and hands over to the
// destination; on a failed or cancelled move it gives the cluster back.
type originReconciler struct {
	shardName string
	// getLogicalCluster returns the LogicalCluster of a cluster this
	// shard hosts, nil when it hosts none.
	getLogicalCluster func(cluster logicalcluster.Name) *corev1alpha1.LogicalCluster
	// setAnnotations sets annotations of the cluster's LogicalCluster in
	// one write; a value "" removes its key.
	setAnnotations func(ctx context.Context, cluster logicalcluster.Name, values map[string]string) error
	// setServedElsewhere marks the cluster's LogicalCluster served
	// elsewhere: the front-proxy switches to the destination.
	setServedElsewhere func(ctx context.Context, cluster logicalcluster.Name) error
	// hold holds the cluster's requests and ends its watches; the channel
	// closes once the writes admitted before are done. releaseHold lets
	// requests through again.
	hold        func(cluster logicalcluster.Name) <-chan struct{}
	releaseHold func(cluster logicalcluster.Name)
	// deleteAll removes the cluster's objects from this shard's etcd.
	deleteAll func(ctx context.Context, cluster logicalcluster.Name) error
}

// drainTimeout bounds the wait for the writes in flight when the hold
// begins; the next look waits again.
const drainTimeout = 10 * time.Second

// isOrigin tells whether this shard is the migration's origin: the one
// recorded, or, before one is, the shard that serves the cluster.
func (r *originReconciler) isOrigin(m *migrationv1alpha1.LogicalClusterMigration) bool {
	if m.Status.OriginShard != "" {
		return m.Status.OriginShard == r.shardName
	}
	lc := r.getLogicalCluster(logicalcluster.Name(m.Spec.LogicalCluster))
	return lc != nil && lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] == ""
}

// reconcile moves m through the origin's phases; m's status is changed in
// place and written by the caller.
func (r *originReconciler) reconcile(ctx context.Context, claim string, m *migrationv1alpha1.LogicalClusterMigration) error {
	cluster := logicalcluster.Name(m.Spec.LogicalCluster)
	switch m.Status.Phase {
	case "":
		lc := r.getLogicalCluster(cluster)
		if lc == nil {
			return nil
		}
		if deleting(lc) {
			fail(m, migrationv1alpha1.LCMigrationOriginReady, ReasonLogicalClusterDeleting,
				"logical cluster %s is being deleted and cannot be moved", cluster)
			return nil
		}
		if m.Spec.DestinationShard == r.shardName {
			fail(m, migrationv1alpha1.LCMigrationOriginReady, ReasonAlreadyOnDestination,
				"logical cluster %s is on shard %s already", cluster, r.shardName)
			return nil
		}
		// Recorded first: from now on the origin is known even when the
		// cluster is no longer found here.
		m.Status.OriginShard = r.shardName
		m.Status.Phase = migrationv1alpha1.LogicalClusterMigrationPhasePreparing
		conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{Type: migrationv1alpha1.LCMigrationOriginPreparing, Status: corev1.ConditionTrue})
		return nil

	case migrationv1alpha1.LogicalClusterMigrationPhasePreparing:
		lc := r.getLogicalCluster(cluster)
		if lc == nil {
			return fmt.Errorf("logical cluster %s is not on shard %s", cluster, r.shardName)
		}
		if deleting(lc) {
			fail(m, migrationv1alpha1.LCMigrationOriginReady, ReasonLogicalClusterDeleting,
				"logical cluster %s is being deleted and cannot be moved", cluster)
			return nil
		}
		if other := lc.Annotations[migrationv1alpha1.MigratingAnnotationKey]; other != "" && other != claim {
			fail(m, migrationv1alpha1.LCMigrationOriginReady, ReasonAlreadyMigrating,
				"logical cluster is already migrating with %q", other)
			return nil
		}
		if lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] != claim {
			if err := r.setAnnotations(ctx, cluster, map[string]string{migrationv1alpha1.MigratingAnnotationKey: claim}); err != nil {
				return fmt.Errorf("claim logical cluster %s: %w", cluster, err)
			}
		}
		conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{Type: migrationv1alpha1.LCMigrationOriginReady, Status: corev1.ConditionTrue})
		m.Status.Phase = migrationv1alpha1.LogicalClusterMigrationPhaseMigrating
		return nil

	case migrationv1alpha1.LogicalClusterMigrationPhaseMigrating:
		if !m.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationStarted) {
			// Deleting the workspace before the cut-over aborts the move,
			// as in kcp; from the cut-over on the deletion waits for its
			// end (see migration.Pending).
			if lc := r.getLogicalCluster(cluster); lc == nil || deleting(lc) {
				abort(m, cluster)
			}
			return nil
		}
		// The bulk copy is done: hold the writes for the final one, and
		// mark the hold in storage before the destination relies on it: a
		// restarted shard holds from what is stored.
		drained := r.hold(cluster)
		if lc := r.getLogicalCluster(cluster); lc == nil || lc.Annotations[migrationv1alpha1.WritesHeldAnnotationKey] != claim {
			if err := r.setAnnotations(ctx, cluster, map[string]string{migrationv1alpha1.WritesHeldAnnotationKey: claim}); err != nil {
				return fmt.Errorf("mark the writes of logical cluster %s held: %w", cluster, err)
			}
		}
		select {
		case <-drained:
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(drainTimeout):
			return fmt.Errorf("writes to logical cluster %s are still in flight", cluster)
		}
		conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{Type: migrationv1alpha1.LCMigrationWritesHeld, Status: corev1.ConditionTrue})
		return nil

	case migrationv1alpha1.LogicalClusterMigrationPhaseOriginCleanup:
		// The destination serves a verified copy: switch, then clean.
		r.hold(cluster)
		if lc := r.getLogicalCluster(cluster); lc != nil && lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] == "" {
			if err := r.setServedElsewhere(ctx, cluster); err != nil {
				return fmt.Errorf("hand logical cluster %s over: %w", cluster, err)
			}
		}
		// Also ends the watches that started in between: they would see
		// the clean-up's deletions.
		r.hold(cluster)
		if err := r.deleteAll(ctx, cluster); err != nil {
			conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{
				Type: migrationv1alpha1.LCMigrationOriginCleaned, Status: corev1.ConditionFalse, Severity: conditionsv1alpha1.ConditionSeverityError,
				Reason: "CleanupFailed", Message: err.Error(),
			})
			return err
		}
		conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{Type: migrationv1alpha1.LCMigrationOriginCleaned, Status: corev1.ConditionTrue})
		m.Status.Phase = migrationv1alpha1.LogicalClusterMigrationPhaseDestinationFinalize
		return nil

	case migrationv1alpha1.LogicalClusterMigrationPhaseDestinationFinalize, migrationv1alpha1.LogicalClusterMigrationPhaseCompleted:
		// Also after a restart: the cluster is served elsewhere now.
		r.hold(cluster)
		return nil

	case migrationv1alpha1.LogicalClusterMigrationPhaseFailed:
		// A failed move leaves the origin serving as before.
		return r.release(ctx, claim, cluster)
	}
	return nil
}

// release removes the claim of a failed or cancelled migration from the
// cluster's LogicalCluster, if this shard still serves it.
func (r *originReconciler) release(ctx context.Context, claim string, cluster logicalcluster.Name) error {
	lc := r.getLogicalCluster(cluster)
	if lc == nil || lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] != claim ||
		lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] != "" {
		return nil
	}
	// Claim and mark go in one write: a mark without its claim would hold
	// the cluster for good.
	if err := r.setAnnotations(ctx, cluster, map[string]string{migrationv1alpha1.MigratingAnnotationKey: "", migrationv1alpha1.WritesHeldAnnotationKey: ""}); err != nil {
		return fmt.Errorf("release logical cluster %s: %w", cluster, err)
	}
	r.releaseHold(cluster)
	return nil
}

// deleting tells whether a logical cluster is being deleted.
func deleting(lc *corev1alpha1.LogicalCluster) bool {
	return lc.DeletionTimestamp != nil || lc.Status.Phase == corev1alpha1.LogicalClusterPhaseTerminating ||
		lc.Status.Phase == corev1alpha1.LogicalClusterPhaseDeleting
}

// abort fails a migration whose cluster is being deleted before its
// cut-over, with kcp's Aborted condition.
func abort(m *migrationv1alpha1.LogicalClusterMigration, cluster logicalcluster.Name) {
	conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{
		Type: migrationv1alpha1.LCMigrationAborted, Status: corev1.ConditionTrue, Severity: conditionsv1alpha1.ConditionSeverityInfo,
		Reason: ReasonLogicalClusterDeleting, Message: fmt.Sprintf("logical cluster %s is being deleted: the move was aborted", cluster),
	})
	m.Status.Phase = migrationv1alpha1.LogicalClusterMigrationPhaseFailed
}

// fail ends a migration: condition t False with reason and message.
func fail(m *migrationv1alpha1.LogicalClusterMigration, t conditionsv1alpha1.ConditionType, reason, format string, args ...any) {
	conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{
		Type: t, Status: corev1.ConditionFalse, Severity: conditionsv1alpha1.ConditionSeverityError,
		Reason: reason, Message: fmt.Sprintf(format, args...),
	})
	m.Status.Phase = migrationv1alpha1.LogicalClusterMigrationPhaseFailed
}
