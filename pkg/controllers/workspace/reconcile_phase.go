package workspace

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	conditionsv1alpha1 "github.com/kplane-dev/kplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/kplane-dev/kplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kplane-dev/kplane/pkg/apis/tenancy/v1alpha1"
	"github.com/kplane-dev/kplane/pkg/controllers/loop"
	"github.com/kplane-dev/kplane/pkg/logicalcluster"
)

// reconcilePhase copies the logical cluster's phase and initializers onto
// the workspace, with conditions.
func (c *Controller) reconcilePhase(ctx context.Context, parent logicalcluster.Name, ws *tenancyv1alpha1.Workspace) error {
	lc, err := c.getLogicalCluster(ctx, ws)
	if apierrors.IsNotFound(err) {
		lc, err = nil, nil
	}
	if err != nil {
		return err
	}
	old := ws.Status.DeepCopy()
	conditionsv1alpha1.Set(ws, conditionsv1alpha1.Condition{Type: tenancyv1alpha1.WorkspaceScheduled, Status: corev1.ConditionTrue})
	if lc == nil {
		// Created moments ago on this shard: the informer catches up.
		if ws.Status.Phase == "" || ws.Status.Phase == corev1alpha1.LogicalClusterPhaseScheduling {
			return loop.RequeueAfter(200 * time.Millisecond)
		}
		ws.Status.Phase = corev1alpha1.LogicalClusterPhaseUnavailable
	} else {
		ws.Status.Phase = lc.Status.Phase
		if ws.Status.Phase == "" {
			ws.Status.Phase = corev1alpha1.LogicalClusterPhaseScheduling
		}
		ws.Status.Initializers = lc.Status.Initializers
		ws.Status.Terminators = lc.Status.Terminators
		if len(lc.Status.Initializers) == 0 {
			conditionsv1alpha1.Set(ws, conditionsv1alpha1.Condition{Type: tenancyv1alpha1.WorkspaceInitialized, Status: corev1.ConditionTrue})
		} else {
			conditionsv1alpha1.Set(ws, conditionsv1alpha1.Condition{
				Type: tenancyv1alpha1.WorkspaceInitialized, Status: corev1.ConditionFalse, Severity: conditionsv1alpha1.ConditionSeverityInfo,
				Reason: tenancyv1alpha1.WorkspaceInitializedInitializerExists, Message: "initializers remain on the logical cluster",
			})
		}
	}
	if apiequality.Semantic.DeepEqual(*old, ws.Status) {
		if shard := shardOf(ws); shard != "" && shard != c.shardName && ws.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
			return loop.RequeueAfter(time.Second) // no events from other shards
		}
		return nil
	}
	return c.update(ctx, parent, ws, "status")
}
