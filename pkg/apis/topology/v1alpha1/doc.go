// Package v1alpha1 holds the wire types of the topology.kcp.io/v1alpha1 API:
// Partition, a selection of shards by their labels, and PartitionSet, which
// generates one Partition per combination of shard label values.
//
// The types are served as they are: they are registered both as v1alpha1 and
// as the internal version of the group, so no conversion is needed.
//
// +k8s:deepcopy-gen=package
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.kcp.topology.v1alpha1
// +groupName=topology.kcp.io
package v1alpha1
