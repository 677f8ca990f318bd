package openapi

import (
	"k8s.io/kube-openapi/pkg/common"
	kubeopenapi "k8s.io/kubernetes/pkg/generated/openapi"
)

// GetAllOpenAPIDefinitions returns the definitions of Kubernetes' built-in
// APIs together with the definitions of kcp's APIs, for a server that serves
// both. Both are keyed by OpenAPI model name; where they overlap (the
// apimachinery types) they are generated from the same source, and the
// Kubernetes definition is kept.
func GetAllOpenAPIDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := kubeopenapi.GetOpenAPIDefinitions(ref)
	for name, def := range GetOpenAPIDefinitions(ref) {
		if _, ok := defs[name]; !ok {
			defs[name] = def
		}
	}
	return defs
}
