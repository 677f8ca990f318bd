package apiextensions

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
)

func internalCRD(name, group, plural string, annotations map[string]string) *apiextensions.CustomResourceDefinition {
	preserve := true
	kind := strings.ToUpper(plural[:1]) + plural[1:len(plural)-1]
	return &apiextensions.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: apiextensions.CustomResourceDefinitionSpec{
			Group:                 group,
			Names:                 apiextensions.CustomResourceDefinitionNames{Plural: plural, Singular: plural[:len(plural)-1], Kind: kind, ListKind: kind + "List"},
			Scope:                 apiextensions.NamespaceScoped,
			Version:               "v1",
			Versions:              []apiextensions.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}},
			Validation:            &apiextensions.CustomResourceValidation{OpenAPIV3Schema: &apiextensions.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}},
			Conversion:            &apiextensions.CustomResourceConversion{Strategy: apiextensions.NoneConverter},
			PreserveUnknownFields: new(bool),
		},
		Status: apiextensions.CustomResourceDefinitionStatus{StoredVersions: []string{"v1"}},
	}
}

func TestCRDStrategyReservesTheShardsAPIsAndAllowsKubernetesKinds(t *testing.T) {
	native := &nativeAPIs{
		groups: sets.New("rbac.authorization.k8s.io", "apiextensions.k8s.io", "core.kcp.io"),
		core:   sets.New("configmaps", "namespaces"),
	}
	s := crdStrategy{RESTCreateStrategy: customresourcedefinition.NewStrategy(runtime.NewScheme()), native: func() *nativeAPIs { return native }}
	for _, tc := range []struct {
		name string
		crd  *apiextensions.CustomResourceDefinition
		// wantField is the field of the one expected error; "" for none.
		wantField string
	}{
		{"own group", internalCRD("widgets.example.io", "example.io", "widgets", nil), ""},
		{"apps deployments", internalCRD("deployments.apps", "apps", "deployments", nil), ""},
		{"batch jobs", internalCRD("jobs.batch", "batch", "jobs", nil), ""},
		{"core services", internalCRD("services.core", "", "services", nil), ""},
		{"core services misnamed", internalCRD("services", "", "services", nil), "metadata.name"},
		{"core configmaps", internalCRD("configmaps.core", "", "configmaps", nil), "spec.names.plural"},
		{"rbac", internalCRD("roles.rbac.authorization.k8s.io", "rbac.authorization.k8s.io", "roles",
			map[string]string{"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"}), "spec.group"},
		{"kcp group served", internalCRD("logicalclusters.core.kcp.io", "core.kcp.io", "logicalclusters", nil), "spec.group"},
		{"kcp group not served", internalCRD("apibindings.apis.kcp.io", "apis.kcp.io", "apibindings", nil), "spec.group"},
		{"topology", internalCRD("partitions.topology.kcp.io", "topology.kcp.io", "partitions", nil), "spec.group"},
		{"bound annotation", internalCRD("widgets.example.io", "example.io", "widgets", map[string]string{BoundCRDAnnotation: ""}),
			"metadata.annotations[apis.kcp.io/bound-crd]"},
		{"other dotless group", internalCRD("things.thing", "thing", "things", nil), "spec.group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := s.Validate(context.Background(), tc.crd)
			if tc.wantField == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if len(errs) != 1 || errs[0].Field != tc.wantField {
				t.Fatalf("errors %v, want one for %s", errs, tc.wantField)
			}
		})
	}
}

func TestCoreResourceOfRoutePath(t *testing.T) {
	for path, want := range map[string]string{
		"namespaces/{namespace}/configmaps/{name}": "configmaps",
		"watch/namespaces/{namespace}/configmaps":  "configmaps",
		"configmaps":               "configmaps",
		"namespaces/{name}/status": "namespaces",
		"namespaces":               "namespaces",
		"namespaces/{namespace}/serviceaccounts/{name}/token": "serviceaccounts",
		"{name}": "",
	} {
		if got := resourceOfRoutePath(path); got != want {
			t.Errorf("resourceOfRoutePath(%q) = %q, want %q", path, got, want)
		}
	}
}
