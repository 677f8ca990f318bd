// Package v1alpha1 holds the wire types of the migration.kcp.io/v1alpha1
// API: LogicalClusterMigration, the request to move a logical cluster from
// the shard that hosts it to another shard.
//
// The types are served as they are: they are registered both as v1alpha1 and
// as the internal version of the group, so no conversion is needed.
//
// +k8s:deepcopy-gen=package
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.kcp.migration.v1alpha1
// +groupName=migration.kcp.io
package v1alpha1
