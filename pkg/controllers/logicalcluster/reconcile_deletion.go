package logicalcluster

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/registry/content"
)

// deletionReconciler waits while a cluster being deleted is Terminating
// (its status lists terminators), then deletes all its content (RBAC
// last) and releases its LogicalCluster in the pass that finds it empty.
// Content that finalizers hold for longer than reportAfter is reported:
// the LogicalCluster turns Deleting with WorkspaceContentDeleted=False
// naming what remains, and its Workspace mirrors it. Content released
// sooner (an APIBinding of exported resources, whose controller removes
// its finalizer once their objects are gone; a default binding the content
// deleter lets go itself, in the same pass) costs no status write: the
// cluster goes from its phase to gone.
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
	// now is the clock; held is when each cluster was first found with
	// content that finalizers hold.
	now  func() time.Time
	held sync.Map
}

// reportAfter is how long content may be held before the LogicalCluster
// says so.
const reportAfter = time.Second

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
	// The informer's copy is at least at the deletion's resource version.
	start := time.Now()
	remaining, err := r.deleteContent(ctx, cluster, lc.ResourceVersion)
	klog.FromContext(ctx).V(4).Info("Deleted logical cluster content", "cluster", cluster, "remaining", remaining.String(), "duration", time.Since(start))
	if err != nil {
		return err
	}
	if !remaining.Empty() {
		return r.reportRemaining(ctx, cluster, lc, remaining)
	}
	lc.Finalizers = slices.DeleteFunc(lc.Finalizers, func(f string) bool { return f == corev1alpha1.LogicalClusterDeletionFinalizer })
	err = r.update(ctx, cluster, lc)
	if err == nil || apierrors.IsNotFound(err) {
		r.held.Delete(cluster)
		r.release(cluster)
		return nil
	}
	return err
}

// reportRemaining writes phase Deleting and what remains into the status
// of a cluster whose content has been held for reportAfter, and asks for
// the cluster again: finalizers' removal brings events, the requeue is the
// fallback.
func (r *deletionReconciler) reportRemaining(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster, remaining content.Remaining) error {
	now := r.now()
	first, _ := r.held.LoadOrStore(cluster, now)
	reported := lc.Status.Conditions.Get(tenancyv1alpha1.WorkspaceContentDeleted) != nil
	if wait := reportAfter - now.Sub(first.(time.Time)); wait > 0 && !reported {
		return loop.RequeueAfter(wait)
	}
	old := lc.Status.DeepCopy()
	lc.Status.Phase = corev1alpha1.LogicalClusterPhaseDeleting
	conditionsv1alpha1.Set(lc, contentRemainsCondition(remaining))
	if !apiequality.Semantic.DeepEqual(*old, lc.Status) {
		if _, err := r.updateStatus(ctx, cluster, lc); err != nil {
			return err
		}
	}
	return requeueSoon
}

// forget drops what is known of a cluster whose LogicalCluster is gone.
func (r *deletionReconciler) forget(cluster logicalcluster.Name) { r.held.Delete(cluster) }

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
