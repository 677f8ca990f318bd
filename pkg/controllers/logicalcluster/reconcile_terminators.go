package logicalcluster

import (
	"slices"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
)

// Terminators hold the deletion of a logical cluster, as in kcp: the
// scheduler lists them in spec.terminators; when the cluster leaves
// Scheduling they are copied to status.terminators, and while any remain
// there the LogicalCluster carries the finalizer kcp.io/has-terminators.
// A deleted cluster stays Terminating, its content untouched, until each
// terminator has removed itself from the status (through the terminating
// workspaces view); only then is its content deleted.

// startTerminators copies spec.terminators into the status of a cluster
// that leaves Scheduling, and tells whether it changed the status.
func startTerminators(lc *corev1alpha1.LogicalCluster) bool {
	if len(lc.Status.Terminators) > 0 || len(lc.Spec.Terminators) == 0 {
		return false
	}
	lc.Status.Terminators = slices.Clone(lc.Spec.Terminators)
	return true
}

// markTerminators adds kcp.io/has-terminators while status.terminators is
// not empty and removes it once it is, and tells whether the finalizers
// changed.
func markTerminators(lc *corev1alpha1.LogicalCluster) bool {
	has := slices.Contains(lc.Finalizers, corev1alpha1.LogicalClusterHasTerminatorsFinalizer)
	want := len(lc.Status.Terminators) > 0
	switch {
	case want && !has:
		lc.Finalizers = append(lc.Finalizers, corev1alpha1.LogicalClusterHasTerminatorsFinalizer)
	case !want && has:
		lc.Finalizers = slices.DeleteFunc(lc.Finalizers, func(f string) bool { return f == corev1alpha1.LogicalClusterHasTerminatorsFinalizer })
	default:
		return false
	}
	return true
}

// scheduling tells whether a cluster has not left Scheduling yet.
func scheduling(lc *corev1alpha1.LogicalCluster) bool {
	return lc.Status.Phase == "" || lc.Status.Phase == corev1alpha1.LogicalClusterPhaseScheduling
}
