package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// CachedInstancesExport is the APIExport PublishCachedInstances creates.
const CachedInstancesExport = "cached-instances"

// PublishCachedInstances sets up the provider side of kcp's
// TestClusterCachedResources in the workspace of provider (a config of
// it): the instances CRD, a ClusterCachedResource of it (Ready, its
// identity hash returned), an APIResourceSchema of the CRD, an APIExport
// CachedInstancesExport whose instances are virtual, served from the
// ClusterCachedResourceEndpointSlice "instances", and that slice, valid.
func PublishCachedInstances(ctx context.Context, t testing.TB, provider *rest.Config) (instances dynamic.ResourceInterface, identityHash string) {
	t.Helper()
	instances = InstallInstances(ctx, t, provider)
	d := dynamic.NewForConfigOrDie(provider)
	create := func(gvr schema.GroupVersionResource, obj runtime.Object) {
		t.Helper()
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Resource(gvr).Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", gvr.Resource, err)
		}
	}
	get := func(gvr schema.GroupVersionResource, name string, out runtime.Object) error {
		u, err := d.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)
	}

	create(kcpclient.ClusterCachedResources, &cachev1alpha1.ClusterCachedResource{
		TypeMeta:   metav1.TypeMeta{APIVersion: cachev1alpha1.SchemeGroupVersion.String(), Kind: "ClusterCachedResource"},
		ObjectMeta: metav1.ObjectMeta{Name: "instances"},
		Spec: cachev1alpha1.ClusterCachedResourceSpec{GroupVersionResource: cachev1alpha1.GroupVersionResource{
			Group: InstancesGVR.Group, Version: InstancesGVR.Version, Resource: InstancesGVR.Resource,
		}},
	})
	cr := &cachev1alpha1.ClusterCachedResource{}
	Eventually(t, func(context.Context) error {
		if err := get(kcpclient.ClusterCachedResources, "instances", cr); err != nil {
			return err
		}
		if !cr.Status.Conditions.IsTrue(cachev1alpha1.ReplicationStarted) || cr.Status.IdentityHash == "" {
			return fmt.Errorf("status %+v", cr.Status)
		}
		return nil
	}, "ClusterCachedResource instances replicating")

	crd := InstancesCRD()
	raw, err := json.Marshal(crd.Spec.Versions[0].Schema.OpenAPIV3Schema)
	if err != nil {
		t.Fatal(err)
	}
	schemaName := "today.instances." + InstancesGVR.Group
	create(apisv1alpha1.SchemeGroupVersion.WithResource("apiresourceschemas"), &apisv1alpha1.APIResourceSchema{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIResourceSchema"},
		ObjectMeta: metav1.ObjectMeta{Name: schemaName},
		Spec: apisv1alpha1.APIResourceSchemaSpec{Group: crd.Spec.Group, Names: crd.Spec.Names, Scope: crd.Spec.Scope, Versions: []apisv1alpha1.APIResourceVersion{{
			Name: InstancesGVR.Version, Served: true, Storage: true, Schema: runtime.RawExtension{Raw: raw},
		}}},
	})
	create(apisv1alpha2.SchemeGroupVersion.WithResource("apiexports"), &apisv1alpha2.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: CachedInstancesExport},
		Spec: apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{
			Group: InstancesGVR.Group, Name: InstancesGVR.Resource, Schema: schemaName,
			Storage: apisv1alpha2.ResourceSchemaStorage{Virtual: &apisv1alpha2.ResourceSchemaStorageVirtual{
				Reference:    apisv1alpha2.TypedLocalObjectReference{APIGroup: ptr.To(cachev1alpha1.GroupName), Kind: "ClusterCachedResourceEndpointSlice", Name: "instances"},
				IdentityHash: cr.Status.IdentityHash,
			}},
		}}},
	})
	create(kcpclient.ClusterCachedResourceEndpointSlices, &cachev1alpha1.ClusterCachedResourceEndpointSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: cachev1alpha1.SchemeGroupVersion.String(), Kind: "ClusterCachedResourceEndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: "instances"},
		Spec: cachev1alpha1.ClusterCachedResourceEndpointSliceSpec{
			ClusterCachedResource: cachev1alpha1.ClusterCachedResourceReference{Name: "instances"},
			APIExport:             cachev1alpha1.ExportBindingReference{Name: CachedInstancesExport},
		},
	})
	Eventually(t, func(context.Context) error {
		slice := &cachev1alpha1.ClusterCachedResourceEndpointSlice{}
		if err := get(kcpclient.ClusterCachedResourceEndpointSlices, "instances", slice); err != nil {
			return err
		}
		for _, c := range []conditionsv1alpha1.ConditionType{cachev1alpha1.ClusterCachedResourceValid, cachev1alpha1.APIExportValid} {
			if !slice.Status.Conditions.IsTrue(c) {
				return fmt.Errorf("condition %s not True: %+v", c, slice.Status)
			}
		}
		return nil
	}, "endpoint slice instances valid")
	return instances, cr.Status.IdentityHash
}

// BindCachedInstances binds the provider's CachedInstancesExport in the
// workspace of consumer and waits until instances are in its discovery,
// read-only (get, list, watch, as the replication view serves them), and
// in its OpenAPI v3 paths.
func BindCachedInstances(ctx context.Context, t testing.TB, consumer *rest.Config, providerPath string) {
	t.Helper()
	b := &apisv1alpha2.APIBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "cached-instances"},
		Spec: apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{
			Path: providerPath, Name: CachedInstancesExport,
		}}},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
	if err != nil {
		t.Fatal(err)
	}
	bindings := dynamic.NewForConfigOrDie(consumer).Resource(apisv1alpha2.SchemeGroupVersion.WithResource("apibindings"))
	Eventually(t, func(ctx context.Context) error {
		_, err := bindings.Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}, "create APIBinding")
	disc := discovery.NewDiscoveryClientForConfigOrDie(consumer)
	Eventually(t, func(context.Context) error {
		list, err := disc.ServerResourcesForGroupVersion(InstancesGVR.GroupVersion().String())
		if err != nil {
			return err
		}
		for _, r := range list.APIResources {
			if r.Name == InstancesGVR.Resource {
				if !slices.Equal(r.Verbs, []string{"get", "list", "watch"}) {
					return fmt.Errorf("verbs %v, want get, list, watch", r.Verbs)
				}
				return nil
			}
		}
		return fmt.Errorf("no %s in %+v", InstancesGVR.Resource, list.APIResources)
	}, "instances in the consumer's discovery")
	paths, err := disc.OpenAPIV3().Paths()
	if err != nil {
		t.Fatalf("OpenAPI v3 paths: %v", err)
	}
	if _, ok := paths["apis/"+InstancesGVR.GroupVersion().String()]; !ok {
		t.Errorf("OpenAPI v3 paths lack apis/%s", InstancesGVR.GroupVersion())
	}
}

// VirtualWatch records the events of a watch of instances.
type VirtualWatch struct {
	mu     sync.Mutex
	events []watch.Event
}

// WatchInstances watches instances through config until the test ends.
func WatchInstances(ctx context.Context, t testing.TB, config *rest.Config) *VirtualWatch {
	t.Helper()
	w, err := dynamic.NewForConfigOrDie(config).Resource(InstancesGVR).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch instances: %v", err)
	}
	t.Cleanup(w.Stop)
	v := &VirtualWatch{}
	go func() {
		for e := range w.ResultChan() {
			v.mu.Lock()
			v.events = append(v.events, e)
			v.mu.Unlock()
		}
	}()
	return v
}

// Saw tells whether the watch delivered an event of type typ for the
// instance name, shown in cluster.
func (v *VirtualWatch) Saw(typ watch.EventType, name string, cluster logicalcluster.Name) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	var seen []string
	for _, e := range v.events {
		u, ok := e.Object.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		if e.Type == typ && u.GetName() == name && u.GetAnnotations()[logicalcluster.AnnotationKey] == string(cluster) {
			return nil
		}
		seen = append(seen, fmt.Sprintf("%s %s in %s", e.Type, u.GetName(), u.GetAnnotations()[logicalcluster.AnnotationKey]))
	}
	return fmt.Errorf("no %s of %s in %s among %v", typ, name, cluster, seen)
}

// RequireVirtualInstance waits until get and list of instances through
// consumer (a config of the consumer workspace, cluster) show exactly
// want, the provider's object, as kcp's verifyListAndGet: the same but for
// server-set metadata, with the consumer's cluster as its only annotation.
func RequireVirtualInstance(t testing.TB, consumer *rest.Config, cluster logicalcluster.Name, want *unstructured.Unstructured) {
	t.Helper()
	expected := normalizeVirtual(want.Object)
	expected["metadata"].(map[string]interface{})["annotations"] = map[string]interface{}{logicalcluster.AnnotationKey: string(cluster)}
	instances := dynamic.NewForConfigOrDie(consumer).Resource(InstancesGVR)
	Eventually(t, func(ctx context.Context) error {
		list, err := instances.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%d instances", len(list.Items))
		}
		if got := normalizeVirtual(list.Items[0].Object); !equalJSON(got, expected) {
			return fmt.Errorf("listed %v, want %v", got, expected)
		}
		got, err := instances.Get(ctx, want.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n := normalizeVirtual(got.Object); !equalJSON(n, expected) {
			return fmt.Errorf("got %v, want %v", n, expected)
		}
		return nil
	}, "the consumer in %s lists and gets the provider's instance", cluster)
}

// normalizeVirtual drops what servers set, as kcp's test does.
func normalizeVirtual(obj map[string]interface{}) map[string]interface{} {
	out := runtime.DeepCopyJSON(obj)
	if meta, ok := out["metadata"].(map[string]interface{}); ok {
		for _, k := range []string{"creationTimestamp", "resourceVersion", "selfLink", "uid", "generation", "managedFields"} {
			delete(meta, k)
		}
	}
	return out
}

func equalJSON(a, b map[string]interface{}) bool {
	aj, _ := json.Marshal(a)
	bj, _ := json.Marshal(b)
	return string(aj) == string(bj)
}

// RequireConflictingCRDRefused creates the instances CRD in a workspace
// that binds instances (config): kcp creates it and leaves its names not
// accepted; here the create is refused, naming the binding.
func RequireConflictingCRDRefused(ctx context.Context, t testing.TB, config *rest.Config) {
	t.Helper()
	crds := apiextensionsclient.NewForConfigOrDie(config).ApiextensionsV1().CustomResourceDefinitions()
	_, err := crds.Create(ctx, InstancesCRD(), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "APIBinding cached-instances") {
		t.Errorf("create a CRD of the bound instances: %v, want 422 naming the binding", err)
	}
}
