package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

// schemaFromCRD is the APIResourceSchema that publishes what crd defines.
func schemaFromCRD(t *testing.T, name string, crd *apiextensionsv1.CustomResourceDefinition) *apisv1alpha1.APIResourceSchema {
	t.Helper()
	s := &apisv1alpha1.APIResourceSchema{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIResourceSchema"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       apisv1alpha1.APIResourceSchemaSpec{Group: crd.Spec.Group, Names: crd.Spec.Names, Scope: crd.Spec.Scope},
	}
	for _, v := range crd.Spec.Versions {
		raw, err := json.Marshal(v.Schema.OpenAPIV3Schema)
		if err != nil {
			t.Fatal(err)
		}
		av := apisv1alpha1.APIResourceVersion{
			Name: v.Name, Served: v.Served, Storage: v.Storage, Schema: runtime.RawExtension{Raw: raw},
			AdditionalPrinterColumns: v.AdditionalPrinterColumns, SelectableFields: v.SelectableFields,
		}
		if v.Subresources != nil {
			av.Subresources = *v.Subresources
		}
		s.Spec.Versions = append(s.Spec.Versions, av)
	}
	if len(s.Spec.Versions) > 1 {
		s.Spec.Conversion = &apisv1alpha1.CustomResourceConversion{Strategy: apisv1alpha1.NoneConverter}
	}
	return s
}

// publish creates schema and an export of it in cluster and returns the
// export's identity hash.
func publish(ctx context.Context, t *testing.T, c *kcpREST, cluster, export string, schema *apisv1alpha1.APIResourceSchema) string {
	t.Helper()
	if err := c.create(ctx, cluster, apiResourceSchemasGVR, schema, &apisv1alpha1.APIResourceSchema{}); err != nil {
		t.Fatalf("create APIResourceSchema %s in %s: %v", schema.Name, cluster, err)
	}
	e := &apisv1alpha2.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: export},
		Spec: apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{
			Name: schema.Spec.Names.Plural, Group: schema.Spec.Group, Schema: schema.Name,
		}}},
	}
	if err := c.create(ctx, cluster, apiExportsGVR, e, &apisv1alpha2.APIExport{}); err != nil {
		t.Fatalf("create APIExport %s in %s: %v", export, cluster, err)
	}
	return waitForIdentity(t, c, cluster, export, corev1.ConditionTrue).Status.IdentityHash
}

// bindAndWait binds path:export in cluster as name and waits for Bound.
func bindAndWait(ctx context.Context, t *testing.T, c *kcpREST, cluster, name, path, export string) *apisv1alpha2.APIBinding {
	t.Helper()
	if err := c.create(ctx, cluster, apiBindingsGVR, bindingTo(name, path, export), &apisv1alpha2.APIBinding{}); err != nil {
		t.Fatalf("create APIBinding %s in %s: %v", name, cluster, err)
	}
	return waitForBinding(t, c, cluster, name, "Bound", bound)
}

func ensureDefaultNamespace(ctx context.Context, t *testing.T, e *wsEnv, cluster string) {
	t.Helper()
	_, err := e.kube(t, kcpAdmin, cluster).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceDefault}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace default in %s: %v", cluster, err)
	}
}

func names(items []unstructured.Unstructured) []string {
	out := make([]string, 0, len(items))
	for _, i := range items {
		out = append(out, i.GetName())
	}
	sort.Strings(out)
	return out
}

// listNames lists r until it has exactly want and fails otherwise. The
// watch cache may trail a write briefly, and so may the informers that tell
// the handler a binding is Bound: a 404 right after binding is retried (as
// after creating a CRD upstream), any other error is not.
func listNames(ctx context.Context, t *testing.T, r dynamic.ResourceInterface, what string, want ...string) {
	t.Helper()
	sort.Strings(want)
	var got []string
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, eventually, true, func(ctx context.Context) (bool, error) {
		list, err := r.List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			lastErr = err
			return false, nil
		}
		if err != nil {
			return false, err
		}
		lastErr = nil
		got = names(list.Items)
		return strings.Join(got, ",") == strings.Join(want, ","), nil
	})
	if err != nil {
		if lastErr != nil {
			err = lastErr
		}
		t.Fatalf("%s: listed %v, want %v: %v", what, got, want, err)
	}
}

// TestBoundResourcesServeLikeCRDsAndStayApartByIdentity: an export in one
// workspace bound in two others serves there like a CRD (defaults, CEL,
// subresources, discovery, kubectl explain), each workspace with its own
// objects; a second export of the same group and resource has another
// identity and other objects, also in identity-qualified wildcard lists;
// no CRD can take a bound resource; a new schema keeps old objects
// readable; it survives a restart; and deleting a binding deletes its
// objects.
func TestBoundResourcesServeLikeCRDsAndStayApartByIdentity(t *testing.T) {
	t.Parallel()
	e := startWorkspaceShard(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "bound")
	provider := readyWorkspace(ctx, t, kcp, org.path(), "provider", nil)
	rival := readyWorkspace(ctx, t, kcp, org.path(), "rival", nil)
	b := readyWorkspace(ctx, t, kcp, org.path(), "b", nil)
	c := readyWorkspace(ctx, t, kcp, org.path(), "c", nil)
	d := readyWorkspace(ctx, t, kcp, org.path(), "d", nil)

	identity := publish(ctx, t, kcp, provider.path(), "widgets", schemaFromCRD(t, "v1.widgets."+crdGroup, widgetCRD()))
	rivalIdentity := publish(ctx, t, kcp, rival.path(), "widgets", schemaFromCRD(t, "v1.widgets."+crdGroup, widgetCRD()))
	if identity == rivalIdentity {
		t.Fatalf("two exports share identity %s", identity)
	}
	bindAndWait(ctx, t, kcp, b.path(), "widgets", provider.path(), "widgets")
	bindAndWait(ctx, t, kcp, c.path(), "widgets", provider.path(), "widgets")
	bindAndWait(ctx, t, kcp, d.path(), "widgets", rival.path(), "widgets")
	for _, w := range []ws{b, c, d} {
		ensureDefaultNamespace(ctx, t, e, w.path())
	}
	inB, inC, inD := crdEnvFor(t, e.s, b.path()), crdEnvFor(t, e.s, c.path()), crdEnvFor(t, e.s, d.path())

	t.Run("CRUDAndWatchAreIsolatedPerWorkspace", func(t *testing.T) {
		w, err := inC.widgets("").Watch(ctx, metav1.ListOptions{})
		for err != nil && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			w, err = inC.widgets("").Watch(ctx, metav1.ListOptions{})
		}
		if err != nil {
			t.Fatalf("watch widgets in c: %v", err)
		}
		defer w.Stop()

		created := createWidget(ctx, t, inB.widgets("default"), widget("b-1", map[string]interface{}{"replicas": int64(2)}))
		if size, _, _ := unstructured.NestedString(created.Object, "spec", "size"); size != "small" {
			t.Errorf("spec.size = %q, want the schema's default small", size)
		}
		if got := created.GetAnnotations()[logicalcluster.AnnotationKey]; got != b.cluster() {
			t.Errorf("kcp.io/cluster = %q, want %s", got, b.cluster())
		}
		_, err = inB.widgets("default").Create(ctx, widget("too-many", map[string]interface{}{"replicas": int64(11)}), metav1.CreateOptions{})
		requireAPIError(t, err, 422, "create a widget breaking the CEL rule", "replicas must be at most 10")

		createWidget(ctx, t, inC.widgets("default"), widget("c-1", map[string]interface{}{}))
		listNames(ctx, t, inB.widgets(""), "widgets in b", "b-1")
		listNames(ctx, t, inC.widgets(""), "widgets in c", "c-1")
		if _, err := inC.widgets("default").Get(ctx, "b-1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("b's widget read in c: %v", err)
		}
		select {
		case ev := <-w.ResultChan():
			obj, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || ev.Type != watch.Added || obj.GetName() != "c-1" {
				t.Errorf("first watch event in c = %s %v, want ADDED c-1", ev.Type, ev.Object)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("no watch event for c-1 in c")
		}

		// Status and scale subresources.
		current, err := inB.widgets("default").Get(ctx, "b-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := unstructured.SetNestedField(current.Object, int64(2), "status", "replicas"); err != nil {
			t.Fatal(err)
		}
		if _, err := inB.widgets("default").UpdateStatus(ctx, current, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update status: %v", err)
		}
		scale, err := inB.widgets("default").Get(ctx, "b-1", metav1.GetOptions{}, "scale")
		if err != nil {
			t.Fatalf("get scale: %v", err)
		}
		if replicas, _, _ := unstructured.NestedInt64(scale.Object, "status", "replicas"); replicas != 2 {
			t.Errorf("scale status.replicas = %d, want 2", replicas)
		}
	})

	t.Run("AnotherExportOfTheSameResourceIsDisjoint", func(t *testing.T) {
		createWidget(ctx, t, inD.widgets("default"), widget("d-1", map[string]interface{}{}))
		listNames(ctx, t, inD.widgets(""), "widgets in d", "d-1")
		listNames(ctx, t, inB.widgets(""), "widgets in b", "b-1")
	})

	wildcard := func(identity string) dynamic.NamespaceableResourceInterface {
		all := crdEnvFor(t, e.s, "*")
		return all.dynamic.Resource(schema.GroupVersionResource{Group: crdGroup, Version: "v1", Resource: "widgets:" + identity})
	}
	checkWildcard := func(t *testing.T) {
		t.Helper()
		listNames(ctx, t, wildcard(identity), "wildcard by the provider's identity", "b-1", "c-1")
		listNames(ctx, t, wildcard(rivalIdentity), "wildcard by the rival's identity", "d-1")
		list, err := wildcard(identity).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range list.Items {
			want := map[string]string{"b-1": b.cluster(), "c-1": c.cluster()}[item.GetName()]
			if got := item.GetAnnotations()[logicalcluster.AnnotationKey]; got != want {
				t.Errorf("%s: kcp.io/cluster = %q, want %q", item.GetName(), got, want)
			}
			if _, found, _ := unstructured.NestedString(item.Object, "spec", "size"); !found {
				t.Errorf("%s: wildcard by identity serves full objects, got %v", item.GetName(), item.Object)
			}
		}
	}
	t.Run("ASecondBindingOfALockedResourceReportsNamingConflicts", func(t *testing.T) {
		// b binds provider's widgets; the rival's widgets are the same group
		// and resource of another identity.
		if err := kcp.create(ctx, b.path(), apiBindingsGVR, bindingTo("rival-widgets", rival.path(), "widgets"), &apisv1alpha2.APIBinding{}); err != nil {
			t.Fatalf("create the second binding: %v", err)
		}
		second := waitForBinding(t, kcp, b.path(), "rival-widgets", "NamingConflicts", func(x *apisv1alpha2.APIBinding) bool {
			return conditionReason(x, apisv1alpha2.BindingUpToDate, corev1.ConditionFalse, apisv1alpha2.NamingConflictsReason)
		})
		if second.Status.Phase == apisv1alpha2.APIBindingPhaseBound || len(second.Status.BoundResources) != 0 {
			t.Errorf("the second binding binds: phase %q, boundResources %+v", second.Status.Phase, second.Status.BoundResources)
		}
		listNames(ctx, t, inB.widgets(""), "widgets in b beside the conflicting binding", "b-1")
		if err := kcp.delete(ctx, b.path(), apiBindingsGVR, "rival-widgets"); err != nil {
			t.Fatalf("delete the second binding: %v", err)
		}
	})
	t.Run("WildcardByIdentityListsOnlyThatExport", func(t *testing.T) {
		checkWildcard(t)
		_, err := wildcard(strings.Repeat("0", 64)).List(ctx, metav1.ListOptions{})
		requireAPIError(t, err, 404, "wildcard list by an unknown identity")
		// Tenants may not list across workspaces.
		cfg := e.config(t, "user-1", "*")
		user, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = user.Resource(schema.GroupVersionResource{Group: crdGroup, Version: "v1", Resource: "widgets:" + identity}).List(ctx, metav1.ListOptions{})
		requireAPIError(t, err, 403, "wildcard list by a tenant")
	})

	t.Run("ACRDCannotTakeABoundResource", func(t *testing.T) {
		_, err := inB.crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, widgetCRD(), metav1.CreateOptions{})
		requireAPIError(t, err, 422, "create a CRD for the bound resource", "APIBinding widgets")
	})

	t.Run("KubectlSeesTheBoundResource", func(t *testing.T) {
		requireKubectl(t)
		server := serverFlag(t, e.s, b.path())
		out := kubectl(ctx, t, e.s, "", server, "api-resources", "--api-group="+crdGroup)
		if !strings.Contains(out, "widgets") || !strings.Contains(out, "Widget") {
			t.Errorf("kubectl api-resources lacks widgets:\n%s", out)
		}
		out = kubectl(ctx, t, e.s, "", server, "explain", "widgets.spec.size")
		if !strings.Contains(out, "Size says how big the widget is") {
			t.Errorf("kubectl explain widgets.spec.size:\n%s", out)
		}
		out = kubectl(ctx, t, e.s, "", server, "get", "widgets", "-n", "default")
		if !strings.Contains(out, "REPLICAS") || !strings.Contains(out, "b-1") {
			t.Errorf("kubectl get widgets lacks the printer columns:\n%s", out)
		}
	})

	t.Run("ANewSchemaKeepsStoredObjectsReadable", func(t *testing.T) {
		crd := widgetCRD()
		v2 := crd.Spec.Versions[0]
		v2.Name = "v2"
		crd.Spec.Versions[0].Storage = false
		crd.Spec.Versions = append(crd.Spec.Versions, v2)
		next := schemaFromCRD(t, "v2.widgets."+crdGroup, crd)
		created := &apisv1alpha1.APIResourceSchema{}
		if err := kcp.create(ctx, provider.path(), apiResourceSchemasGVR, next, created); err != nil {
			t.Fatalf("create schema v2: %v", err)
		}
		err := wait.PollUntilContextTimeout(ctx, wsPoll, wsTimeout, true, func(ctx context.Context) (bool, error) {
			export := &apisv1alpha2.APIExport{}
			if err := kcp.get(ctx, provider.path(), apiExportsGVR, "widgets", export); err != nil {
				return false, err
			}
			export.Spec.Resources[0].Schema = next.Name
			err := kcp.update(ctx, provider.path(), apiExportsGVR, "widgets", export, &apisv1alpha2.APIExport{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("update export: %v", err)
		}
		binding := waitForBinding(t, kcp, b.path(), "widgets", "moved to schema v2", func(b *apisv1alpha2.APIBinding) bool {
			return len(b.Status.BoundResources) == 1 && b.Status.BoundResources[0].Schema.UID == string(created.UID)
		})
		if got := strings.Join(binding.Status.BoundResources[0].StorageVersions, ","); got != "v1,v2" {
			t.Errorf("storageVersions = %s, want v1,v2", got)
		}
		v2Widgets := inB.dynamic.Resource(schema.GroupVersionResource{Group: crdGroup, Version: "v2", Resource: "widgets"}).Namespace("default")
		var got *unstructured.Unstructured
		framework.EventuallyEvery(t, 100*time.Millisecond, eventually, func(ctx context.Context) error {
			var err error
			got, err = v2Widgets.Get(ctx, "b-1", metav1.GetOptions{})
			return err
		}, "read b-1 in v2")
		if got.GetAPIVersion() != crdGroup+"/v2" {
			t.Errorf("apiVersion = %s, want v2", got.GetAPIVersion())
		}
		v2Widget := widget("b-2", map[string]interface{}{})
		v2Widget.SetAPIVersion(crdGroup + "/v2")
		createWidget(ctx, t, v2Widgets, v2Widget)
		if _, err := inB.widgets("default").Get(ctx, "b-2", metav1.GetOptions{}); err != nil {
			t.Errorf("read b-2 in v1: %v", err)
		}
	})

	e.s.Restart(t)
	e.waitForRootBootstrap(t)

	t.Run("EverythingSurvivesRestart", func(t *testing.T) {
		listNames(ctx, t, inB.widgets(""), "widgets in b", "b-1", "b-2")
		listNames(ctx, t, inC.widgets(""), "widgets in c", "c-1")
		listNames(ctx, t, inD.widgets(""), "widgets in d", "d-1")
		listNames(ctx, t, wildcard(rivalIdentity), "wildcard by the rival's identity", "d-1")
	})

	t.Run("DeletingTheExportLeavesBoundWorkspacesServing", func(t *testing.T) {
		if err := kcp.delete(ctx, rival.path(), apiExportsGVR, "widgets"); err != nil {
			t.Fatalf("delete the rival's export: %v", err)
		}
		b := waitForBinding(t, kcp, d.path(), "widgets", "says the export is gone", func(b *apisv1alpha2.APIBinding) bool {
			return conditionReason(b, apisv1alpha2.APIExportValid, corev1.ConditionFalse, apisv1alpha2.APIExportNotFoundReason)
		})
		if b.Status.Phase != apisv1alpha2.APIBindingPhaseBound || len(b.Status.BoundResources) != 1 {
			t.Errorf("binding after its export was deleted: %+v", b.Status)
		}
		listNames(ctx, t, inD.widgets(""), "widgets in d after the export is gone", "d-1")
		createWidget(ctx, t, inD.widgets("default"), widget("d-2", map[string]interface{}{}))
	})

	t.Run("DeletingABindingDeletesItsObjects", func(t *testing.T) {
		// A finalizer of our own holds the binding while it is deleted:
		// meanwhile discovery offers no create (as for a deleted CRD, as in
		// kcp) and a create is refused.
		const hold = "e2e.shardplane.dev/hold"
		setHold := func(on bool) {
			t.Helper()
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				b := &apisv1alpha2.APIBinding{}
				if err := kcp.get(ctx, c.path(), apiBindingsGVR, "widgets", b); err != nil {
					return err
				}
				b.Finalizers = slices.DeleteFunc(b.Finalizers, func(f string) bool { return f == hold })
				if on {
					b.Finalizers = append(b.Finalizers, hold)
				}
				b.APIVersion, b.Kind = apisv1alpha2.SchemeGroupVersion.String(), "APIBinding"
				return kcp.update(ctx, c.path(), apiBindingsGVR, "widgets", b, &apisv1alpha2.APIBinding{})
			})
			if err != nil {
				t.Fatalf("hold the binding %v: %v", on, err)
			}
		}
		setHold(true)
		if err := kcp.delete(ctx, c.path(), apiBindingsGVR, "widgets"); err != nil {
			t.Fatalf("delete binding: %v", err)
		}
		discovery := e.kube(t, kcpAdmin, c.path()).Discovery()
		framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
			list, err := discovery.ServerResourcesForGroupVersion(widgetsGVR.GroupVersion().String())
			if err != nil {
				return err
			}
			for _, r := range list.APIResources {
				if r.Name == "widgets" {
					if slices.Contains(r.Verbs, "create") || !slices.Contains(r.Verbs, "list") {
						return fmt.Errorf("widgets verbs %v", r.Verbs)
					}
					return nil
				}
			}
			return fmt.Errorf("widgets not listed: %+v", list.APIResources)
		}, "discovery of a binding being deleted lists widgets without create")
		_, err := inC.widgets("default").Create(ctx, widget("late", map[string]interface{}{}), metav1.CreateOptions{})
		if err == nil {
			t.Errorf("created a widget while its binding is deleted")
		}
		setHold(false)
		framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
			if err := kcp.get(ctx, c.path(), apiBindingsGVR, "widgets", &apisv1alpha2.APIBinding{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("answered %v", err)
			}
			return nil
		}, "binding never went away")
		_, err = inC.widgets("").List(ctx, metav1.ListOptions{})
		requireAPIError(t, err, 404, "list widgets in c after unbinding")
		listNames(ctx, t, wildcard(identity), "wildcard by the provider's identity", "b-1", "b-2")
		// Binding again starts empty.
		bindAndWait(ctx, t, kcp, c.path(), "widgets-again", provider.path(), "widgets")
		listNames(ctx, t, inC.widgets(""), "widgets in c after binding again")
	})
}
