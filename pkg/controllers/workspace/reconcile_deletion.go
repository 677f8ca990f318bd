package workspace

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// deletionReconciler deletes a workspace's LogicalCluster and releases the
// workspace once it is gone. While the LogicalCluster exists the workspace
// is Terminating, as kcp shows it, and mirrors its WorkspaceContentDeleted
// condition (which names what still holds the content); the condition
// turns True when the logical cluster is gone.
type deletionReconciler struct {
	// getLogicalCluster reads the LogicalCluster of a workspace; nil or
	// NotFound when it is gone.
	getLogicalCluster func(ctx context.Context, ws *tenancyv1alpha1.Workspace) (*corev1alpha1.LogicalCluster, error)
	// deleteLogicalCluster deletes it on its shard.
	deleteLogicalCluster func(ctx context.Context, ws *tenancyv1alpha1.Workspace) error
	// updateStatus writes ws's status and returns the stored workspace.
	updateStatus func(ctx context.Context, parent logicalcluster.Name, ws *tenancyv1alpha1.Workspace) (*tenancyv1alpha1.Workspace, error)
	// update writes ws (its finalizers).
	update func(ctx context.Context, parent logicalcluster.Name, ws *tenancyv1alpha1.Workspace) error
	// remote tells whether the workspace's cluster is on another shard,
	// whose changes bring no events here.
	remote func(ws *tenancyv1alpha1.Workspace) bool
	// moving names the migration moving the workspace's cluster, "" when
	// none; present tells whether the workspace's shard still holds it.
	moving func(ws *tenancyv1alpha1.Workspace, present bool) string
}

// ReasonLogicalClusterMoving is the reason of WorkspaceContentDeleted
// while a deleted workspace waits for the move of its cluster to end.
const ReasonLogicalClusterMoving = "LogicalClusterMoving"

func (r *deletionReconciler) reconcile(ctx context.Context, parent logicalcluster.Name, ws *tenancyv1alpha1.Workspace) error {
	if !slices.Contains(ws.Finalizers, tenancyv1alpha1.LogicalClusterFinalizer) {
		return nil
	}
	// A workspace without a recorded placement may have a LogicalCluster
	// on this shard (reconcileScheduling creates it before the placement
	// is written); getLogicalCluster looks for it.
	lc, err := r.getLogicalCluster(ctx, ws)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	// From a move's cut-over on, deletion waits for the move to end and
	// deletes the cluster where it ends up; before, deleting the
	// LogicalCluster aborts the move, as in kcp.
	if lc == nil || lc.DeletionTimestamp == nil {
		if m := r.movingMigration(ws, lc); m != "" {
			return r.waitForMove(ctx, parent, ws, m)
		}
	}
	if lc != nil {
		if lc.DeletionTimestamp == nil {
			if err := r.deleteLogicalCluster(ctx, ws); err != nil {
				return err
			}
		}
		if deletingStatus(ws, lc) {
			_, err := r.updateStatus(ctx, parent, ws)
			return err
		}
		if r.remote(ws) {
			return loop.RequeueAfter(time.Second)
		}
		// The LogicalCluster's changes bring the workspace back.
		return nil
	}
	// The condition turns True where anyone may have seen it False, or
	// where the workspace outlives this finalizer.
	if c := ws.Status.Conditions.Get(tenancyv1alpha1.WorkspaceContentDeleted); (c != nil || len(ws.Finalizers) > 1) && (c == nil || c.Status != corev1.ConditionTrue) {
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
	ws.Finalizers = slices.DeleteFunc(ws.Finalizers, func(f string) bool { return f == tenancyv1alpha1.LogicalClusterFinalizer })
	err = r.update(ctx, parent, ws)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// movingMigration names the move of ws's cluster that its deletion waits
// for, "" for none.
func (r *deletionReconciler) movingMigration(ws *tenancyv1alpha1.Workspace, lc *corev1alpha1.LogicalCluster) string {
	if r.moving == nil {
		return ""
	}
	return r.moving(ws, lc != nil)
}

// waitForMove marks ws Terminating with WorkspaceContentDeleted False
// naming the move, and looks again later: a move's progress brings no
// event of the workspace.
func (r *deletionReconciler) waitForMove(ctx context.Context, parent logicalcluster.Name, ws *tenancyv1alpha1.Workspace, migration string) error {
	old := ws.Status.DeepCopy()
	ws.Status.Phase = corev1alpha1.LogicalClusterPhaseTerminating
	conditionsv1alpha1.Set(ws, conditionsv1alpha1.Condition{
		Type: tenancyv1alpha1.WorkspaceContentDeleted, Status: corev1.ConditionFalse,
		Severity: conditionsv1alpha1.ConditionSeverityInfo, Reason: ReasonLogicalClusterMoving,
		Message: fmt.Sprintf("waiting for migration %s of logical cluster %s to end before deleting it", migration, clusterOf(ws)),
	})
	if !apiequality.Semantic.DeepEqual(*old, ws.Status) {
		if _, err := r.updateStatus(ctx, parent, ws); err != nil {
			return err
		}
	}
	return loop.RequeueAfter(time.Second)
}

// deletingStatus marks a deleted workspace whose LogicalCluster still
// exists Terminating, with the cluster's WorkspaceContentDeleted condition
// if it has one. It tells whether the status changed.
func deletingStatus(ws *tenancyv1alpha1.Workspace, lc *corev1alpha1.LogicalCluster) bool {
	c := lc.Status.Conditions.Get(tenancyv1alpha1.WorkspaceContentDeleted)
	old := ws.Status.DeepCopy()
	ws.Status.Phase = corev1alpha1.LogicalClusterPhaseTerminating
	if c != nil {
		conditionsv1alpha1.Set(ws, *c)
	}
	return !apiequality.Semantic.DeepEqual(*old, ws.Status)
}

// deleteLogicalCluster deletes a workspace's LogicalCluster on its shard.
// On this shard it is deleted in-process when the shard gives the means:
// the system alone deletes a workspace's LogicalCluster (its admission
// refuses everyone else), as the system alone created it. Elsewhere it is
// deleted through the shard's baseURL.
func (c *Controller) deleteLogicalCluster(ctx context.Context, ws *tenancyv1alpha1.Workspace) error {
	shardName := shardOf(ws)
	if shardName == "" {
		shardName = c.shardName
	}
	cluster := clusterOf(ws)
	if cluster == "" {
		cluster = ClusterName(string(ws.UID))
	}
	var err error
	if shardName == c.shardName && c.deleteLocalLogicalCluster != nil {
		err = c.deleteLocalLogicalCluster(ctx, cluster)
	} else {
		err = c.deleteRemoteLogicalCluster(ctx, shardName, cluster)
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// deleteRemoteLogicalCluster deletes the LogicalCluster of cluster through
// the client of shard shardName.
func (c *Controller) deleteRemoteLogicalCluster(ctx context.Context, shardName string, cluster logicalcluster.Name) error {
	shard := c.shard(shardName)
	if shard == nil {
		return loop.RequeueAfter(time.Second)
	}
	client, err := c.shardClient(shard)
	if err != nil {
		return err
	}
	return client.Delete(ctx, cluster, kcpclient.LogicalClusters, corev1alpha1.LogicalClusterName, nil)
}
