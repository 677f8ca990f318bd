package workspace

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
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
	remote := shardOf(ws) != "" && shardOf(ws) != c.shardName
	now := time.Now()
	switch mirrorPhase(ws, lc, now) {
	case phaseWrite:
		_, err = c.update(ctx, parent, ws, "status")
		return err
	case phaseAwaitCluster:
		// Created moments ago on this shard: the informer catches up.
		return loop.RequeueAfter(200 * time.Millisecond)
	case phaseAwaitBindings:
		// The cluster's next change brings the workspace back; this is
		// for bindings that take longer.
		return loop.RequeueAfter(bindingsGrace - now.Sub(lc.CreationTimestamp.Time))
	}
	if remote && ws.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
		return loop.RequeueAfter(time.Second) // no events from other shards
	}
	return nil
}

// phaseAction is what mirrorPhase asks of reconcilePhase.
type phaseAction int

const (
	// phaseUnchanged: nothing to write; the LogicalCluster's next change
	// brings the workspace back.
	phaseUnchanged phaseAction = iota
	// phaseWrite: the workspace's status changed.
	phaseWrite
	// phaseAwaitCluster: the LogicalCluster of a scheduling workspace is
	// not seen yet.
	phaseAwaitCluster
	// phaseAwaitBindings: the LogicalCluster of a scheduling workspace is
	// Initializing, waiting only for its default APIBindings, and younger
	// than bindingsGrace.
	phaseAwaitBindings
)

// bindingsGrace is how long a scheduling workspace whose cluster waits only
// for its default APIBindings (the system:apibindings initializer) stays
// Scheduling. The bindings are usually bound within milliseconds of the
// cluster's bootstrap, and the workspace then goes from Scheduling to
// Ready in one status write instead of two (a write of the parent
// workspace, with admission, audit and an etcd write, of every new
// workspace). A cluster waiting longer, or for any other initializer, is
// mirrored as Initializing as before.
const bindingsGrace = time.Second

// mirrorPhase sets the status of ws from its LogicalCluster (nil: not
// found) at now. While the cluster is still Scheduling (being
// bootstrapped), or for bindingsGrace Initializing with only its default
// APIBindings to wait for, a Scheduling workspace is left alone: the
// cluster's next phase is written with WorkspaceScheduled in one write.
func mirrorPhase(ws *tenancyv1alpha1.Workspace, lc *corev1alpha1.LogicalCluster, now time.Time) phaseAction {
	if lc == nil && scheduling(ws.Status.Phase) {
		return phaseAwaitCluster
	}
	if lc != nil && scheduling(lc.Status.Phase) && scheduling(ws.Status.Phase) {
		return phaseUnchanged
	}
	if lc != nil && scheduling(ws.Status.Phase) && awaitingBindings(lc, now) {
		return phaseAwaitBindings
	}
	old := ws.Status.DeepCopy()
	conditionsv1alpha1.Set(ws, conditionsv1alpha1.Condition{Type: tenancyv1alpha1.WorkspaceScheduled, Status: corev1.ConditionTrue})
	if lc == nil {
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
		return phaseUnchanged
	}
	return phaseWrite
}

// awaitingBindings tells whether lc is Initializing for system:apibindings
// alone and younger than bindingsGrace at now.
func awaitingBindings(lc *corev1alpha1.LogicalCluster, now time.Time) bool {
	return lc.Status.Phase == corev1alpha1.LogicalClusterPhaseInitializing &&
		len(lc.Status.Initializers) == 1 && lc.Status.Initializers[0] == tenancyv1alpha1.WorkspaceAPIBindingsInitializer &&
		lc.DeletionTimestamp == nil && now.Sub(lc.CreationTimestamp.Time) < bindingsGrace
}

// scheduling tells whether a phase is (still) Scheduling.
func scheduling(phase corev1alpha1.LogicalClusterPhaseType) bool {
	return phase == "" || phase == corev1alpha1.LogicalClusterPhaseScheduling
}
