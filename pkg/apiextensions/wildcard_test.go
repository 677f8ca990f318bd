package apiextensions

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestMetadataOnlyAcceptKeepsPartialObjectMetadataRanges(t *testing.T) {
	for accept, want := range map[string]string{
		"":                 "",
		"application/json": "",
		"application/json;as=Table;g=meta.k8s.io;v=v1": "",
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json": "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
		"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1":                                                                                                     "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1",
		"application/json;as=PartialObjectMetadataList;g=example.io;v=v1":                                                                                                       "",
	} {
		if got := metadataOnlyAccept(accept); got != want {
			t.Errorf("metadataOnlyAccept(%q) = %q, want %q", accept, got, want)
		}
	}
}

func TestMetadataConverterReadsAnyVersionOfItsGroup(t *testing.T) {
	c := metadataConverter{group: "force.example.io"}
	stored := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "force.example.io/v2", "kind": "TheForce",
		"metadata": map[string]interface{}{"name": "dark"},
	}}
	into := &unstructured.Unstructured{}
	into.SetGroupVersionKind(schema.GroupVersionKind{Group: "force.example.io", Version: "v1", Kind: "TheForce"})
	if err := c.Convert(stored, into, nil); err != nil {
		t.Fatal(err)
	}
	if into.GetAPIVersion() != "force.example.io/v1" || into.GetName() != "dark" || stored.GetAPIVersion() != "force.example.io/v2" {
		t.Errorf("converted %v from %v", into.Object, stored.Object)
	}
	list := &unstructured.UnstructuredList{Object: map[string]interface{}{"apiVersion": "force.example.io/v2", "kind": "TheForceList"}}
	list.Items = []unstructured.Unstructured{*stored}
	out, err := c.ConvertToVersion(list, schema.GroupVersion{Group: "force.example.io", Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*unstructured.UnstructuredList).Items[0].GetAPIVersion(); got != "force.example.io/v1" {
		t.Errorf("list item apiVersion %q", got)
	}
	other := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "other.io/v1", "kind": "TheForce"}}
	if err := c.Convert(other, into, nil); err == nil {
		t.Error("converted an object of another group")
	}
}

func TestMetadataCRDServesOneSchemalessVersion(t *testing.T) {
	crd := testCRD("force.example.io", "theforces", []string{"v2", "v3"}, apiextensionsv1.Established)
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
	m := metadataCRD(crd, "v1")
	if len(m.Spec.Versions) != 1 || m.Spec.Versions[0].Name != "v1" || !m.Spec.Versions[0].Storage || !m.Spec.Versions[0].Served {
		t.Errorf("versions %+v, want v1 only", m.Spec.Versions)
	}
	if m.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter {
		t.Errorf("conversion %v, want None", m.Spec.Conversion.Strategy)
	}
	if p := m.Spec.Versions[0].Schema.OpenAPIV3Schema.XPreserveUnknownFields; p == nil || !*p {
		t.Error("schema does not preserve unknown fields")
	}
}

func TestWildcardSourceIsACRDOfAnyClusterElseABoundSchema(t *testing.T) {
	crd := testCRD("force.example.io", "theforces", []string{"v1"}, apiextensionsv1.Established)
	crd.UID = "crd"
	bound := testCRD("force.example.io", "theforces", []string{"v1", "v2"}, apiextensionsv1.Established)
	bound.UID = "schema"

	onlyBound := testHandler(t, newFakeBuilds(""), nil)
	onlyBound.bound = listBound{{CRD: bound, IdentityHash: "id"}}
	if got := onlyBound.wildcardSource("force.example.io", "theforces", "v2"); got == nil || got.UID != "schema" {
		t.Errorf("without CRDs the wildcard is served from %v, want the bound schema", got)
	}
	if got := onlyBound.wildcardSource("force.example.io", "theforces", "v3"); got != nil {
		t.Errorf("a version nothing serves is served from %v", got.UID)
	}
	if got := onlyBound.wildcardSource("other.example.io", "theforces", "v1"); got != nil {
		t.Errorf("another group is served from %v", got.UID)
	}

	both := testHandler(t, newFakeBuilds(""), map[logicalcluster.Name][]*apiextensionsv1.CustomResourceDefinition{"a": {crd}})
	both.bound = listBound{{CRD: bound, IdentityHash: "id"}}
	if got := both.wildcardSource("force.example.io", "theforces", "v1"); got == nil || got.UID != "crd" {
		t.Errorf("v1 is served from %v, want the CRD", got)
	}
	if got := both.wildcardSource("force.example.io", "theforces", "v2"); got == nil || got.UID != "schema" {
		t.Errorf("v2, which only the binding serves, is served from %v", got)
	}
}

func TestWildcardMetadataStorageReadsCustomAndBoundInstances(t *testing.T) {
	gr := schema.GroupResource{Group: "force.example.io", Resource: "theforces"}
	all := resourcePrefix(gr) + "/"
	for _, p := range []string{customResourcePrefix(gr), boundResourcePrefix(gr, "1234")} {
		if !strings.HasPrefix(p, all) {
			t.Errorf("%s is not below the wildcard prefix %s", p, all)
		}
	}
}
