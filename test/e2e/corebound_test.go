package e2e

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestACoreGroupBoundResourceIsServedUnderAPIV1: an export of a resource of
// the core group (APIResourceSchema group "") is served in its consumers
// under /api/v1, as kcp serves it, beside the built-in kinds.
func TestACoreGroupBoundResourceIsServedUnderAPIV1(t *testing.T) {
	t.Parallel()
	e := startWorkspaceShard(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "corebound")
	provider := readyWorkspace(ctx, t, kcp, org.path(), "provider", nil)
	consumer := readyWorkspace(ctx, t, kcp, org.path(), "consumer", nil)

	crd := widgetCRD()
	crd.Spec.Group = ""
	crd.Spec.Names.Plural, crd.Spec.Names.Singular, crd.Spec.Names.Kind, crd.Spec.Names.ListKind = "gadgets", "gadget", "Gadget", "GadgetList"
	crd.Spec.Names.ShortNames = nil
	publish(ctx, t, kcp, provider.path(), "gadgets", schemaFromCRD(t, "v1.gadgets.core", crd))
	bindAndWait(ctx, t, kcp, consumer.path(), "gadgets", provider.path(), "gadgets")
	ensureDefaultNamespace(ctx, t, e, consumer.path())

	resources, err := e.kube(t, kcpAdmin, consumer.path()).Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, r := range resources.APIResources {
		listed = listed || r.Name == "gadgets"
	}
	if !listed {
		t.Errorf("/api/v1 does not list gadgets")
	}
	gadgets := crdEnvFor(t, e.s, consumer.path()).dynamic.Resource(schema.GroupVersionResource{Version: "v1", Resource: "gadgets"}).Namespace("default")
	g := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "v1", "kind": "Gadget", "metadata": map[string]interface{}{"name": "g-1"}}}
	if _, err := gadgets.Create(ctx, g, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create a gadget under /api/v1: %v", err)
	}
	list, err := gadgets.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].GetName() != "g-1" {
		t.Fatalf("gadgets under /api/v1: %v (err %v), want g-1", list, err)
	}
}
