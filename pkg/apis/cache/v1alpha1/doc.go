// Package v1alpha1 holds the wire types of the cache.kcp.io/v1alpha1 API:
// ClusterCachedResource, which replicates the objects of one cluster-scoped
// resource of its workspace into the cache server under an identity of its
// own; ClusterCachedResourceEndpointSlice, which publishes the URL of the
// read-only view of those copies; and CachedObject, the envelope a copy is
// kept in by the cache server.
//
// The types are served as they are: they are registered both as v1alpha1 and
// as the internal version of the group, so no conversion is needed.
//
// +k8s:deepcopy-gen=package
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.kcp.cache.v1alpha1
// +groupName=cache.kcp.io
package v1alpha1
