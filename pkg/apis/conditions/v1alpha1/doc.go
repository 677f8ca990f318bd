// Package v1alpha1 holds the Condition type that all kcp APIs use in their
// status. Its wire format is kcp's (and Cluster API's): type, status,
// severity, lastTransitionTime, reason and message.
//
// +k8s:deepcopy-gen=package
// +k8s:openapi-gen=true
// +k8s:openapi-model-package=io.kcp.conditions.v1alpha1
package v1alpha1
