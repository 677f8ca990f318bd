package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/shardplane/shardplane/test/framework"
)

// The CRD tests act as shard-admin (system:masters), so that they depend on
// nothing but the CRD machinery of the shard.
const crdTestContext = "shard-base"

const crdGroup = "e2e.shardplane.dev"

var widgetsGVR = schema.GroupVersionResource{Group: crdGroup, Version: "v1", Resource: "widgets"}

// widgetCRD is a namespaced CRD with status and scale subresources, printer
// columns, defaults, an enum, a CEL rule and a selectable field.
func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + crdGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: crdGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList", ShortNames: []string{"wdg"},
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
					Scale: &apiextensionsv1.CustomResourceSubresourceScale{
						SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas",
					},
				},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Size", Type: "string", JSONPath: ".spec.size"},
					{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas"},
				},
				SelectableFields: []apiextensionsv1.SelectableField{{JSONPath: ".spec.size"}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:        "object",
					Description: "Widget is a thing of cluster-specific shape.",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {
							Type: "object",
							XValidations: apiextensionsv1.ValidationRules{{
								Rule: "self.replicas <= 10", Message: "replicas must be at most 10",
							}},
							Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"size": {
									Type: "string", Description: "Size says how big the widget is.",
									Enum:    []apiextensionsv1.JSON{{Raw: []byte(`"small"`)}, {Raw: []byte(`"large"`)}},
									Default: &apiextensionsv1.JSON{Raw: []byte(`"small"`)},
								},
								"replicas": {Type: "integer", Default: &apiextensionsv1.JSON{Raw: []byte(`1`)}},
								"labels": {
									Type:                 "object",
									AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}},
								},
								"free": {Type: "object", XPreserveUnknownFields: ptr.To(true)},
							},
						},
						"status": {
							Type:       "object",
							Properties: map[string]apiextensionsv1.JSONSchemaProps{"replicas": {Type: "integer"}},
						},
					},
				}},
			}},
		},
	}
}

// gadgetWidgetCRD defines the same name as widgetCRD, cluster-scoped and
// with another schema.
func gadgetWidgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets." + crdGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: crdGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"count": {Type: "integer", Minimum: ptr.To(0.0)},
						}},
					},
				}},
			}},
		},
	}
}

// crdEnv is one logical cluster with clients for CRDs and custom resources.
type crdEnv struct {
	cluster string
	config  *rest.Config
	crds    apiextensionsclient.Interface
	dynamic dynamic.Interface
}

// newCRDEnv returns a fresh logical cluster with a "default" namespace.
func newCRDEnv(t *testing.T, s *framework.Shard, prefix string) crdEnv {
	t.Helper()
	e := crdEnvFor(t, s, framework.UniqueClusterName(prefix))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceDefault}}
	_, err := newKubeClient(t, e.config).CoreV1().Namespaces().Create(testContext(t), ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace default in %s: %v", e.cluster, err)
	}
	return e
}

func crdEnvFor(t *testing.T, s *framework.Shard, cluster string) crdEnv {
	t.Helper()
	cfg := s.ClusterConfig(t, crdTestContext, cluster)
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return crdEnv{cluster: cluster, config: cfg, crds: crds, dynamic: dyn}
}

// createCRD creates crd and waits until it is Established.
func (e crdEnv) createCRD(ctx context.Context, t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	if _, err := e.crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD %s in %s: %v", crd.Name, e.cluster, err)
	}
	return e.waitEstablished(ctx, t, crd.Name)
}

func (e crdEnv) waitEstablished(ctx context.Context, t *testing.T, name string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var got *apiextensionsv1.CustomResourceDefinition
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, eventually, true, func(ctx context.Context) (bool, error) {
		var err error
		got, err = e.crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return conditionTrue(got, apiextensionsv1.Established), nil
	})
	if err != nil {
		t.Fatalf("CRD %s in %s never became Established: %v (conditions %+v)", name, e.cluster, err, got.Status.Conditions)
	}
	return got
}

func conditionTrue(crd *apiextensionsv1.CustomResourceDefinition, c apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, cond := range crd.Status.Conditions {
		if cond.Type == c {
			return cond.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

func (e crdEnv) widgets(ns string) dynamic.ResourceInterface {
	if ns == "" {
		return e.dynamic.Resource(widgetsGVR)
	}
	return e.dynamic.Resource(widgetsGVR).Namespace(ns)
}

func widget(name string, spec map[string]interface{}) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": crdGroup + "/v1",
		"kind":       "Widget",
		"metadata":   map[string]interface{}{"name": name},
		"spec":       spec,
	}}
}

// createWidget creates a widget, retrying while the new namespace or CRD
// settles.
func createWidget(ctx context.Context, t *testing.T, r dynamic.ResourceInterface, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	var created *unstructured.Unstructured
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, eventually, true, func(ctx context.Context) (bool, error) {
		created, lastErr = r.Create(ctx, obj, metav1.CreateOptions{})
		if apierrors.IsNotFound(lastErr) {
			return false, nil
		}
		return lastErr == nil, lastErr
	})
	if err != nil {
		t.Fatalf("create widget %s: %v (last error: %v)", obj.GetName(), err, lastErr)
	}
	return created
}

func TestCRDsOfTheSameNameInTwoClustersServeTheirOwnSchema(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	a, b := newCRDEnv(t, s, "crd-a"), newCRDEnv(t, s, "crd-b")

	crdA := a.createCRD(ctx, t, widgetCRD())
	crdB := b.createCRD(ctx, t, gadgetWidgetCRD())
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{crdA, crdB} {
		if !conditionTrue(crd, apiextensionsv1.NamesAccepted) {
			t.Errorf("CRD in %s: NamesAccepted is not True: %+v", crd.Annotations[clusterAnnotation], crd.Status.Conditions)
		}
	}
	requireCluster(t, crdA, a.cluster)
	requireCluster(t, crdB, b.cluster)

	// Each cluster validates and prunes with its own schema and scope.
	wa := createWidget(ctx, t, a.widgets("default"), widget("w", map[string]interface{}{"replicas": int64(2), "count": int64(5)}))
	if _, found, _ := unstructured.NestedFieldNoCopy(wa.Object, "spec", "count"); found {
		t.Errorf("cluster %s kept spec.count, which only the other cluster's schema has", a.cluster)
	}
	if size, _, _ := unstructured.NestedString(wa.Object, "spec", "size"); size != "small" {
		t.Errorf("cluster %s: spec.size = %q, want default %q", a.cluster, size, "small")
	}
	wb := createWidget(ctx, t, b.widgets(""), widget("w", map[string]interface{}{"count": int64(5), "replicas": int64(2)}))
	if _, found, _ := unstructured.NestedFieldNoCopy(wb.Object, "spec", "replicas"); found {
		t.Errorf("cluster %s kept spec.replicas, which only the other cluster's schema has", b.cluster)
	}
	requireCluster(t, wa, a.cluster)
	requireCluster(t, wb, b.cluster)

	_, err := b.widgets("").Create(ctx, widget("negative", map[string]interface{}{"count": int64(-1)}), metav1.CreateOptions{})
	requireStatus(t, err, http.StatusUnprocessableEntity, "create widget with spec.count -1 in "+b.cluster)

	// A third cluster has no such resource.
	c := newCRDEnv(t, s, "crd-c")
	_, err = c.widgets("default").List(ctx, metav1.ListOptions{})
	requireStatus(t, err, http.StatusNotFound, "list widgets in a cluster without the CRD")
}

func TestCustomResourceCRUDWithStatusAndScale(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	e := newCRDEnv(t, s, "crd-crud")
	e.createCRD(ctx, t, widgetCRD())
	r := e.widgets("default")

	created := createWidget(ctx, t, r, widget("one", map[string]interface{}{
		"replicas": int64(3), "unknown": "pruned", "free": map[string]interface{}{"anything": "kept"},
	}))
	if _, found, _ := unstructured.NestedFieldNoCopy(created.Object, "spec", "unknown"); found {
		t.Error("unknown field spec.unknown was not pruned")
	}
	if v, _, _ := unstructured.NestedString(created.Object, "spec", "free", "anything"); v != "kept" {
		t.Errorf("x-kubernetes-preserve-unknown-fields: spec.free.anything = %q, want %q", v, "kept")
	}

	got, err := r.Get(ctx, "one", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if err := unstructured.SetNestedField(got.Object, "large", "spec", "size"); err != nil {
		t.Fatal(err)
	}
	updated, err := r.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.GetGeneration() != 2 {
		t.Errorf("generation after spec update = %d, want 2", updated.GetGeneration())
	}

	// The status subresource changes status only.
	if err := unstructured.SetNestedField(updated.Object, int64(2), "status", "replicas"); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(updated.Object, int64(9), "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	st, err := r.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if n, _, _ := unstructured.NestedInt64(st.Object, "status", "replicas"); n != 2 {
		t.Errorf("status.replicas = %d, want 2", n)
	}
	if n, _, _ := unstructured.NestedInt64(st.Object, "spec", "replicas"); n != 3 {
		t.Errorf("status update changed spec.replicas to %d", n)
	}

	// Scale reads and writes spec.replicas.
	scale, err := r.Get(ctx, "one", metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatalf("get scale: %v", err)
	}
	if n, _, _ := unstructured.NestedInt64(scale.Object, "spec", "replicas"); n != 3 {
		t.Errorf("scale spec.replicas = %d, want 3", n)
	}
	if n, _, _ := unstructured.NestedInt64(scale.Object, "status", "replicas"); n != 2 {
		t.Errorf("scale status.replicas = %d, want 2", n)
	}
	patch := []byte(`{"spec":{"replicas":5}}`)
	if _, err := r.Patch(ctx, "one", types.MergePatchType, patch, metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatalf("patch scale: %v", err)
	}
	got, err = r.Get(ctx, "one", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); n != 5 {
		t.Errorf("spec.replicas after scale = %d, want 5", n)
	}

	// Selectable fields.
	createWidget(ctx, t, r, widget("two", map[string]interface{}{}))
	list, err := r.List(ctx, metav1.ListOptions{FieldSelector: "spec.size=small"})
	if err != nil {
		t.Fatalf("list by field selector: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].GetName() != "two" {
		t.Errorf("spec.size=small selected %d items, want only \"two\"", len(list.Items))
	}

	if err := r.Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err = r.Get(ctx, "one", metav1.GetOptions{})
	requireStatus(t, err, http.StatusNotFound, "get after delete")

	if err := r.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("delete collection: %v", err)
	}
	list, err = r.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("list after delete collection: %d items, %v", len(list.Items), err)
	}
}

func TestInvalidCustomResourcesAreRejectedWithFieldPaths(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	e := newCRDEnv(t, s, "crd-invalid")
	e.createCRD(ctx, t, widgetCRD())
	r := e.widgets("default")
	createWidget(ctx, t, r, widget("valid", map[string]interface{}{}))

	for _, tc := range []struct {
		name string
		spec map[string]interface{}
		want string
	}{
		{"enum", map[string]interface{}{"size": "huge"}, "spec.size"},
		{"type", map[string]interface{}{"replicas": "three"}, "spec.replicas"},
		{"cel", map[string]interface{}{"replicas": int64(11)}, "replicas must be at most 10"},
		{"map-values", map[string]interface{}{"labels": map[string]interface{}{"a": int64(1)}}, "spec.labels.a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := r.Create(ctx, widget("bad-"+tc.name, tc.spec), metav1.CreateOptions{})
			requireStatus(t, err, http.StatusUnprocessableEntity, "create invalid widget")
			if err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}

	_, err := e.widgets("missing").Create(ctx, widget("w", map[string]interface{}{}), metav1.CreateOptions{})
	requireStatus(t, err, http.StatusNotFound, "create widget in a namespace that does not exist")
}

func TestServerSideApplyOfCustomResourceTracksManagers(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	e := newCRDEnv(t, s, "crd-ssa")
	e.createCRD(ctx, t, widgetCRD())
	r := e.widgets("default")

	apply := func(manager string, spec map[string]interface{}, force bool) (*unstructured.Unstructured, error) {
		obj := widget("applied", spec)
		obj.SetNamespace("default")
		var out *unstructured.Unstructured
		var err error
		_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, eventually, true, func(ctx context.Context) (bool, error) {
			out, err = r.Apply(ctx, "applied", obj, metav1.ApplyOptions{FieldManager: manager, Force: force})
			return !apierrors.IsNotFound(err), nil
		})
		return out, err
	}
	out, err := apply("alice", map[string]interface{}{"replicas": int64(2)}, false)
	if err != nil {
		t.Fatalf("apply as alice: %v", err)
	}
	managers := map[string]bool{}
	for _, mf := range out.GetManagedFields() {
		managers[mf.Manager] = true
	}
	if !managers["alice"] {
		t.Errorf("managedFields %v lack manager alice", out.GetManagedFields())
	}
	_, err = apply("bob", map[string]interface{}{"replicas": int64(4)}, false)
	requireStatus(t, err, http.StatusConflict, "apply of a field owned by another manager")
	out, err = apply("bob", map[string]interface{}{"replicas": int64(4)}, true)
	if err != nil {
		t.Fatalf("forced apply as bob: %v", err)
	}
	if n, _, _ := unstructured.NestedInt64(out.Object, "spec", "replicas"); n != 4 {
		t.Errorf("spec.replicas = %d after forced apply, want 4", n)
	}
}

func TestCRDWithSeveralVersionsServesEachWithNoneConversion(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	e := newCRDEnv(t, s, "crd-versions")
	crd := gadgetWidgetCRD()
	v2 := crd.Spec.Versions[0]
	v2.Name, v2.Storage = "v2", false
	crd.Spec.Versions = append(crd.Spec.Versions, v2)
	e.createCRD(ctx, t, crd)

	createWidget(ctx, t, e.widgets(""), widget("multi", map[string]interface{}{"count": int64(3)}))
	got, err := e.dynamic.Resource(widgetsGVR.GroupVersion().WithResource("widgets")).Get(ctx, "multi", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetAPIVersion() != crdGroup+"/v1" {
		t.Errorf("apiVersion = %q", got.GetAPIVersion())
	}
	v2GVR := schema.GroupVersionResource{Group: crdGroup, Version: "v2", Resource: "widgets"}
	got, err = e.dynamic.Resource(v2GVR).Get(ctx, "multi", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get through v2: %v", err)
	}
	if got.GetAPIVersion() != crdGroup+"/v2" {
		t.Errorf("apiVersion through v2 = %q, want %s/v2", got.GetAPIVersion(), crdGroup)
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "spec", "count"); n != 3 {
		t.Errorf("spec.count through v2 = %d, want 3", n)
	}
}

func TestDeletingCRDDeletesItsInstancesFirst(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	e, other := newCRDEnv(t, s, "crd-del"), newCRDEnv(t, s, "crd-keep")
	e.createCRD(ctx, t, widgetCRD())
	other.createCRD(ctx, t, widgetCRD())
	for i := 0; i < 3; i++ {
		createWidget(ctx, t, e.widgets("default"), widget(fmt.Sprintf("w%d", i), map[string]interface{}{}))
	}
	createWidget(ctx, t, other.widgets("default"), widget("survivor", map[string]interface{}{}))

	if err := e.crds.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, "widgets."+crdGroup, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete CRD: %v", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, eventually, true, func(ctx context.Context) (bool, error) {
		_, err := e.crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "widgets."+crdGroup, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("CRD was not deleted: %v", err)
	}
	_, err = e.widgets("default").List(ctx, metav1.ListOptions{})
	requireStatus(t, err, http.StatusNotFound, "list widgets after the CRD is gone")

	// Re-creating the CRD shows that no instance outlived it.
	e.createCRD(ctx, t, widgetCRD())
	list, err := e.widgets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list after re-creating the CRD: %v", err)
	}
	if len(list.Items) != 0 {
		t.Errorf("%d widgets outlived their CRD", len(list.Items))
	}
	if _, err := other.widgets("default").Get(ctx, "survivor", metav1.GetOptions{}); err != nil {
		t.Errorf("widget of another cluster: %v", err)
	}
}

// TestWildcardListOfCustomResourcesSpansClustersWithDifferentSchemas: across
// clusters custom resources are served as metadata, whatever each cluster's
// schema and scope.
func TestWildcardListOfCustomResourcesSpansClustersWithDifferentSchemas(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	a, b := newCRDEnv(t, s, "crd-wa"), newCRDEnv(t, s, "crd-wb")
	a.createCRD(ctx, t, widgetCRD())
	b.createCRD(ctx, t, gadgetWidgetCRD())
	createWidget(ctx, t, a.widgets("default"), widget("from-a", map[string]interface{}{"replicas": int64(2)}))
	createWidget(ctx, t, b.widgets(""), widget("from-b", map[string]interface{}{"count": int64(7)}))

	all, err := metadata.NewForConfig(s.ClusterConfig(t, crdTestContext, "*"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := all.Resource(widgetsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("wildcard metadata list: %v", err)
	}
	seen := map[string]bool{}
	for _, item := range list.Items {
		cluster := item.Annotations[clusterAnnotation]
		if cluster == "" {
			t.Errorf("wildcard item %s/%s has no %s annotation", item.Namespace, item.Name, clusterAnnotation)
		}
		seen[cluster+"/"+item.Name] = true
	}
	for _, want := range []string{a.cluster + "/from-a", b.cluster + "/from-b"} {
		if !seen[want] {
			t.Errorf("wildcard metadata list lacks %s", want)
		}
	}

	// Watch from the list's resource version sees a new object of either cluster.
	w, err := all.Resource(widgetsGVR).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatalf("wildcard metadata watch: %v", err)
	}
	defer w.Stop()
	createWidget(ctx, t, b.widgets(""), widget("later", map[string]interface{}{}))
	select {
	case ev := <-w.ResultChan():
		obj, ok := ev.Object.(*metav1.PartialObjectMetadata)
		if !ok || obj.Name != "later" || obj.Annotations[clusterAnnotation] != b.cluster {
			t.Errorf("wildcard watch event %s %v, want ADDED later of %s", ev.Type, ev.Object, b.cluster)
		}
	case <-time.After(eventually):
		t.Error("wildcard watch saw no event")
	}

	_, err = crdEnvFor(t, s, "*").widgets("").List(ctx, metav1.ListOptions{})
	requireStatus(t, err, http.StatusNotAcceptable, "list of full objects across all clusters")
	_, err = crdEnvFor(t, s, "*").widgets("default").Create(ctx, widget("x", map[string]interface{}{}), metav1.CreateOptions{})
	requireStatus(t, err, http.StatusMethodNotAllowed, "create across all clusters")
}

// discoveryHas tells whether the cluster's aggregated discovery lists the
// widgets resource.
func discoveryHas(t *testing.T, cfg *rest.Config) (bool, error) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	_, resources, err := dc.ServerGroupsAndResources()
	if err != nil {
		return false, err
	}
	for _, rl := range resources {
		if rl.GroupVersion != crdGroup+"/v1" {
			continue
		}
		for _, r := range rl.APIResources {
			if r.Name == "widgets" {
				return true, nil
			}
		}
	}
	return false, nil
}

// rawGet fetches a path of a cluster as shard-admin.
func rawGet(ctx context.Context, t *testing.T, s *framework.Shard, cluster, path, accept string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.ClusterURL(t, cluster, path), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.KubeconfigToken(t, "shard-admin"))
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := s.HTTPClient(t).Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 64<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}

func TestDiscoveryAndOpenAPIShowCRDsOfTheirClusterOnly(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	e, other := newCRDEnv(t, s, "crd-disc"), newCRDEnv(t, s, "crd-nodisc")
	other.createCRD(ctx, t, gadgetWidgetCRD()) // a cluster with other CRDs
	other.createCRD(ctx, t, &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things.other.shardplane.dev"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "other.shardplane.dev", Scope: apiextensionsv1.ClusterScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "things", Singular: "thing", Kind: "Thing", ListKind: "ThingList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}}}},
		},
	})

	start := time.Now()
	if _, err := e.crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, widgetCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, eventually, true, func(context.Context) (bool, error) {
		return discoveryHas(t, e.config)
	})
	if err != nil {
		t.Fatalf("discovery never showed widgets: %v", err)
	}
	t.Logf("discovery showed the CRD %v after its creation", time.Since(start).Round(time.Millisecond))

	// Legacy discovery, group and version documents.
	code, body := rawGet(ctx, t, s, e.cluster, "/apis", "application/json")
	if code != http.StatusOK || !strings.Contains(body, `"name":"`+crdGroup+`"`) {
		t.Errorf("/apis: HTTP %d, lacks %s:\n%.300s", code, crdGroup, body)
	}
	if strings.Contains(body, "other.shardplane.dev") {
		t.Errorf("/apis of %s lists the group of another cluster", e.cluster)
	}
	code, body = rawGet(ctx, t, s, e.cluster, "/apis/"+crdGroup+"/v1", "")
	if code != http.StatusOK || !strings.Contains(body, `"widgets/scale"`) {
		t.Errorf("/apis/%s/v1: HTTP %d:\n%.300s", crdGroup, code, body)
	}
	code, _ = rawGet(ctx, t, s, e.cluster, "/apis/"+crdGroup, "")
	if code != http.StatusOK {
		t.Errorf("/apis/%s: HTTP %d", crdGroup, code)
	}

	// OpenAPI v2 and v3.
	code, body = rawGet(ctx, t, s, e.cluster, "/openapi/v2", "application/json")
	if code != http.StatusOK || !strings.Contains(body, `"dev.shardplane.e2e.v1.Widget"`) {
		t.Errorf("/openapi/v2: HTTP %d, no Widget definition", code)
	}
	if strings.Contains(body, "dev.shardplane.other.v1.Thing") {
		t.Error("/openapi/v2 contains a definition of another cluster's CRD")
	}
	code, body = rawGet(ctx, t, s, e.cluster, "/openapi/v3", "")
	var root struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &root) != nil {
		t.Fatalf("/openapi/v3: HTTP %d:\n%.300s", code, body)
	}
	gv, ok := root.Paths["apis/"+crdGroup+"/v1"]
	if !ok {
		t.Fatalf("/openapi/v3 lacks apis/%s/v1", crdGroup)
	}
	if _, ok := root.Paths["apis/other.shardplane.dev/v1"]; ok {
		t.Error("/openapi/v3 lists a group version of another cluster")
	}
	wantPrefix := "/clusters/" + e.cluster + "/openapi/v3/apis/" + crdGroup + "/v1?hash="
	if !strings.HasPrefix(gv.ServerRelativeURL, wantPrefix) {
		t.Errorf("serverRelativeURL = %q, want prefix %q", gv.ServerRelativeURL, wantPrefix)
	}
	code, body = rawGet(ctx, t, s, e.cluster, strings.TrimPrefix(gv.ServerRelativeURL, "/clusters/"+e.cluster), "application/json")
	if code != http.StatusOK || !strings.Contains(body, "Size says how big the widget is.") {
		t.Errorf("OpenAPI v3 of %s/v1: HTTP %d, lacks the field description:\n%.300s", crdGroup, code, body)
	}

	// Deletion drops the CRD from discovery and OpenAPI.
	if err := e.crds.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, "widgets."+crdGroup, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, eventually, true, func(context.Context) (bool, error) {
		has, err := discoveryHas(t, e.config)
		return err == nil && !has, nil
	})
	if err != nil {
		t.Fatalf("discovery still shows widgets after deletion: %v", err)
	}
	if _, body := rawGet(ctx, t, s, e.cluster, "/openapi/v3", ""); strings.Contains(body, crdGroup) {
		t.Error("/openapi/v3 still lists the deleted CRD")
	}
	if _, body := rawGet(ctx, t, s, e.cluster, "/openapi/v2", "application/json"); strings.Contains(body, "dev.shardplane.e2e.v1.Widget") {
		t.Error("/openapi/v2 still contains the deleted CRD")
	}
}

func TestKubectlShowsPrinterColumnsAndExplainsCustomResources(t *testing.T) {
	requireKubectl(t)
	s := sharedShard(t)
	ctx := testContext(t)
	e := newCRDEnv(t, s, "crd-kubectl")
	e.createCRD(ctx, t, widgetCRD())
	server := serverFlag(t, s, e.cluster)
	kc := func(stdin string, args ...string) string {
		t.Helper()
		return kubectl(ctx, t, s, stdin, append([]string{"--context=" + crdTestContext, server}, args...)...)
	}
	const manifest = `apiVersion: e2e.shardplane.dev/v1
kind: Widget
metadata:
  name: shown
  namespace: default
spec:
  size: large
  replicas: 4
`
	var out string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, eventually, true, func(ctx context.Context) (bool, error) {
		var err error
		out, _, err = s.Kubectl(ctx, manifest, "--context="+crdTestContext, server, "apply", "--server-side", "-f", "-")
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("kubectl apply never succeeded: %v: %s", err, out)
	}
	out = kc("", "get", "widgets", "-n", "default")
	for _, want := range []string{"SIZE", "REPLICAS", "shown", "large", "4"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get widgets lacks %q:\n%s", want, out)
		}
	}
	out = kc("", "get", "wdg", "-n", "default", "-o", "name")
	if strings.TrimSpace(out) != "widget.e2e.shardplane.dev/shown" {
		t.Errorf("kubectl get by short name: %q", out)
	}
	out = kc("", "explain", "widgets.spec.size")
	if !strings.Contains(out, "Size says how big the widget is.") {
		t.Errorf("kubectl explain lacks the field description:\n%s", out)
	}
	kc("", "scale", "widget", "shown", "-n", "default", "--replicas=6")
	out = kc("", "get", "widget", "shown", "-n", "default", "-o", "jsonpath={.spec.replicas}")
	if out != "6" {
		t.Errorf("spec.replicas after kubectl scale = %q, want 6", out)
	}
}

// TestFirstRequestCostOfManyClustersWithCRDs measures memory and latency of
// serving the first request of N logical clusters, each with its own CRD.
// It only logs; set SHARDPLANE_E2E_CRD_CLUSTERS to choose N (default 20).
func TestFirstRequestCostOfManyClustersWithCRDs(t *testing.T) {
	n := 20
	if v := os.Getenv("SHARDPLANE_E2E_CRD_CLUSTERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("SHARDPLANE_E2E_CRD_CLUSTERS=%q: %v", v, err)
		}
	}
	s := framework.StartShard(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()

	metric := func(name string) float64 {
		// A heap profile request with gc=1 collects garbage first, so the
		// heap numbers are live objects.
		rawGet(ctx, t, s, "system:admin", "/debug/pprof/heap?gc=1", "")
		// /metrics is shard-level: below /clusters/ it answers 501.
		v, _ := s.Metrics(ctx, t).Value(name, nil)
		return v
	}
	mb := func(v float64) string { return fmt.Sprintf("%.1f MiB", v/(1<<20)) }
	clusters := make([]crdEnv, n)
	for i := range clusters {
		clusters[i] = crdEnvFor(t, s, fmt.Sprintf("cost-%05d", i))
	}
	// Warm up the server (default namespaces, clients).
	createWidget(ctx, t, func() dynamic.ResourceInterface {
		w := newCRDEnv(t, s, "warm")
		w.createCRD(ctx, t, widgetCRD())
		return w.widgets("default")
	}(), widget("warm", map[string]interface{}{}))
	rss0, heap0, gr0 := metric("process_resident_memory_bytes"), metric("go_memstats_heap_inuse_bytes"), metric("go_goroutines")

	start := time.Now()
	parallel(n, 8, func(i int) {
		e := clusters[i]
		if _, err := e.crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, widgetCRD(), metav1.CreateOptions{}); err != nil {
			t.Errorf("create CRD in %s: %v", e.cluster, err)
		}
	})
	parallel(n, 8, func(i int) { clusters[i].waitEstablished(ctx, t, "widgets."+crdGroup) })
	createTime := time.Since(start)
	rss1, heap1, gr1 := metric("process_resident_memory_bytes"), metric("go_memstats_heap_inuse_bytes"), metric("go_goroutines")

	latencies := make([]time.Duration, n)
	start = time.Now()
	parallel(n, 8, func(i int) {
		t0 := time.Now()
		if _, err := clusters[i].widgets("").List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("first list in %s: %v", clusters[i].cluster, err)
		}
		latencies[i] = time.Since(t0)
	})
	serveTime := time.Since(start)
	rss2, heap2, gr2 := metric("process_resident_memory_bytes"), metric("go_memstats_heap_inuse_bytes"), metric("go_goroutines")
	var sum, max time.Duration
	for _, l := range latencies {
		sum += l
		if l > max {
			max = l
		}
	}
	t.Logf("%d clusters, one CRD each", n)
	kb := func(v float64) string { return fmt.Sprintf("%.0f KiB", v/(1<<10)) }
	t.Logf("create + establish all CRDs: %v; RSS %s -> %s, live heap %s -> %s (%s per CRD), goroutines %.0f -> %.0f",
		createTime.Round(time.Millisecond), mb(rss0), mb(rss1), mb(heap0), mb(heap1), kb((heap1-heap0)/float64(n)), gr0, gr1)
	t.Logf("first list in every cluster (8 in parallel): %v total, mean %v, max %v; RSS %s -> %s, live heap %s -> %s (%s per served CRD), goroutines %.0f -> %.0f",
		serveTime.Round(time.Millisecond), (sum / time.Duration(n)).Round(time.Millisecond), max.Round(time.Millisecond),
		mb(rss1), mb(rss2), mb(heap1), mb(heap2), kb((heap2-heap1)/float64(n)), gr1, gr2)
}

// parallel runs f(0..n-1) with at most width goroutines.
func parallel(n, width int, f func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, width)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			f(i)
		}(i)
	}
	wg.Wait()
}
