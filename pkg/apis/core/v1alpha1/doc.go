// Package v1alpha1 holds the wire types of the core.kcp.io/v1alpha1 API:
// LogicalCluster, the singleton that describes a logical cluster from inside,
// and Shard, a server that hosts logical clusters.
//
// The types are served as they are: they are registered both as v1alpha1 and
// as the internal version of the group, so no conversion is needed.
//
// +k8s:deepcopy-gen=package
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.kcp.core.v1alpha1
// +groupName=core.kcp.io
package v1alpha1
