package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/features"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

// TestCacheAPIsAreNotServedWithoutTheirGate: the shared shard runs
// without kcp's CacheAPIs gate, and cache.kcp.io is not there, as in kcp.
func TestCacheAPIsAreNotServedWithoutTheirGate(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	kube := newKubeClient(t, s.ClusterConfig(t, "base", "root"))
	err := kube.Discovery().RESTClient().Get().AbsPath("/apis", cachev1alpha1.GroupName).Do(ctx).Error()
	if !apierrors.IsNotFound(err) {
		t.Fatalf("discovery of %s without the gate: %v, want 404", cachev1alpha1.GroupName, err)
	}
	groups, err := kube.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		if g.Name == cachev1alpha1.GroupName {
			t.Errorf("discovery lists %s without the gate", g.Name)
		}
	}
}

// TestClusterCachedResourceReplicatesItsWorkspacesObjects is kcp's
// TestCacheServerReplicationAPI and TestReplicationWithWildcardListing on
// one shard with the CacheAPIs gate: a ClusterCachedResource for a CRD's
// instances, with its own identity secret and a label selector, reports
// its identity hash, the three conditions and 7 local and 7 cached
// objects; the copies are in the cache server below the shard and the
// workspace; changes and deletions follow (5 after two deletions); an
// endpoint slice publishes the view URL, where the copies are read by who
// has the verb on apiexports/content of the slice's export and writes are
// refused; the default identity secret is kcp-system/<name>; a
// namespaced resource is not ResourceValid; and once the
// ClusterCachedResource is deleted its copies are gone.
func TestClusterCachedResourceReplicatesItsWorkspacesObjects(t *testing.T) {
	t.Parallel()
	e := &wsEnv{s: framework.StartShard(t,
		framework.WithTokenUsers(framework.TokenUser{Name: "user-1", Groups: []string{"team-1"}}),
		framework.WithArgs(features.EnableFlag(features.CacheAPIs)))}
	e.waitForRootBootstrap(t)
	ctx := testContext(t)
	org := e.readyOrg(ctx, t, "cached")
	cluster := logicalcluster.Name(org.cluster())
	instances := framework.InstallInstances(ctx, t, e.config(t, kcpAdmin, org.path()))
	selected := map[string]string{framework.InstancesPartOfLabel: "instances"}
	for i := 1; i <= 7; i++ {
		if _, err := instances.Create(ctx, framework.Instance(fmt.Sprintf("web-server-%d", i), "basic", selected), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create instance: %v", err)
		}
	}
	// Not selected: never copied.
	if _, err := instances.Create(ctx, framework.Instance("unlabelled", "basic", nil), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create instance: %v", err)
	}

	kube := e.kube(t, kcpAdmin, org.path())
	const identity = "identity-a"
	if _, err := kube.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "identity"}, StringData: map[string]string{"key": identity},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create identity secret: %v", err)
	}
	kcp := e.kcp(t, kcpAdmin)
	cr := &cachev1alpha1.ClusterCachedResource{
		TypeMeta:   metav1.TypeMeta{APIVersion: cachev1alpha1.SchemeGroupVersion.String(), Kind: "ClusterCachedResource"},
		ObjectMeta: metav1.ObjectMeta{Name: "instances"},
		Spec: cachev1alpha1.ClusterCachedResourceSpec{
			GroupVersionResource: cachev1alpha1.GroupVersionResource{Group: framework.InstancesGVR.Group, Version: framework.InstancesGVR.Version, Resource: framework.InstancesGVR.Resource},
			Identity:             &cachev1alpha1.Identity{SecretRef: &cachev1alpha1.SecretReference{Name: "identity", Namespace: "default"}},
			LabelSelector:        &metav1.LabelSelector{MatchLabels: selected},
		},
	}
	if err := kcp.create(ctx, org.path(), kcpclient.ClusterCachedResources, cr, &cachev1alpha1.ClusterCachedResource{}); err != nil {
		t.Fatalf("create ClusterCachedResource: %v", err)
	}
	sum := sha256.Sum256([]byte(identity))
	wantHash := hex.EncodeToString(sum[:])
	waitForCounts := func(local, cached int) *cachev1alpha1.ClusterCachedResource {
		t.Helper()
		got := &cachev1alpha1.ClusterCachedResource{}
		framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
			if err := kcp.get(ctx, org.path(), kcpclient.ClusterCachedResources, "instances", got); err != nil {
				return err
			}
			if c := got.Status.ResourceCounts; c == nil || c.Local != local || c.Cache != cached {
				return fmt.Errorf("status %+v", got.Status)
			}
			return nil
		}, "resourceCounts local %d cache %d", local, cached)
		return got
	}
	got := waitForCounts(7, 7)
	if got.Status.IdentityHash != wantHash {
		t.Errorf("identityHash %q, want the SHA-256 of the secret's key %q", got.Status.IdentityHash, wantHash)
	}
	for _, c := range []conditionsv1alpha1.ConditionType{cachev1alpha1.ClusterCachedResourceIdentityValid, cachev1alpha1.ClusterCachedResourceValid, cachev1alpha1.ReplicationStarted} {
		if !got.Status.Conditions.IsTrue(c) {
			t.Errorf("condition %s not True: %+v", c, got.Status.Conditions)
		}
	}
	if got.Status.Phase != cachev1alpha1.ClusterCachedResourcePhaseReady {
		t.Errorf("phase %q, want Ready", got.Status.Phase)
	}
	if !slices.Contains(got.Finalizers, cachev1alpha1.ClusterCachedResourceFinalizer) {
		t.Errorf("finalizers %v, want %s", got.Finalizers, cachev1alpha1.ClusterCachedResourceFinalizer)
	}

	// The copies are in the cache server, below this shard and workspace,
	// under the ClusterCachedResource's identity.
	copies := cachedObjects(t, e.s, cluster)
	list, err := copies.List(ctx, metav1.ListOptions{LabelSelector: cacheclient.CachedResourceLabel + "=instances"})
	if err != nil {
		t.Fatalf("list copies in the cache server: %v", err)
	}
	if len(list.Items) != 7 {
		t.Fatalf("%d copies in the cache server, want 7", len(list.Items))
	}
	for _, item := range list.Items {
		if h := item.GetAnnotations()[cacheclient.IdentityHashAnnotation]; h != wantHash {
			t.Errorf("copy %s has identity hash %q, want %q", item.GetName(), h, wantHash)
		}
	}

	// An endpoint slice publishes the view of the copies.
	slice := &cachev1alpha1.ClusterCachedResourceEndpointSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: cachev1alpha1.SchemeGroupVersion.String(), Kind: "ClusterCachedResourceEndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: "instances"},
		Spec: cachev1alpha1.ClusterCachedResourceEndpointSliceSpec{
			ClusterCachedResource: cachev1alpha1.ClusterCachedResourceReference{Name: "instances"},
			APIExport:             cachev1alpha1.ExportBindingReference{Name: "compute"},
		},
	}
	if err := kcp.create(ctx, org.path(), kcpclient.ClusterCachedResourceEndpointSlices, slice, &cachev1alpha1.ClusterCachedResourceEndpointSlice{}); err != nil {
		t.Fatalf("create endpoint slice: %v", err)
	}
	wantURL := e.s.BaseURL(t) + "/services/replication/" + string(cluster) + "/instances"
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		if err := kcp.get(ctx, org.path(), kcpclient.ClusterCachedResourceEndpointSlices, "instances", slice); err != nil {
			return err
		}
		if eps := slice.Status.ClusterCachedResourceEndpoints; len(eps) != 1 || eps[0].URL != wantURL {
			return fmt.Errorf("status %+v", slice.Status)
		}
		return nil
	}, "endpoint slice lists %s", wantURL)
	view := viewClient(t, e.config(t, kcpAdmin, org.path()), wantURL)
	requireViewNames(ctx, t, view, 7)
	if _, err := view.Create(ctx, framework.Instance("forged", "basic", selected), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("create through the view: %v, want 403", err)
	}
	user1View := viewClient(t, e.config(t, "user-1", org.path()), wantURL)
	if _, err := user1View.List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list through the view by a user without access: %v, want 403", err)
	}
	// As kcp's, the view asks for the verb on apiexports/content of the
	// slice's export, in the export's workspace; nothing else.
	createClusterRole(ctx, t, kube, "compute-content", rbacv1.PolicyRule{
		APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexports/content"}, ResourceNames: []string{"compute"}, Verbs: []string{"list"},
	})
	bindClusterRole(ctx, t, kube, "compute-content", "compute-content", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "user-1"})
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		_, err := user1View.List(ctx, metav1.ListOptions{})
		return err
	}, "user-1 lists through the view with list on apiexports/content compute")
	if _, err := user1View.Get(ctx, "web-server-1", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("get through the view by a user who may only list the export's content: %v, want 403", err)
	}

	// An update reaches the copy; deletions remove copies.
	one, err := instances.Get(ctx, "web-server-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(one.Object, "premium", "spec", "tier"); err != nil {
		t.Fatal(err)
	}
	if _, err := instances.Update(ctx, one, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update instance: %v", err)
	}
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		obj, err := view.Get(ctx, "web-server-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if tier, _, _ := unstructured.NestedString(obj.Object, "spec", "tier"); tier != "premium" {
			return fmt.Errorf("tier %q", tier)
		}
		return nil
	}, "the view shows the updated instance")
	for _, name := range []string{"web-server-2", "web-server-3"} {
		if err := instances.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete instance: %v", err)
		}
	}
	waitForCounts(5, 5)
	requireViewNames(ctx, t, view, 5)

	// The default identity secret; a namespaced resource is refused.
	defaulted := &cachev1alpha1.ClusterCachedResource{
		TypeMeta:   metav1.TypeMeta{APIVersion: cachev1alpha1.SchemeGroupVersion.String(), Kind: "ClusterCachedResource"},
		ObjectMeta: metav1.ObjectMeta{Name: "configmaps"},
		Spec:       cachev1alpha1.ClusterCachedResourceSpec{GroupVersionResource: cachev1alpha1.GroupVersionResource{Version: "v1", Resource: "configmaps"}},
	}
	if err := kcp.create(ctx, org.path(), kcpclient.ClusterCachedResources, defaulted, &cachev1alpha1.ClusterCachedResource{}); err != nil {
		t.Fatalf("create ClusterCachedResource: %v", err)
	}
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		if err := kcp.get(ctx, org.path(), kcpclient.ClusterCachedResources, "configmaps", defaulted); err != nil {
			return err
		}
		c := defaulted.Status.Conditions.Get(cachev1alpha1.ClusterCachedResourceValid)
		if defaulted.Status.IdentityHash == "" || c == nil || c.Status != corev1.ConditionFalse || c.Reason != cachev1alpha1.ResourceNotClusterScoped {
			return fmt.Errorf("status %+v", defaulted.Status)
		}
		return nil
	}, "a namespaced resource is not ResourceValid")
	if secret, err := kube.CoreV1().Secrets("kcp-system").Get(ctx, "configmaps", metav1.GetOptions{}); err != nil || len(secret.Data["key"]) == 0 {
		t.Errorf("default identity secret kcp-system/configmaps: %v", err)
	}
	if id := defaulted.Spec.Identity; id == nil || id.SecretRef == nil || *id.SecretRef != (cachev1alpha1.SecretReference{Namespace: "kcp-system", Name: "configmaps"}) {
		t.Errorf("spec.identity %+v, want the default secret kcp-system/configmaps written in, as kcp does", id)
	}

	// Deleting the ClusterCachedResource removes its copies first.
	if err := kcp.delete(ctx, org.path(), kcpclient.ClusterCachedResources, "instances"); err != nil {
		t.Fatalf("delete ClusterCachedResource: %v", err)
	}
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		if err := kcp.get(ctx, org.path(), kcpclient.ClusterCachedResources, "instances", got); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	}, "ClusterCachedResource deleted")
	list, err = copies.List(ctx, metav1.ListOptions{LabelSelector: cacheclient.CachedResourceLabel + "=instances"})
	if err != nil || len(list.Items) != 0 {
		t.Errorf("copies after deletion: %d, %v; want none", len(list.Items), err)
	}
}

// cachedObjects addresses the CachedObjects of one logical cluster of the
// shard in its in-process cache server, as system:masters.
func cachedObjects(t *testing.T, s *framework.Shard, cluster logicalcluster.Name) dynamic.ResourceInterface {
	t.Helper()
	cfg := s.ClientConfig(t, "shard-base")
	cfg.Host = cacheclient.URL(s.BaseURL(t), "root", cluster)
	return dynamic.NewForConfigOrDie(cfg).Resource(cacheclient.CachedObjects.Resource)
}

// viewClient addresses the instances of a replication view URL with the
// credentials of cfg.
func viewClient(t *testing.T, cfg *rest.Config, url string) dynamic.ResourceInterface {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.Host = url
	return dynamic.NewForConfigOrDie(cfg).Resource(framework.InstancesGVR)
}

// requireViewNames waits until the view lists n instances, all kind Instance.
func requireViewNames(ctx context.Context, t *testing.T, view dynamic.ResourceInterface, n int) {
	t.Helper()
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		list, err := view.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) != n {
			return fmt.Errorf("%d items", len(list.Items))
		}
		for _, item := range list.Items {
			if item.GetKind() != "Instance" {
				return fmt.Errorf("item kind %q", item.GetKind())
			}
		}
		return nil
	}, "the view lists %d instances", n)
}
