package logicalcluster

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	conditionsv1alpha1 "github.com/kplane-dev/kplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/kplane-dev/kplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kplane-dev/kplane/pkg/apis/tenancy/v1alpha1"
	"github.com/kplane-dev/kplane/pkg/logicalcluster"
	"github.com/kplane-dev/kplane/pkg/registry/content"
)

// deletionReconciler waits while a cluster being deleted is Terminating
// (its status lists terminators), then deletes all its content (RBAC
// last) and releases its LogicalCluster. While finalizers hold content,
// the LogicalCluster carries WorkspaceContentDeleted=False naming what
// remains; its Workspace mirrors it.
type deletionReconciler struct {
	// deleteContent deletes everything in a cluster but its LogicalCluster,
	// reading at least at resourceVersion, and reports what remains.
	deleteContent func(ctx context.Context, cluster logicalcluster.Name, resourceVersion string) (content.Remaining, error)
	// updateStatus writes lc's status and returns the stored object.
	updateStatus func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) (*corev1alpha1.LogicalCluster, error)
	// update writes lc (its finalizers).
	update func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error
	// released tells whether this controller has let the cluster go already;
	// release records that it did.
	released func(cluster logicalcluster.Name) bool
	release  func(cluster logicalcluster.Name)
}

func (r *deletionReconciler) reconcile(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
	if r.released(cluster) || !slices.Contains(lc.Finalizers, corev1alpha1.LogicalClusterDeletionFinalizer) {
		return nil
	}
	// A cluster deleted before it left Scheduling still owes its
	// terminators their turn.
	if scheduling(lc) && startTerminators(lc) {
		lc.Status.Phase = corev1alpha1.LogicalClusterPhaseTerminating
		_, err := r.updateStatus(ctx, cluster, lc)
		return err
	}
	if len(lc.Status.Terminators) > 0 {
		// The terminators' status writes bring the next event.
		if lc.Status.Phase == corev1alpha1.LogicalClusterPhaseTerminating {
			return nil
		}
		lc.Status.Phase = corev1alpha1.LogicalClusterPhaseTerminating
		_, err := r.updateStatus(ctx, cluster, lc)
		return err
	}
	if markTerminators(lc) {
		return r.update(ctx, cluster, lc)
	}
	if lc.Status.Phase != corev1alpha1.LogicalClusterPhaseDeleting {
		lc.Status.Phase = corev1alpha1.LogicalClusterPhaseDeleting
		updated, err := r.updateStatus(ctx, cluster, lc)
		if err != nil {
			return err
		}
		lc = updated
	}
	start := time.Now()
	remaining, err := r.deleteContent(ctx, cluster, lc.ResourceVersion)
	klog.FromContext(ctx).V(4).Info("Deleted logical cluster content", "cluster", cluster, "remaining", remaining.String(), "duration", time.Since(start))
	if err != nil {
		return err
	}
	if !remaining.Empty() {
		old := lc.Status.DeepCopy()
		conditionsv1alpha1.Set(lc, contentRemainsCondition(remaining))
		if !apiequality.Semantic.DeepEqual(*old, lc.Status) {
			if _, err := r.updateStatus(ctx, cluster, lc); err != nil {
				return err
			}
		}
		// Finalizers hold objects; their removal brings events, this is the
		// fallback.
		return requeueSoon
	}
	lc.Finalizers = slices.DeleteFunc(lc.Finalizers, func(f string) bool { return f == corev1alpha1.LogicalClusterDeletionFinalizer })
	err = r.update(ctx, cluster, lc)
	if err == nil || apierrors.IsNotFound(err) {
		r.release(cluster)
		return nil
	}
	return err
}

// contentRemainsCondition says what finalizers still hold.
func contentRemainsCondition(remaining content.Remaining) conditionsv1alpha1.Condition {
	return conditionsv1alpha1.Condition{
		Type:     tenancyv1alpha1.WorkspaceContentDeleted,
		Status:   corev1.ConditionFalse,
		Severity: conditionsv1alpha1.ConditionSeverityInfo,
		Reason:   tenancyv1alpha1.WorkspaceContentDeletedSomeResourcesRemain,
		Message:  remaining.String(),
	}
}
