package openapi

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
	kubeopenapi "k8s.io/kubernetes/pkg/generated/openapi"
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

func TestServedKubernetesDefinitionsEqualKubernetesOwn(t *testing.T) {
	served := GetServedOpenAPIDefinitions(refByName)
	kube := kubeopenapi.GetOpenAPIDefinitions(refByName)
	for name, def := range served {
		if !strings.HasPrefix(name, "io.k8s.") {
			continue
		}
		want, ok := kube[name]
		if !ok {
			// apiextensions/v1 is not among Kubernetes' own definitions.
			if !strings.HasPrefix(name, "io.k8s.apiextensions-apiserver.") {
				t.Errorf("%s is not a Kubernetes definition", name)
			}
			continue
		}
		if !reflect.DeepEqual(def.Schema, want.Schema) {
			t.Errorf("schema of %s differs from Kubernetes' own", name)
		}
		if !sets.New(def.Dependencies...).Equal(sets.New(want.Dependencies...)) {
			t.Errorf("dependencies of %s = %v, Kubernetes' own %v", name, def.Dependencies, want.Dependencies)
		}
	}
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
	checkDependenciesResolve(t, served, served)
	for _, want := range []string{"io.k8s.api.core.v1.ConfigMap", "io.k8s.api.core.v1.Pod", "io.k8s.api.rbac.v1.Role",
		"io.k8s.api.coordination.v1.Lease", "io.k8s.api.events.v1.Event", "io.k8s.api.authentication.v1.TokenReview",
		"io.k8s.api.authorization.v1.SubjectAccessReview", "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy",
		"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "io.kcp.tenancy.v1alpha1.Workspace",
		"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition", "io.k8s.api.autoscaling.v1.Scale"} {
		if _, ok := served[want]; !ok {
			t.Errorf("%s missing from the served definitions", want)
		}
	}
	if _, ok := served["io.k8s.kubelet.config.v1beta1.KubeletConfiguration"]; ok {
		t.Error("kubelet configuration is not served and should not be defined")
	}
}
