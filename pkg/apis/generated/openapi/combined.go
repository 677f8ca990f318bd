package openapi

import (
	"strings"

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

// servedModelPrefixes are the model-name prefixes of the groups a shard
// serves (and the apimachinery and autoscaling Scale types they use).
var servedModelPrefixes = []string{
	"io.k8s.api.core.v1.",
	"io.k8s.api.rbac.v1.",
	"io.k8s.api.coordination.v1.",
	"io.k8s.api.events.v1.",
	"io.k8s.api.authentication.v1.",
	"io.k8s.api.authorization.v1.",
	"io.k8s.api.admissionregistration.v1.",
	"io.k8s.api.autoscaling.v1.",
	"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.",
	"io.k8s.apimachinery.",
	"io.kcp.",
}

// GetServedOpenAPIDefinitions is GetAllOpenAPIDefinitions pruned to the
// definitions of the groups a shard serves and everything they depend on:
// the rest (kubelet, scheduler, every beta version, ...) is a third of the
// idle heap of a shard otherwise.
func GetServedOpenAPIDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	all := GetAllOpenAPIDefinitions(ref)
	served := make(map[string]common.OpenAPIDefinition, len(all)/3)
	var keep func(name string)
	keep = func(name string) {
		if _, done := served[name]; done {
			return
		}
		def, ok := all[name]
		if !ok {
			return
		}
		served[name] = def
		for _, dep := range def.Dependencies {
			keep(dep)
		}
	}
	for name := range all {
		for _, p := range servedModelPrefixes {
			if strings.HasPrefix(name, p) {
				keep(name)
				break
			}
		}
	}
	return served
}
