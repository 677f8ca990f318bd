package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"github.com/shardplane/shardplane/test/framework"
)

// The tests of this file are the attacks of one tenant on another through
// CustomResourceDefinitions: the same CRD name with other versions, and CRDs
// that claim the shard's own APIs.

const forceGroup = "force.example.io"

// forceCRD defines theforces.force.example.io with the given versions, the
// first one the storage version.
func forceCRD(versions ...string) *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "theforces." + forceGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: forceGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "theforces", Singular: "theforce", Kind: "TheForce", ListKind: "TheForceList"},
			Scope: apiextensionsv1.NamespaceScoped,
		},
	}
	for i, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: i == 0,
			Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", XPreserveUnknownFields: &preserve,
			}},
		})
	}
	return crd
}

// forces returns the client of theforces in one version of a cluster's
// "default" namespace.
func (e crdEnv) forces(version string) dynamic.ResourceInterface {
	return e.dynamic.Resource(schema.GroupVersionResource{Group: forceGroup, Version: version, Resource: "theforces"}).Namespace(metav1.NamespaceDefault)
}

// createForce creates a TheForce, retrying while its CRD is not served yet.
func createForce(ctx context.Context, t *testing.T, e crdEnv, version, name string, owner *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": forceGroup + "/" + version, "kind": "TheForce",
		"spec": map[string]interface{}{"side": version},
	}}
	u.SetName(name)
	if owner != nil {
		u.SetOwnerReferences([]metav1.OwnerReference{{
			APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID(),
		}})
	}
	return createWidget(ctx, t, e.forces(version), u)
}

// requireCollected deletes owner and waits until the garbage collector has
// deleted dependent.
func requireCollected(ctx context.Context, t *testing.T, e crdEnv, version string, owner, dependent *unstructured.Unstructured) {
	t.Helper()
	if err := e.forces(version).Delete(ctx, owner.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete owner %s in %s: %v", owner.GetName(), e.cluster, err)
	}
	waitGone(t, "dependent "+dependent.GetName()+" in "+e.cluster, func(ctx context.Context) error {
		_, err := e.forces(version).Get(ctx, dependent.GetName(), metav1.GetOptions{})
		return err
	})
}

// wildcardMetadataNames lists theforces of all clusters as metadata in one
// version and returns "<cluster>/<name>" of each.
func wildcardMetadataNames(ctx context.Context, t *testing.T, s *framework.Shard, version string) map[string]bool {
	t.Helper()
	client, err := metadata.NewForConfig(s.ClusterConfig(t, crdTestContext, "*"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := client.Resource(schema.GroupVersionResource{Group: forceGroup, Version: version, Resource: "theforces"}).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("wildcard metadata list of theforces in %s: %v", version, err)
	}
	names := map[string]bool{}
	for _, item := range list.Items {
		names[item.Annotations[clusterAnnotation]+"/"+item.Name] = true
	}
	return names
}

// TestTenantCannotStopGarbageCollectionOfAnotherByRedefiningItsCRD: tenant
// B defines the CRD that A uses under the same name but with other versions
// only. Wildcard metadata lists still return both tenants' objects, and the
// shard's garbage collector keeps collecting in A, in B, and after A's CRD
// is gone.
func TestTenantCannotStopGarbageCollectionOfAnotherByRedefiningItsCRD(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	a, b := newCRDEnv(t, s, "force-a"), newCRDEnv(t, s, "force-b")
	a.createCRD(ctx, t, forceCRD("v1"))
	ownerA := createForce(ctx, t, a, "v1", "owner", nil)
	b.createCRD(ctx, t, forceCRD("v2"))
	ownerB := createForce(ctx, t, b, "v2", "owner", nil)
	dependentB := createForce(ctx, t, b, "v2", "dependent", ownerB)
	dependentA := createForce(ctx, t, a, "v1", "dependent", ownerA)

	for _, version := range []string{"v1", "v2"} {
		names := wildcardMetadataNames(ctx, t, s, version)
		for _, want := range []string{a.cluster + "/owner", a.cluster + "/dependent", b.cluster + "/owner", b.cluster + "/dependent"} {
			if !names[want] {
				t.Errorf("wildcard metadata list in %s lacks %s (has %v)", version, want, names)
			}
		}
	}

	requireCollected(ctx, t, a, "v1", ownerA, dependentA)
	requireCollected(ctx, t, b, "v2", ownerB, dependentB)

	// Without A's CRD, only B's version is left to watch.
	if err := a.crds.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, "theforces."+forceGroup, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.EventuallyWithin(t, gcTimeout, func(ctx context.Context) error {
		if _, err := a.crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "theforces."+forceGroup, metav1.GetOptions{}); err == nil {
			return errors.New("still served")
		}
		return nil
	}, "A's CRD was not deleted")
	ownerB = createForce(ctx, t, b, "v2", "owner-2", nil)
	dependentB = createForce(ctx, t, b, "v2", "dependent-2", ownerB)
	requireCollected(ctx, t, b, "v2", ownerB, dependentB)
}

// TestWildcardListOfFullCustomResourcesIsRefused: across logical clusters a
// custom resource has no one schema, so only its metadata is served; a
// request for full objects gets a 4xx that says so, never a 500.
func TestWildcardListOfFullCustomResourcesIsRefused(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	a, b := newCRDEnv(t, s, "forcefull-a"), newCRDEnv(t, s, "forcefull-b")
	a.createCRD(ctx, t, forceCRD("v1"))
	b.createCRD(ctx, t, forceCRD("v2", "v1"))
	createForce(ctx, t, a, "v1", "light", nil)
	createForce(ctx, t, b, "v2", "dark", nil)

	all := crdEnvFor(t, s, "*")
	for _, version := range []string{"v1", "v2"} {
		_, err := all.dynamic.Resource(schema.GroupVersionResource{Group: forceGroup, Version: version, Resource: "theforces"}).List(ctx, metav1.ListOptions{})
		requireStatus(t, err, http.StatusNotAcceptable, "wildcard list of full theforces in "+version)
		if err != nil && !strings.Contains(err.Error(), "metadata") {
			t.Errorf("refusal %q does not say that only metadata is served", err)
		}
	}
	for _, accept := range []string{"", "application/json", "application/json;as=Table;g=meta.k8s.io;v=v1", "application/yaml"} {
		code, body := rawGet(ctx, t, s, "*", "/apis/"+forceGroup+"/v1/theforces", accept)
		if code != http.StatusNotAcceptable {
			t.Errorf("wildcard GET with Accept %q: HTTP %d, want 406: %s", accept, code, body)
		}
	}
	// Metadata is served, in a version only one tenant defines too, and
	// carries no field of the objects.
	code, body := rawGet(ctx, t, s, "*", "/apis/"+forceGroup+"/v2/theforces",
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json")
	if code != http.StatusOK || !strings.Contains(body, `"light"`) || !strings.Contains(body, `"dark"`) || strings.Contains(body, `"side"`) {
		t.Errorf("wildcard metadata list: HTTP %d %s, want both objects' metadata only", code, body)
	}
	// A version nobody defines is not found.
	code, _ = rawGet(ctx, t, s, "*", "/apis/"+forceGroup+"/v9/theforces", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
	if code != http.StatusNotFound {
		t.Errorf("wildcard metadata list of an undefined version: HTTP %d, want 404", code)
	}
}

// preservingCRD is a CRD of any group whose one version v1 keeps every field.
func preservingCRD(group, plural, kind string, scope apiextensionsv1.ResourceScope, annotations map[string]string) *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	nameGroup := group
	if group == "" {
		nameGroup = "core"
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + nameGroup, Annotations: annotations},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List",
			},
			Scope: scope,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
}

// TestTenantCannotClaimTheShardsOwnAPIsWithCRDs: a CRD for an API the shard
// serves itself, for one of kcp's groups, or posing as a bound CRD would
// shadow or spoof the system's APIs; each is refused with a 422 that names
// the reason, and none shows up in discovery.
func TestTenantCannotClaimTheShardsOwnAPIsWithCRDs(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	e := newCRDEnv(t, s, "reserved")
	approved := map[string]string{"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"}
	for _, tc := range []struct {
		crd  *apiextensionsv1.CustomResourceDefinition
		says string
	}{
		{preservingCRD("", "configmaps", "ConfigMap", apiextensionsv1.NamespaceScoped, nil), "served by the shard itself"},
		{preservingCRD("", "secrets", "Secret", apiextensionsv1.NamespaceScoped, nil), "served by the shard itself"},
		{preservingCRD("rbac.authorization.k8s.io", "roles", "Role", apiextensionsv1.NamespaceScoped, approved), "served by the shard itself"},
		{preservingCRD("apiextensions.k8s.io", "things", "Thing", apiextensionsv1.ClusterScoped, approved), "served by the shard itself"},
		{preservingCRD("tenancy.kcp.io", "workspaces", "Workspace", apiextensionsv1.ClusterScoped, nil), "reserved"},
		{preservingCRD("core.kcp.io", "logicalclusters", "LogicalCluster", apiextensionsv1.ClusterScoped, nil), "reserved"},
		{preservingCRD("apis.kcp.io", "apibindings", "APIBinding", apiextensionsv1.ClusterScoped, nil), "reserved"},
		{preservingCRD("topology.kcp.io", "partitions", "Partition", apiextensionsv1.ClusterScoped, nil), "reserved"},
		{preservingCRD("cache.kcp.io", "cachedobjects", "CachedObject", apiextensionsv1.ClusterScoped, nil), "reserved"},
		{preservingCRD("spoof.example.io", "bindings", "Binding", apiextensionsv1.ClusterScoped, map[string]string{"apis.kcp.io/bound-crd": ""}), "apis.kcp.io/bound-crd"},
	} {
		_, err := e.crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, tc.crd, metav1.CreateOptions{})
		requireStatus(t, err, http.StatusUnprocessableEntity, "create CRD "+tc.crd.Name)
		if err != nil && !strings.Contains(err.Error(), tc.says) {
			t.Errorf("refusal of %s: %q does not say %q", tc.crd.Name, err, tc.says)
		}
	}
	// A CRD that passes may not take the bound-CRD annotation later either.
	crd := e.createCRD(ctx, t, preservingCRD("spoof.example.io", "gadgets", "Gadget", apiextensionsv1.ClusterScoped, nil))
	crd.Annotations = map[string]string{"apis.kcp.io/bound-crd": ""}
	_, err := e.crds.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, crd, metav1.UpdateOptions{})
	requireStatus(t, err, http.StatusUnprocessableEntity, "add the bound-CRD annotation to a CRD")

	groups, err := discovery.NewDiscoveryClientForConfigOrDie(e.config).ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		// apis.kcp.io and topology.kcp.io are served natively; the refused
		// CRDs must not add groups the shard does not serve.
		if g.Name == "cache.kcp.io" {
			t.Errorf("discovery lists the refused group %s", g.Name)
		}
	}
	code, body := rawGet(ctx, t, s, e.cluster, "/api/v1/namespaces/default/configmaps", "")
	if code != http.StatusOK || !strings.Contains(body, `"kind":"ConfigMapList"`) {
		t.Errorf("built-in configmaps: HTTP %d %s", code, body)
	}
}

// TestWorkspaceCanBringKubernetesWorkloadKindsAsCRDs: kinds of Kubernetes
// groups the shard does not serve (apps Deployments, batch Jobs, core
// Services) can be defined by a workspace's CRDs, and are served, listed,
// discovered and seen by wildcard metadata lists like any custom resource,
// in that workspace only.
func TestWorkspaceCanBringKubernetesWorkloadKindsAsCRDs(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	e, other := newCRDEnv(t, s, "workloads"), newCRDEnv(t, s, "noworkloads")
	kinds := []struct {
		gvr  schema.GroupVersionResource
		kind string
	}{
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment"},
		{schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, "Job"},
		{schema.GroupVersionResource{Version: "v1", Resource: "services"}, "Service"},
	}
	for _, k := range kinds {
		crd := preservingCRD(k.gvr.Group, k.gvr.Resource, k.kind, apiextensionsv1.NamespaceScoped, nil)
		crd.Spec.Versions[0].Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
		e.createCRD(ctx, t, crd)
	}
	for _, k := range kinds {
		obj := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": k.gvr.GroupVersion().String(), "kind": k.kind,
			"metadata": map[string]interface{}{"name": "web"},
			"spec":     map[string]interface{}{"note": k.kind},
		}}
		r := e.dynamic.Resource(k.gvr).Namespace(metav1.NamespaceDefault)
		createWidget(ctx, t, r, obj)
		got, err := r.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get %s: %v", k.kind, err)
		}
		if note, _, _ := unstructured.NestedString(got.Object, "spec", "note"); note != k.kind || got.GetKind() != k.kind {
			t.Errorf("%s read back as %s with spec.note %q", k.kind, got.GetKind(), note)
		}
		if err := unstructured.SetNestedField(got.Object, "Ready", "status", "phase"); err != nil {
			t.Fatal(err)
		}
		if got, err = r.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Errorf("update status of %s: %v", k.kind, err)
		} else if phase, _, _ := unstructured.NestedString(got.Object, "status", "phase"); phase != "Ready" {
			t.Errorf("%s status.phase = %q after a status update", k.kind, phase)
		}
		list, err := r.List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 {
			t.Errorf("list %s: %v (%d items)", k.gvr.Resource, err, len(list.Items))
		}
		_, err = other.dynamic.Resource(k.gvr).Namespace(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		requireStatus(t, err, http.StatusNotFound, "list "+k.gvr.Resource+" in a workspace without the CRD")
	}

	_, resources, err := discovery.NewDiscoveryClientForConfigOrDie(e.config).ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	discovered := map[string]bool{}
	for _, rl := range resources {
		for _, r := range rl.APIResources {
			discovered[rl.GroupVersion+"/"+r.Name] = true
		}
	}
	for _, k := range kinds {
		if want := k.gvr.GroupVersion().String() + "/" + k.gvr.Resource; !discovered[want] {
			t.Errorf("aggregated discovery lacks %s", want)
		}
	}
	if !discovered["v1/configmaps"] {
		t.Error("aggregated discovery lost the built-in configmaps")
	}
	code, body := rawGet(ctx, t, s, e.cluster, "/api/v1", "application/json")
	if code != http.StatusOK || !strings.Contains(body, `"name":"services"`) || !strings.Contains(body, `"name":"configmaps"`) {
		t.Errorf("/api/v1: HTTP %d, want services and configmaps: %s", code, body)
	}

	meta, err := metadata.NewForConfig(s.ClusterConfig(t, crdTestContext, "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		list, err := meta.Resource(k.gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Errorf("wildcard metadata list of %s: %v", k.gvr.Resource, err)
			continue
		}
		found := false
		for _, item := range list.Items {
			found = found || (item.Name == "web" && item.Annotations[clusterAnnotation] == e.cluster)
		}
		if !found {
			t.Errorf("wildcard metadata list of %s lacks web of %s", k.gvr.Resource, e.cluster)
		}
	}
}

// TestKubectlCreatesAndGetsServicesDefinedByACRD: with a services.core CRD,
// kubectl finds Service in the workspace's discovery, creates one from a
// manifest and lists it next to the built-in kinds.
func TestKubectlCreatesAndGetsServicesDefinedByACRD(t *testing.T) {
	requireKubectl(t)
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	e := newCRDEnv(t, s, "kubectl-svc")
	e.createCRD(ctx, t, preservingCRD("", "services", "Service", apiextensionsv1.NamespaceScoped, nil))
	const manifest = `apiVersion: v1
kind: Service
metadata:
  name: frontend
  namespace: default
spec:
  ports:
  - port: 80
`
	server := "--server=" + s.ClusterURL(t, e.cluster, "")
	framework.EventuallyWithin(t, eventually, func(ctx context.Context) error {
		out, stderr, err := s.Kubectl(ctx, manifest, "--context", crdTestContext, server, "create", "-f", "-")
		if err != nil {
			return fmt.Errorf("%w: %s %s", err, out, stderr)
		}
		return nil
	}, "kubectl create service")
	got := kubectl(ctx, t, s, "", "--context", crdTestContext, server, "get", "services,configmaps", "-n", "default", "-o", "name")
	if !strings.Contains(got, "service/frontend") || !strings.Contains(got, "configmap/") {
		t.Errorf("kubectl get services,configmaps: %q, want service/frontend and the configmaps", got)
	}
}
