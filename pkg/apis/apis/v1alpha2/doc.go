// Package v1alpha2 holds the wire types of apis.kcp.io/v1alpha2, APIExport
// and APIBinding, which are also the internal and storage version of those
// kinds, and their lossless conversion to and from v1alpha1: what v1alpha1
// cannot express travels in annotations apis.v1alpha2.kcp.io/*, as in kcp.
//
// Install registers the whole group, both versions, in a scheme.
//
// +k8s:deepcopy-gen=package
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.kcp.apis.v1alpha2
// +groupName=apis.kcp.io
package v1alpha2
