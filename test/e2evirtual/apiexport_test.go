package e2evirtual

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/system"
	"github.com/shardplane/shardplane/test/framework"
)

var widgetsGVR = schema.GroupVersionResource{Group: "example.io", Version: "v1", Resource: "widgets"}

// provider is the export owner's user: it gets access to the export's
// workspace and every verb on apiexports/content there, nothing in the
// consumers' workspaces.
const provider = "user-1"

func widget(name string, size int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.io/v1")
	u.SetKind("Widget")
	u.SetName(name)
	u.SetNamespace("team")
	_ = unstructured.SetNestedField(u.Object, size, "spec", "size")
	return u
}

// TestAPIExportViewServesTheProviderInEveryConsumerWorkspace is the
// issue's proof: the provider lists and watches its widgets in B (shard-1)
// and C (root) through the endpoints of the export's endpoint slice, and
// creates one in C; directly in B it is refused; a claimed configmap in B
// shows only once the binding accepts the claim; client-go informers work
// against the endpoint URLs.
func TestAPIExportViewServesTheProviderInEveryConsumerWorkspace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin := sys.AdminConfig(t, "")
	kcp := kcpClient(t, admin)

	a := organization(ctx, t, "provider", "root")
	b := organization(ctx, t, "consumer-b", system.ShardName(1))
	c := organization(ctx, t, "consumer-c", "root")
	const export = "widgets.example.io"
	exportWidgets(ctx, t, kcp, a, export)
	framework.Grant(ctx, t, kubeClient(t, sys.AdminConfig(t, string(a))), "widgets-provider", provider,
		rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{apisv1alpha2.SchemeGroupVersion.Group}, Resources: []string{"apiexports/content"}, ResourceNames: []string{export}},
	)
	for _, ws := range []logicalcluster.Name{b, c} {
		bind(ctx, t, kcp, ws, a, export)
		namespace(ctx, t, kubeClient(t, sys.AdminConfig(t, string(ws))), "team")
	}

	// The endpoint slice names both shards' virtual workspace servers,
	// through the front-proxy.
	slice := &apisv1alpha1.APIExportEndpointSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIExportEndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Spec:       apisv1alpha1.APIExportEndpointSliceSpec{APIExport: apisv1alpha1.ExportBindingReference{Name: export}},
	}
	if err := kcp.Create(ctx, a, slicesGVR, slice, &apisv1alpha1.APIExportEndpointSlice{}); err != nil {
		t.Fatalf("create APIExportEndpointSlice: %v", err)
	}
	proxyURL := sys.URL(t)
	want := []string{
		proxyURL + "/shards/root/services/apiexport/" + string(a) + "/" + export,
		proxyURL + "/shards/" + system.ShardName(1) + "/services/apiexport/" + string(a) + "/" + export,
	}
	var endpoints []string
	framework.Eventually(t, func(ctx context.Context) error {
		got := &apisv1alpha1.APIExportEndpointSlice{}
		if err := kcp.Get(ctx, a, slicesGVR, "widgets", got); err != nil {
			return err
		}
		endpoints = nil
		for _, e := range got.Status.APIExportEndpoints {
			endpoints = append(endpoints, e.URL)
		}
		sort.Strings(endpoints)
		if !slices.Equal(endpoints, want) {
			return fmt.Errorf("endpoints %v, want %v", endpoints, want)
		}
		return nil
	}, "endpoint slice lists both shards")

	for ws, name := range map[logicalcluster.Name]string{b: "in-b", c: "in-c"} {
		dyn := dynamic.NewForConfigOrDie(sys.AdminConfig(t, string(ws)))
		if _, err := dyn.Resource(widgetsGVR).Namespace("team").Create(ctx, widget(name, 1), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create widget in %s: %v", ws, err)
		}
	}

	user := sys.UserConfig(t, provider, "")
	// Informers against every endpoint, as a provider's controller runs
	// them: list and watch across all consumer workspaces.
	seen := &clusterNames{names: map[string]logicalcluster.Name{}}
	for _, endpoint := range endpoints {
		dyn := dynamic.NewForConfigOrDie(withCluster(user, endpoint, logicalcluster.Wildcard))
		factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
		inf := factory.ForResource(widgetsGVR).Informer()
		if _, err := inf.AddEventHandler(seen); err != nil {
			t.Fatal(err)
		}
		factory.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			t.Fatalf("informer at %s never synced", endpoint)
		}
	}
	framework.Eventually(t, func(context.Context) error {
		return seen.has(map[string]logicalcluster.Name{"in-b": b, "in-c": c})
	}, "informers see the widgets of B and C with their clusters")

	// Discovery through the view shows the export's resource.
	disc := discovery.NewDiscoveryClientForConfigOrDie(withCluster(user, endpoints[0], logicalcluster.Wildcard))
	resources, err := disc.ServerResourcesForGroupVersion("example.io/v1")
	if err != nil {
		t.Fatalf("discovery through the view: %v", err)
	}
	if len(resources.APIResources) == 0 || resources.APIResources[0].Name != "widgets" {
		t.Fatalf("discovery through the view: %+v", resources.APIResources)
	}

	// The provider creates a widget in C through C's shard's endpoint; the
	// informers and the consumer see it.
	rootEndpoint := endpoints[0]
	inC := dynamic.NewForConfigOrDie(withCluster(user, rootEndpoint, c))
	if _, err := inC.Resource(widgetsGVR).Namespace("team").Create(ctx, widget("by-provider", 7), metav1.CreateOptions{}); err != nil {
		t.Fatalf("provider creates a widget in C through the view: %v", err)
	}
	framework.Eventually(t, func(context.Context) error {
		return seen.has(map[string]logicalcluster.Name{"by-provider": c})
	}, "informer sees the provider's widget in C")
	if _, err := dynamic.NewForConfigOrDie(sys.AdminConfig(t, string(c))).Resource(widgetsGVR).Namespace("team").Get(ctx, "by-provider", metav1.GetOptions{}); err != nil {
		t.Fatalf("the consumer does not see the provider's widget: %v", err)
	}
	// Other verbs than list and watch need a workspace.
	_, err = dynamic.NewForConfigOrDie(withCluster(user, rootEndpoint, logicalcluster.Wildcard)).Resource(widgetsGVR).Namespace("team").Create(ctx, widget("nowhere", 1), metav1.CreateOptions{})
	if !apierrors.IsMethodNotSupported(err) {
		t.Fatalf("create in the * cluster through the view: want MethodNotSupported, got %v", err)
	}

	// Directly in B the provider is nobody.
	_, err = dynamic.NewForConfigOrDie(sys.UserConfig(t, provider, string(b))).Resource(widgetsGVR).Namespace("team").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("provider lists widgets directly in B: want 403, got %v", err)
	}
	// Without apiexports/content nobody gets through the view, and learns
	// nothing of the export.
	for _, endpoint := range []string{rootEndpoint, strings.Replace(rootEndpoint, export, "no-such-export", 1)} {
		_, err = dynamic.NewForConfigOrDie(withCluster(sys.UserConfig(t, "user-2", ""), endpoint, logicalcluster.Wildcard)).Resource(widgetsGVR).List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("user-2 lists through %s: want 403, got %v", endpoint, err)
		}
	}

	// Claims: configmaps of B reach the provider only once B accepts the
	// claim, and only those the selector selects.
	kubeB := kubeClient(t, sys.AdminConfig(t, string(b)))
	for name, labels := range map[string]map[string]string{"claimed": {"widgets": "yes"}, "private": nil} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team", Labels: labels}}
		if _, err := kubeB.CoreV1().ConfigMaps("team").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create configmap %s in B: %v", name, err)
		}
	}
	shard1Endpoint := endpoints[1]
	viewB := kubeClient(t, withCluster(user, shard1Endpoint, b))
	if _, err := viewB.CoreV1().ConfigMaps("team").Get(ctx, "claimed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("claimed configmap before the claim is accepted: want 404, got %v", err)
	}
	accept(ctx, t, b)
	viewAll := kubeClient(t, withCluster(user, shard1Endpoint, logicalcluster.Wildcard))
	framework.Eventually(t, func(ctx context.Context) error {
		list, err := viewAll.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var names []string
		for _, cm := range list.Items {
			if cluster, _ := logicalcluster.ObjectCluster(cm.Annotations); cluster != b {
				return fmt.Errorf("configmap %s of cluster %q through the view", cm.Name, cluster)
			}
			names = append(names, cm.Name)
		}
		if !slices.Equal(names, []string{"claimed"}) {
			return fmt.Errorf("configmaps %v, want [claimed]", names)
		}
		return nil
	}, "claimed configmap of B visible through the view")
	if _, err := viewB.CoreV1().ConfigMaps("team").Get(ctx, "private", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("unselected configmap through the view: want 404, got %v", err)
	}
	// Secrets are not claimed: not there at all.
	if _, err := viewB.CoreV1().Secrets("team").List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("secrets of B through the view: want 404, got %v", err)
	}
}

// accept makes the binding in cluster accept the configmaps claim for
// objects labeled widgets=yes.
func accept(ctx context.Context, t *testing.T, cluster logicalcluster.Name) {
	t.Helper()
	kcp := kcpClient(t, sys.AdminConfig(t, ""))
	framework.Eventually(t, func(ctx context.Context) error {
		b := &apisv1alpha2.APIBinding{}
		if err := kcp.Get(ctx, cluster, bindingsGVR, "widgets", b); err != nil {
			return err
		}
		b.Spec.PermissionClaims = []apisv1alpha2.AcceptablePermissionClaim{{
			ScopedPermissionClaim: apisv1alpha2.ScopedPermissionClaim{
				PermissionClaim: configMapsClaim,
				Selector:        apisv1alpha2.PermissionClaimSelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"widgets": "yes"}}},
			},
			State: apisv1alpha2.ClaimAccepted,
		}}
		b.APIVersion, b.Kind = apisv1alpha2.SchemeGroupVersion.String(), "APIBinding"
		return kcp.Update(ctx, cluster, bindingsGVR, b.Name, b, &apisv1alpha2.APIBinding{})
	}, "accept the configmaps claim in %s", string(cluster))
}

// clusterNames records the cluster of every widget informers saw.
type clusterNames struct {
	mu    sync.Mutex
	names map[string]logicalcluster.Name
}

func (c *clusterNames) OnAdd(obj interface{}, _ bool) { c.record(obj) }
func (c *clusterNames) OnUpdate(_, obj interface{})   { c.record(obj) }
func (c *clusterNames) OnDelete(interface{})          {}

func (c *clusterNames) record(obj interface{}) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	cluster, _ := logicalcluster.ObjectCluster(u.GetAnnotations())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.names[u.GetName()] = cluster
}

func (c *clusterNames) has(want map[string]logicalcluster.Name) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, cluster := range want {
		if got, ok := c.names[name]; !ok || got != cluster {
			return fmt.Errorf("widget %s: cluster %q (seen: %v), want %q", name, got, c.names, cluster)
		}
	}
	return nil
}
