// Package shard keeps the Shard objects' status: every shard reports its
// own (Reporter: the logical clusters it hosts, its heartbeat, and the
// acknowledgements of a cordon and of its limits, as kcp's shard
// controller does), and the root shard marks shards whose heartbeat
// stopped as not Ready (Liveness), which kcp does not.
package shard

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
)

// noResourceLimitsMessage is kcp's ResourceLimitsApplied message of a shard
// without limits.
const noResourceLimitsMessage = "no limits configured"

// reportStatus sets on shard what the shard reports about itself: used
// logical clusters, the heartbeat time now, Ready, Schedulable and
// ResourceLimitsApplied.
func reportStatus(shard *corev1alpha1.Shard, used int64, now metav1.Time) {
	if shard.Status.Used == nil {
		shard.Status.Used = corev1.ResourceList{}
	}
	shard.Status.Used[corev1alpha1.ResourceWorkspaces] = *resource.NewQuantity(used, resource.DecimalSI)
	shard.Status.LastHeartbeatTime = &now
	conditionsv1alpha1.Set(shard, conditionsv1alpha1.Condition{
		Type: corev1alpha1.ShardReady, Status: corev1.ConditionTrue, LastTransitionTime: now,
	})
	if _, cordoned := shard.Annotations[corev1alpha1.ShardUnschedulableAnnotationKey]; cordoned {
		conditionsv1alpha1.Set(shard, conditionsv1alpha1.Condition{
			Type: corev1alpha1.ShardSchedulable, Status: corev1.ConditionFalse, LastTransitionTime: now,
			Severity: conditionsv1alpha1.ConditionSeverityInfo, Reason: corev1alpha1.ShardReasonCordoned,
			Message: fmt.Sprintf("shard is cordoned via the %s annotation, no new workspaces are scheduled onto it", corev1alpha1.ShardUnschedulableAnnotationKey),
		})
	} else {
		conditionsv1alpha1.Set(shard, conditionsv1alpha1.Condition{Type: corev1alpha1.ShardSchedulable, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	applied := conditionsv1alpha1.Condition{
		Type: corev1alpha1.ShardResourceLimitsApplied, Status: corev1.ConditionTrue, LastTransitionTime: now,
		Message: formatResourceLimits(shard.Spec.ResourceLimits),
	}
	if soft, hard := shard.WorkspaceLimits(); soft > 0 && hard > 0 && soft >= hard {
		applied.Status, applied.Severity, applied.Reason = corev1.ConditionFalse, conditionsv1alpha1.ConditionSeverityWarning, corev1alpha1.ShardReasonInvalidResourceLimits
		applied.Message += fmt.Sprintf("; soft workspaces=%d is not below hard workspaces=%d, so the shard is never deprioritized before it refuses new workspaces", soft, hard)
	}
	conditionsv1alpha1.Set(shard, applied)
}

// formatResourceLimits renders the limits as kcp's ResourceLimitsApplied
// message does: "soft/hard: workspaces=10/20", "-" for a tier not set.
func formatResourceLimits(limits *corev1alpha1.ShardResourceLimits) string {
	if limits == nil || (len(limits.Soft) == 0 && len(limits.Hard) == 0) {
		return noResourceLimitsMessage
	}
	names := map[corev1.ResourceName]bool{}
	for name := range limits.Soft {
		names[name] = true
	}
	for name := range limits.Hard {
		names[name] = true
	}
	pairs := make([]string, 0, len(names))
	for _, name := range slices.Sorted(maps.Keys(names)) {
		pairs = append(pairs, fmt.Sprintf("%s=%s/%s", name, quantityOrDash(limits.Soft, name), quantityOrDash(limits.Hard, name)))
	}
	return "soft/hard: " + strings.Join(pairs, ", ")
}

func quantityOrDash(list corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := list[name]
	if !ok {
		return "-"
	}
	return q.String()
}

// sameReport tells whether two statuses differ only in their heartbeat: a
// report that changes nothing else waits for the next heartbeat.
func sameReport(a, b corev1alpha1.ShardStatus) bool {
	a.LastHeartbeatTime, b.LastHeartbeatTime = nil, nil
	return apiequality.Semantic.DeepEqual(withoutTimes(a.Conditions), withoutTimes(b.Conditions)) &&
		apiequality.Semantic.DeepEqual(a.Used, b.Used) && apiequality.Semantic.DeepEqual(a.Capacity, b.Capacity)
}

func withoutTimes(conds conditionsv1alpha1.Conditions) conditionsv1alpha1.Conditions {
	out := make(conditionsv1alpha1.Conditions, len(conds))
	for i, c := range conds {
		c.LastTransitionTime = metav1.Time{}
		out[i] = c
	}
	return out
}
