// Package v1alpha1 holds the wire types of the tenancy.kcp.io/v1alpha1 API:
// Workspace, a child logical cluster as its parent sees it, and
// WorkspaceType, which says how workspaces of a kind are set up, nested and
// torn down.
//
// The types are served as they are: they are registered both as v1alpha1 and
// as the internal version of the group, so no conversion is needed.
//
// +k8s:deepcopy-gen=package
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.kcp.tenancy.v1alpha1
// +groupName=tenancy.kcp.io
package v1alpha1
