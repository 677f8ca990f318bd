package apiextensions

import (
	"net/http"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

func TestBuiltinKindKnowsOnlyClientGosKinds(t *testing.T) {
	if obj, ok := builtinKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}); !ok {
		t.Error("apps/v1 Deployment is not built in")
	} else if _, typed := obj.(*appsv1.Deployment); !typed {
		t.Errorf("apps/v1 Deployment is %T", obj)
	}
	if _, ok := builtinKind(schema.GroupVersionKind{Version: "v1", Kind: "Service"}); !ok {
		t.Error("v1 Service is not built in")
	}
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "apps", Version: "v1", Kind: "Widget"},
		{Group: "example.io", Version: "v1", Kind: "Deployment"},
	} {
		if _, ok := builtinKind(gvk); ok {
			t.Errorf("%v is built in", gvk)
		}
	}
}

func TestIsStrategicMergePatchReadsTheMediaType(t *testing.T) {
	for contentType, want := range map[string]bool{
		"application/strategic-merge-patch+json":                true,
		"application/strategic-merge-patch+json; charset=utf-8": true,
		"application/merge-patch+json":                          false,
		"":                                                      false,
	} {
		req, _ := http.NewRequest(http.MethodPatch, "/", nil)
		req.Header.Set("Content-Type", contentType)
		if got := isStrategicMergePatch(req); got != want {
			t.Errorf("%q: %v, want %v", contentType, got, want)
		}
	}
}

// nopConvertor returns its input, as the None strategy does for one version.
type nopConvertor struct{ runtime.ObjectConvertor }

func (nopConvertor) ConvertToVersion(in runtime.Object, _ runtime.GroupVersioner) (runtime.Object, error) {
	return in, nil
}

func TestStrategicPatchConvertorKeepsTheSchemaAndCopiesObjects(t *testing.T) {
	c := strategicPatchConvertor{ObjectConvertor: nopConvertor{}}
	gv := schema.GroupVersion{Group: "apps", Version: "v1"}
	ref, _ := builtinKind(gv.WithKind("Deployment"))
	if got, err := c.ConvertToVersion(ref, gv); err != nil || got != ref {
		t.Errorf("schema reference became %v (%v)", got, err)
	}
	current := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "apps/v1", "kind": "Deployment"}}
	got, err := c.ConvertToVersion(current, gv)
	if err != nil || got == runtime.Object(current) {
		t.Fatalf("current object not copied: %v", err)
	}

	// The merge keys of the Go type apply: containers merge by name.
	original := map[string]interface{}{"spec": map[string]interface{}{"template": map[string]interface{}{"spec": map[string]interface{}{
		"containers": []interface{}{map[string]interface{}{"name": "a", "image": "a:1"}, map[string]interface{}{"name": "b", "image": "b:1"}},
	}}}}
	patch := map[string]interface{}{"spec": map[string]interface{}{"template": map[string]interface{}{"spec": map[string]interface{}{
		"containers": []interface{}{map[string]interface{}{"name": "b", "image": "b:2"}},
	}}}}
	merged, err := strategicpatch.StrategicMergeMapPatch(original, patch, ref)
	if err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(merged, "spec", "template", "spec", "containers")
	if len(containers) != 2 || containers[1].(map[string]interface{})["image"] != "b:2" {
		t.Errorf("containers after the patch: %v", containers)
	}
}

func TestStrategicMergePatchIsAcceptedForTheGroupsClientGoRegisters(t *testing.T) {
	for group, want := range map[string]bool{
		"":                          true,
		"apps":                      true,
		"batch":                     true,
		"networking.k8s.io":         true,
		"rbac.authorization.k8s.io": true,
		// A .k8s.io suffix is not enough: kcp asks client-go's scheme.
		"gateway.networking.k8s.io": false,
		"example.io":                false,
	} {
		if got := acceptsStrategicMergePatch(group); got != want {
			t.Errorf("%q: %v, want %v", group, got, want)
		}
	}
}
