package workspacetype

import (
	corev1 "k8s.io/api/core/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
)

// readyReconciler marks a WorkspaceType Ready: admission and the scheduler
// use a type as soon as they see it.
type readyReconciler struct{}

func (readyReconciler) reconcile(wt *tenancyv1alpha1.WorkspaceType) {
	conditionsv1alpha1.Set(wt, conditionsv1alpha1.Condition{Type: conditionsv1alpha1.ReadyCondition, Status: corev1.ConditionTrue})
}
