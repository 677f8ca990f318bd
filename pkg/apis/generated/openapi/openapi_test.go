package openapi

import (
	"testing"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

func refByName(name string) spec.Ref { return spec.MustCreateRef("#/definitions/" + name) }

func TestDefinitionsIncludeTheFourKinds(t *testing.T) {
	defs := GetOpenAPIDefinitions(refByName)
	tests := []struct {
		name       string
		properties []string
	}{
		{"io.kcp.core.v1alpha1.LogicalCluster", []string{"metadata", "spec", "status"}},
		{"io.kcp.core.v1alpha1.LogicalClusterSpec", []string{"directlyDeletable", "owner", "initializers", "terminators"}},
		{"io.kcp.core.v1alpha1.LogicalClusterStatus", []string{"URL", "phase", "conditions", "initializers", "terminators"}},
		{"io.kcp.core.v1alpha1.Shard", []string{"metadata", "spec", "status"}},
		{"io.kcp.core.v1alpha1.ShardSpec", []string{"baseURL", "externalURL", "virtualWorkspaceURL"}},
		{"io.kcp.tenancy.v1alpha1.Workspace", []string{"metadata", "spec", "status"}},
		{"io.kcp.tenancy.v1alpha1.WorkspaceSpec", []string{"type", "location", "cluster", "URL", "mount"}},
		{"io.kcp.tenancy.v1alpha1.WorkspaceType", []string{"metadata", "spec", "status"}},
		{"io.kcp.tenancy.v1alpha1.WorkspaceTypeSpec", []string{
			"initializer", "terminator", "extend", "additionalWorkspaceLabels", "defaultChildWorkspaceType",
			"limitAllowedChildren", "limitAllowedParents", "defaultAPIBindings",
		}},
		{"io.kcp.conditions.v1alpha1.Condition", []string{"type", "status", "severity", "lastTransitionTime", "reason", "message"}},
	}
	for _, tt := range tests {
		def, ok := defs[tt.name]
		if !ok {
			t.Errorf("no definition %s", tt.name)
			continue
		}
		for _, p := range tt.properties {
			if _, ok := def.Schema.Properties[p]; !ok {
				t.Errorf("%s has no property %q", tt.name, p)
			}
		}
	}
	if required := defs["io.kcp.core.v1alpha1.ShardSpec"].Schema.Required; len(required) != 1 || required[0] != "baseURL" {
		t.Errorf("ShardSpec required = %v, want [baseURL]", required)
	}
}

func TestDefinitionsAreSelfContained(t *testing.T) {
	defs := GetOpenAPIDefinitions(refByName)
	checkDependenciesResolve(t, defs, defs)
}

func TestAllDefinitionsHoldKubernetesAndKcpKinds(t *testing.T) {
	defs := GetAllOpenAPIDefinitions(refByName)
	for _, name := range []string{
		"io.k8s.api.core.v1.Pod",
		"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
		"io.kcp.core.v1alpha1.LogicalCluster",
		"io.kcp.tenancy.v1alpha1.Workspace",
	} {
		if _, ok := defs[name]; !ok {
			t.Errorf("no definition %s", name)
		}
	}
	// Kubernetes' own definitions have dangling dependencies of their own
	// (component configs); only ours must resolve.
	checkDependenciesResolve(t, GetOpenAPIDefinitions(refByName), defs)
}

// checkDependenciesResolve checks that every dependency of defs is defined
// in all.
func checkDependenciesResolve(t *testing.T, defs, all map[string]common.OpenAPIDefinition) {
	t.Helper()
	for name, def := range defs {
		for _, dep := range def.Dependencies {
			if _, ok := all[dep]; !ok {
				t.Errorf("%s depends on %s, which has no definition", name, dep)
			}
		}
	}
}

func TestServedDefinitionsAreClosedUnderDependencies(t *testing.T) {
	ref := func(p string) spec.Ref { return spec.MustCreateRef(p) }
	served := GetServedOpenAPIDefinitions(ref)
	all := GetAllOpenAPIDefinitions(ref)
	if len(served) == 0 || len(served) >= len(all) {
		t.Fatalf("served %d of %d definitions; want a non-empty strict subset", len(served), len(all))
	}
	for name, def := range served {
		for _, dep := range def.Dependencies {
			if _, ok := served[dep]; !ok {
				t.Errorf("%s depends on %s, which is pruned", name, dep)
			}
		}
	}
	for _, want := range []string{"io.k8s.api.core.v1.ConfigMap", "io.k8s.api.rbac.v1.Role", "io.kcp.tenancy.v1alpha1.Workspace",
		"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition", "io.k8s.api.autoscaling.v1.Scale"} {
		if _, ok := served[want]; !ok {
			t.Errorf("%s missing from the served definitions", want)
		}
	}
	if _, ok := served["io.k8s.kubelet.config.v1beta1.KubeletConfiguration"]; ok {
		t.Error("kubelet configuration is not served and should be pruned")
	}
}
