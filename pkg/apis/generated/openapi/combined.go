package openapi

import (
	"k8s.io/kube-openapi/pkg/common"
)

// GetServedOpenAPIDefinitions returns the definitions of everything a shard
// serves: kcp's APIs, the Kubernetes groups of pkg/shard/scheme.go and the
// apimachinery and apiextensions types they use. openapi-gen generates them
// all into this package (hack/update-codegen.sh), so that the shard does not
// link k8s.io/kubernetes/pkg/generated/openapi, the definitions of every
// Kubernetes API (kubelet, scheduler, every beta version, ...): the biggest
// single package of the binary.
func GetServedOpenAPIDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	return GetOpenAPIDefinitions(ref)
}
