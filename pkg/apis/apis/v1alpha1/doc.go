// Package v1alpha1 holds the wire types of apis.kcp.io/v1alpha1:
// APIResourceSchema and APIExportEndpointSlice, which exist only in this
// version, and APIExport and APIBinding, which are stored as v1alpha2 and
// converted to and from this version (see package v1alpha2).
//
// APIResourceSchema and APIExportEndpointSlice are registered both as
// v1alpha1 and as the internal version of the group; APIExport and
// APIBinding of this package are external only.
//
// +k8s:deepcopy-gen=package
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.kcp.apis.v1alpha1
// +groupName=apis.kcp.io
package v1alpha1
