package v1alpha1

// SetDefaults_LogicalCluster puts a new LogicalCluster into the Scheduling
// phase.
func SetDefaults_LogicalCluster(obj *LogicalCluster) {
	if obj.Status.Phase == "" {
		obj.Status.Phase = LogicalClusterPhaseScheduling
	}
}

// SetDefaults_Shard defaults the external and the virtual workspace URL of a
// Shard to its base URL, as a single shard without a front-proxy needs.
func SetDefaults_Shard(obj *Shard) {
	if obj.Spec.ExternalURL == "" {
		obj.Spec.ExternalURL = obj.Spec.BaseURL
	}
	if obj.Spec.VirtualWorkspaceURL == "" {
		obj.Spec.VirtualWorkspaceURL = obj.Spec.BaseURL
	}
}
