package v1alpha1

import corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"

// SetDefaults_Workspace puts a new Workspace into the Scheduling phase.
func SetDefaults_Workspace(obj *Workspace) {
	if obj.Status.Phase == "" {
		obj.Status.Phase = corev1alpha1.LogicalClusterPhaseScheduling
	}
}
