package workspace

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	conditionsv1alpha1 "github.com/kplane-dev/kplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/kplane-dev/kplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kplane-dev/kplane/pkg/apis/tenancy/v1alpha1"
	"github.com/kplane-dev/kplane/pkg/controllers/loop"
	"github.com/kplane-dev/kplane/pkg/kcpclient"
	"github.com/kplane-dev/kplane/pkg/logicalcluster"
)

// deletionReconciler deletes a workspace's LogicalCluster and releases the
// workspace once it is gone. Meanwhile the workspace is Deleting and mirrors
// the LogicalCluster's WorkspaceContentDeleted condition, which names what
// still holds the content; the condition turns True when the logical
// cluster is gone.
type deletionReconciler struct {
	// getLogicalCluster reads the LogicalCluster of a scheduled workspace;
	// nil or NotFound when it is gone.
	getLogicalCluster func(ctx context.Context, ws *tenancyv1alpha1.Workspace) (*corev1alpha1.LogicalCluster, error)
	// deleteLogicalCluster deletes it on its shard.
	deleteLogicalCluster func(ctx context.Context, ws *tenancyv1alpha1.Workspace) error
	// updateStatus writes ws's status and returns the stored workspace.
	updateStatus func(ctx context.Context, parent logicalcluster.Name, ws *tenancyv1alpha1.Workspace) (*tenancyv1alpha1.Workspace, error)
	// update writes ws (its finalizers).
	update func(ctx context.Context, parent logicalcluster.Name, ws *tenancyv1alpha1.Workspace) error
}

func (r *deletionReconciler) reconcile(ctx context.Context, parent logicalcluster.Name, ws *tenancyv1alpha1.Workspace) error {
	if !slices.Contains(ws.Finalizers, tenancyv1alpha1.LogicalClusterFinalizer) {
		return nil
	}
	// A workspace whose placement is recorded may have a LogicalCluster
	// even before spec.cluster is set.
	if clusterOf(ws) != "" {
		lc, err := r.getLogicalCluster(ctx, ws)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if lc != nil {
			if lc.DeletionTimestamp == nil {
				if err := r.deleteLogicalCluster(ctx, ws); err != nil {
					return err
				}
			}
			old := ws.Status.DeepCopy()
			ws.Status.Phase = corev1alpha1.LogicalClusterPhaseDeleting
			if c := lc.Status.Conditions.Get(tenancyv1alpha1.WorkspaceContentDeleted); c != nil {
				conditionsv1alpha1.Set(ws, *c)
			}
			if !apiequality.Semantic.DeepEqual(*old, ws.Status) {
				_, err := r.updateStatus(ctx, parent, ws)
				return err
			}
			return loop.RequeueAfter(time.Second)
		}
		if !ws.Status.Conditions.IsTrue(tenancyv1alpha1.WorkspaceContentDeleted) {
			conditionsv1alpha1.Set(ws, conditionsv1alpha1.Condition{Type: tenancyv1alpha1.WorkspaceContentDeleted, Status: corev1.ConditionTrue})
			updated, err := r.updateStatus(ctx, parent, ws)
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			ws = updated
		}
	}
	ws.Finalizers = slices.DeleteFunc(ws.Finalizers, func(f string) bool { return f == tenancyv1alpha1.LogicalClusterFinalizer })
	err := r.update(ctx, parent, ws)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// deleteLogicalCluster deletes a workspace's LogicalCluster on its shard.
func (c *Controller) deleteLogicalCluster(ctx context.Context, ws *tenancyv1alpha1.Workspace) error {
	shardName := shardOf(ws)
	if shardName == "" {
		shardName = c.shardName
	}
	shard := c.shard(shardName)
	if shard == nil {
		return loop.RequeueAfter(time.Second)
	}
	client, err := c.shardClient(shard)
	if err != nil {
		return err
	}
	err = client.Delete(ctx, clusterOf(ws), kcpclient.LogicalClusters, corev1alpha1.LogicalClusterName, nil)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
