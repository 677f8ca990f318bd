package apiextensions

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testCRD(group, plural string, versions []string, conditions ...apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: plural[:len(plural)-1], Kind: "K" + plural, ListKind: "K" + plural + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
		},
	}
	crd.Status.AcceptedNames = crd.Spec.Names
	for i, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: true, Storage: i == 0})
	}
	for _, c := range conditions {
		crd.Status.Conditions = append(crd.Status.Conditions, apiextensionsv1.CustomResourceDefinitionCondition{Type: c, Status: apiextensionsv1.ConditionTrue})
	}
	return crd
}

func TestDiscoveryForListsEstablishedCRDsByGroupWithPreferredVersionFirst(t *testing.T) {
	groups := discoveryFor([]*apiextensionsv1.CustomResourceDefinition{
		testCRD("b.io", "bees", []string{"v1alpha1", "v1", "v2beta1"}, apiextensionsv1.Established),
		testCRD("a.io", "ants", []string{"v1"}, apiextensionsv1.Established, apiextensionsv1.Terminating),
		testCRD("c.io", "cats", []string{"v1"}), // not established
	})
	if len(groups) != 2 || groups[0].name != "a.io" || groups[1].name != "b.io" {
		t.Fatalf("groups = %+v, want a.io and b.io", groups)
	}
	var versions []string
	for _, v := range groups[1].versions {
		versions = append(versions, v.version)
	}
	if want := []string{"v1", "v2beta1", "v1alpha1"}; len(versions) != 3 || versions[0] != want[0] || versions[1] != want[1] || versions[2] != want[2] {
		t.Errorf("versions of b.io = %v, want %v", versions, want)
	}
	if pv := groups[1].apiGroup().PreferredVersion.Version; pv != "v1" {
		t.Errorf("preferred version = %q, want v1", pv)
	}
	ants := groups[0].versions[0].resources[0]
	for _, v := range ants.Verbs {
		if v == "create" {
			t.Errorf("terminating CRD offers create: %v", ants.Verbs)
		}
	}
	if agg := groups[0].aggregated(); agg.Name != "a.io" || agg.Versions[0].Resources[0].Resource != "ants" {
		t.Errorf("aggregated form = %+v", agg)
	}
}

func TestDiscoveryForListsVirtualResourcesReadOnly(t *testing.T) {
	crd := testCRD("wildwest.dev", "sheriffs", []string{"v1alpha1"}, apiextensionsv1.Established)
	crd.Spec.Versions[0].Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	crd.Annotations = map[string]string{SchemaStorageAnnotation: VirtualStoragePrefix + "hash"}
	groups := discoveryFor([]*apiextensionsv1.CustomResourceDefinition{crd})
	resources := groups[0].versions[0].resources
	if len(resources) != 2 || resources[0].Name != "sheriffs" || resources[1].Name != "sheriffs/status" {
		t.Fatalf("resources %+v, want sheriffs and sheriffs/status", resources)
	}
	if got := resources[0].Verbs.String(); got != "[get list watch]" {
		t.Errorf("verbs of a virtual resource %s, want [get list watch]", got)
	}
	if got := resources[1].Verbs.String(); got != "[get]" {
		t.Errorf("verbs of its status %s, want [get]", got)
	}
	if got := groups[0].versions[0].aggregated[0].Verbs; len(got) != 3 {
		t.Errorf("aggregated verbs %v, want get, list, watch", got)
	}
}
