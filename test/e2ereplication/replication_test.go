package e2ereplication

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/controllers/apibinding"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

var (
	workspaces  = tenancyv1alpha1.SchemeGroupVersion.WithResource("workspaces")
	types       = tenancyv1alpha1.SchemeGroupVersion.WithResource("workspacetypes")
	schemas     = apisv1alpha1.SchemeGroupVersion.WithResource("apiresourceschemas")
	exports     = apisv1alpha2.SchemeGroupVersion.WithResource("apiexports")
	bindings    = apisv1alpha2.SchemeGroupVersion.WithResource("apibindings")
	widgetsGVR  = schema.GroupVersionResource{Group: "example.io", Version: "v1", Resource: "widgets"}
	gadgetsGVR  = schema.GroupVersionResource{Group: "example.io", Version: "v1", Resource: "gadgets"}
	exportsPath = "/apis/apis.kcp.io/v1alpha2/apiexports"
)

func kcp(t *testing.T, cfg *rest.Config) *kcpclient.Client {
	return framework.KCPClient(t, cfg)
}

func kube(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	return framework.KubeClient(t, cfg)
}

// readyWorkspace creates a workspace of type typ (a path:name reference)
// below parent as cfg's user, on the shard named by onShard if set, and
// waits until it is Ready.
func readyWorkspace(ctx context.Context, t *testing.T, cfg *rest.Config, parent, name string, typ *tenancyv1alpha1.WorkspaceTypeReference, onShard string) *tenancyv1alpha1.Workspace {
	t.Helper()
	c := kcp(t, cfg)
	ws := &tenancyv1alpha1.Workspace{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.WorkspaceSpec{Type: typ},
	}
	if onShard != "" {
		ws.Spec.Location = &tenancyv1alpha1.WorkspaceLocation{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1alpha1.ShardNameLabel: onShard}}}
	}
	if err := c.Create(ctx, logicalcluster.Name(parent), workspaces, ws, &tenancyv1alpha1.Workspace{}); err != nil {
		t.Fatalf("create workspace %s:%s: %v", parent, name, err)
	}
	got := &tenancyv1alpha1.Workspace{}
	framework.Eventually(t, func(ctx context.Context) error {
		if err := c.Get(ctx, logicalcluster.Name(parent), workspaces, name, got); err != nil {
			return err
		}
		if got.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
			return fmt.Errorf("phase %q, conditions %+v", got.Status.Phase, got.Status.Conditions)
		}
		return nil
	}, "workspace %s:%s Ready", parent, name)
	return got
}

func shardOf(ws *tenancyv1alpha1.Workspace) string {
	return ws.Annotations[corev1alpha1.ShardAnnotationKey]
}

func organization() *tenancyv1alpha1.WorkspaceTypeReference {
	return &tenancyv1alpha1.WorkspaceTypeReference{Name: "organization", Path: "root"}
}

// schemaOf is an APIResourceSchema of <plural>.example.io.
func schemaOf(plural, kind string) *apisv1alpha1.APIResourceSchema {
	return &apisv1alpha1.APIResourceSchema{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIResourceSchema"},
		ObjectMeta: metav1.ObjectMeta{Name: "v1." + plural + ".example.io"},
		Spec: apisv1alpha1.APIResourceSchemaSpec{
			Group: "example.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apisv1alpha1.APIResourceVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: runtime.RawExtension{Raw: []byte(`{"type":"object","properties":{"spec":{"type":"object","properties":{"size":{"type":"integer"}}}}}`)},
			}},
		},
	}
}

// export creates the schema and an APIExport of it in workspace path.
func export(ctx context.Context, t *testing.T, c *kcpclient.Client, path, name, plural, kind string) {
	t.Helper()
	s := schemaOf(plural, kind)
	if err := c.Create(ctx, logicalcluster.Name(path), schemas, s, &apisv1alpha1.APIResourceSchema{}); err != nil {
		t.Fatalf("create APIResourceSchema in %s: %v", path, err)
	}
	e := &apisv1alpha2.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{Group: "example.io", Name: plural, Schema: s.Name, Storage: apisv1alpha2.ResourceSchemaStorage{CRD: &apisv1alpha2.ResourceSchemaStorageCRD{}}}}},
	}
	if err := c.Create(ctx, logicalcluster.Name(path), exports, e, &apisv1alpha2.APIExport{}); err != nil {
		t.Fatalf("create APIExport %s in %s: %v", name, path, err)
	}
}

func bindingTo(name, path, exportName string) *apisv1alpha2.APIBinding {
	return &apisv1alpha2.APIBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: path, Name: exportName}}},
	}
}

// waitForBinding polls a binding until ok accepts it.
func waitForBinding(ctx context.Context, t *testing.T, c *kcpclient.Client, path, name, what string, ok func(*apisv1alpha2.APIBinding) error) {
	t.Helper()
	framework.Eventually(t, func(ctx context.Context) error {
		b := &apisv1alpha2.APIBinding{}
		if err := c.Get(ctx, logicalcluster.Name(path), bindings, name, b); err != nil {
			return err
		}
		return ok(b)
	}, "APIBinding %s|%s %s", path, name, what)
}

func isBound(b *apisv1alpha2.APIBinding) error {
	if b.Status.Phase != apisv1alpha2.APIBindingPhaseBound {
		return fmt.Errorf("phase %q, conditions %+v", b.Status.Phase, b.Status.Conditions)
	}
	return nil
}

var accessRule = rbacv1.PolicyRule{Verbs: []string{"access"}, NonResourceURLs: []string{"/"}}

// cacheReplicas lists, as the cache server's admin, the replicas of a kind
// from one shard and cluster.
func cacheReplicas(ctx context.Context, t *testing.T, shard string, cluster logicalcluster.Name, gvr schema.GroupVersionResource) ([]unstructured.Unstructured, error) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(sys.CacheDir(), "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Host = cacheclient.URL(sys.CacheURL(t), cacheclient.Shard(shard), cluster)
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	list, err := d.Resource(gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func names(items []unstructured.Unstructured) map[string]bool {
	out := map[string]bool{}
	for _, i := range items {
		out[i.GetName()] = true
	}
	return out
}

// TestWhatOneShardPublishesEveryShardUses walks through replication in one
// system: an export on shard-1 bound from a workspace on root, a type of
// shard-1 used on root, bind revoked on shard-1, and the cache server
// killed and wiped meanwhile. The steps build on each other.
func TestWhatOneShardPublishesEveryShardUses(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	admin := sys.AdminConfig(t, "")
	adminKCP := kcp(t, admin)

	// A provider organization on shard-1, a consumer organization on root.
	provider := readyWorkspace(ctx, t, admin, "root", "provider", organization(), "shard-1")
	consumer := readyWorkspace(ctx, t, admin, "root", "consumer", organization(), "root")
	if shardOf(provider) != "shard-1" || shardOf(consumer) != "root" {
		t.Fatalf("provider on %q, consumer on %q; want shard-1 and root", shardOf(provider), shardOf(consumer))
	}
	providerPath, consumerPath := "root:provider", "root:consumer"
	providerCluster := logicalcluster.Name(provider.Spec.Cluster)
	// user-2 administers the consumer organization.
	framework.Grant(ctx, t, kube(t, sys.AdminConfig(t, consumerPath)), "user-2-admin", "user-2", accessRule,
		rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}})
	user2 := sys.UserConfig(t, "user-2", "")

	export(ctx, t, adminKCP, providerPath, "widgets", "widgets", "Widget")
	providerKube := kube(t, sys.AdminConfig(t, providerPath))
	framework.Grant(ctx, t, providerKube, "bind-widgets", "user-2", accessRule,
		rbacv1.PolicyRule{Verbs: []string{"bind"}, APIGroups: []string{"apis.kcp.io"}, Resources: []string{"apiexports"}, ResourceNames: []string{"widgets"}})

	t.Run("the export and the RBAC that grants bind are replicated with their origin", func(t *testing.T) {
		framework.Eventually(t, func(ctx context.Context) error {
			items, err := cacheReplicas(ctx, t, "shard-1", providerCluster, exports.GroupVersion().WithResource("apiexports"))
			if err != nil {
				return err
			}
			if len(items) != 1 || items[0].GetName() != "widgets" {
				return fmt.Errorf("replicas %v", names(items))
			}
			a := items[0].GetAnnotations()
			if a["kcp.io/shard"] != "shard-1" || a["kcp.io/cluster"] != string(providerCluster) || a["kcp.io/path"] != providerPath {
				return fmt.Errorf("replica annotations %v", a)
			}
			return nil
		}, "replicas of provider's exports")
		// The export's default endpoint slice, of its name, is replicated.
		framework.Eventually(t, func(ctx context.Context) error {
			items, err := cacheReplicas(ctx, t, "shard-1", providerCluster, apisv1alpha1.SchemeGroupVersion.WithResource("apiexportendpointslices"))
			if err != nil {
				return err
			}
			if !names(items)["widgets"] {
				return fmt.Errorf("replicas %v", names(items))
			}
			return nil
		}, "replica of the APIExportEndpointSlice")
		framework.Eventually(t, func(ctx context.Context) error {
			items, err := cacheReplicas(ctx, t, "shard-1", providerCluster, rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"))
			if err != nil {
				return err
			}
			if !names(items)["bind-widgets"] {
				return fmt.Errorf("replicas %v", names(items))
			}
			return nil
		}, "replica of the ClusterRoleBinding granting bind")
	})

	t.Run("an export on shard-1 is bound and served in a workspace on root", func(t *testing.T) {
		c := kcp(t, user2)
		framework.Eventually(t, func(ctx context.Context) error {
			return c.Create(ctx, logicalcluster.Name(consumerPath), bindings, bindingTo("widgets", providerPath, "widgets"), &apisv1alpha2.APIBinding{})
		}, "user-2 binds root:provider:widgets in root:consumer")
		waitForBinding(ctx, t, c, consumerPath, "widgets", "Bound", isBound)
		d, err := dynamic.NewForConfig(sys.UserConfig(t, "user-2", consumerPath))
		if err != nil {
			t.Fatal(err)
		}
		w := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "example.io/v1", "kind": "Widget",
			"metadata": map[string]interface{}{"name": "w1"}, "spec": map[string]interface{}{"size": int64(3)},
		}}
		framework.Eventually(t, func(ctx context.Context) error {
			_, err := d.Resource(widgetsGVR).Namespace("default").Create(ctx, w, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		}, "create a widget in root:consumer")
		got, err := d.Resource(widgetsGVR).Namespace("default").Get(ctx, "w1", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get widget: %v", err)
		}
		got.Object["spec"] = map[string]interface{}{"size": int64(4)}
		if _, err := d.Resource(widgetsGVR).Namespace("default").Update(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Errorf("update widget: %v", err)
		}
		if err := d.Resource(widgetsGVR).Namespace("default").Delete(ctx, "w1", metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete widget: %v", err)
		}
	})

	t.Run("a type defined on shard-1 is used in a workspace on root", func(t *testing.T) {
		wt := &tenancyv1alpha1.WorkspaceType{
			TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "WorkspaceType"},
			ObjectMeta: metav1.ObjectMeta{Name: "store"},
			Spec:       tenancyv1alpha1.WorkspaceTypeSpec{Extend: tenancyv1alpha1.WorkspaceTypeExtension{With: []tenancyv1alpha1.WorkspaceTypeReference{{Name: "universal", Path: "root"}}}},
		}
		if err := adminKCP.Create(ctx, logicalcluster.Name(providerPath), types, wt, &tenancyv1alpha1.WorkspaceType{}); err != nil {
			t.Fatalf("create WorkspaceType: %v", err)
		}
		framework.Grant(ctx, t, providerKube, "use-store", "user-2", accessRule,
			rbacv1.PolicyRule{Verbs: []string{"use"}, APIGroups: []string{"tenancy.kcp.io"}, Resources: []string{"workspacetypes"}, ResourceNames: []string{"store"}})
		ref := &tenancyv1alpha1.WorkspaceTypeReference{Name: "store", Path: providerPath}
		c := kcp(t, user2)
		framework.Eventually(t, func(ctx context.Context) error {
			ws := &tenancyv1alpha1.Workspace{
				TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
				ObjectMeta: metav1.ObjectMeta{Name: "store"},
				Spec:       tenancyv1alpha1.WorkspaceSpec{Type: ref},
			}
			return c.Create(ctx, logicalcluster.Name(consumerPath), workspaces, ws, &tenancyv1alpha1.Workspace{})
		}, "user-2 creates a workspace of type root:provider:store in root:consumer")
		framework.Eventually(t, func(ctx context.Context) error {
			got := &tenancyv1alpha1.Workspace{}
			if err := c.Get(ctx, logicalcluster.Name(consumerPath), workspaces, "store", got); err != nil {
				return err
			}
			if got.Status.Phase != corev1alpha1.LogicalClusterPhaseReady || got.Spec.Type == nil || got.Spec.Type.Path != providerPath {
				return fmt.Errorf("phase %q, type %+v", got.Status.Phase, got.Spec.Type)
			}
			return nil
		}, "workspace root:consumer:store Ready")
	})

	t.Run("revoking bind on shard-1 stops new bindings on root within seconds", func(t *testing.T) {
		if err := providerKube.RbacV1().ClusterRoleBindings().Delete(ctx, "bind-widgets", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		c := kcp(t, user2)
		start := time.Now()
		framework.Eventually(t, func(ctx context.Context) error {
			err := c.Create(ctx, logicalcluster.Name(consumerPath), bindings, bindingTo(fmt.Sprintf("again-%d", time.Now().UnixNano()), providerPath, "widgets"), &apisv1alpha2.APIBinding{})
			if apierrors.IsForbidden(err) {
				return nil
			}
			return fmt.Errorf("create: %v", err)
		}, "a new binding to root:provider:widgets is forbidden")
		t.Logf("bind revoked on shard-1 took effect on root after %v", time.Since(start).Round(10*time.Millisecond))
		// The binding made before keeps its API.
		waitForBinding(ctx, t, c, consumerPath, "widgets", "still Bound", isBound)
	})

	t.Run("with the cache server killed both shards serve; a binding to a new export waits and completes when it returns", func(t *testing.T) {
		sys.KillProcess(t, "cache")
		restarted := false
		defer func() {
			if !restarted {
				sys.RestartExited(t, "cache", sys.CacheURL(t)+"/readyz")
			}
		}()
		d, err := dynamic.NewForConfig(sys.UserConfig(t, "user-2", consumerPath))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Resource(widgetsGVR).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("list widgets in root:consumer (root shard) without the cache: %v", err)
		}
		if _, err := kube(t, sys.AdminConfig(t, providerPath)).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
			t.Errorf("read root:provider (shard-1) without the cache: %v", err)
		}
		// A new export on shard-1 cannot reach root while the cache is away.
		export(ctx, t, adminKCP, providerPath, "gadgets", "gadgets", "Gadget")
		if err := adminKCP.Create(ctx, logicalcluster.Name(consumerPath), bindings, bindingTo("gadgets", providerPath, "gadgets"), &apisv1alpha2.APIBinding{}); err != nil {
			t.Fatalf("bind gadgets: %v", err)
		}
		waitForBinding(ctx, t, adminKCP, consumerPath, "gadgets", "waiting for the cache server", func(b *apisv1alpha2.APIBinding) error {
			c := b.Status.Conditions.Get(apisv1alpha2.APIExportValid)
			if c == nil || c.Status != corev1.ConditionFalse || c.Reason != apibinding.CacheServerUnreachableReason {
				return fmt.Errorf("APIExportValid %+v", c)
			}
			return nil
		})
		sys.RestartExited(t, "cache", sys.CacheURL(t)+"/readyz")
		restarted = true
		waitForBinding(ctx, t, adminKCP, consumerPath, "gadgets", "Bound after the cache returned", isBound)
		dg, err := dynamic.NewForConfig(sys.AdminConfig(t, consumerPath))
		if err != nil {
			t.Fatal(err)
		}
		framework.Eventually(t, func(ctx context.Context) error {
			_, err := dg.Resource(gadgetsGVR).Namespace("default").List(ctx, metav1.ListOptions{})
			return err
		}, "list gadgets in root:consumer")
	})

	t.Run("a wiped cache server is re-populated by the shards", func(t *testing.T) {
		sys.StopProcess(t, "cache")
		restarted := false
		defer func() {
			if !restarted {
				sys.RestartExited(t, "cache", sys.CacheURL(t)+"/readyz")
			}
		}()
		if err := os.RemoveAll(filepath.Join(sys.CacheDir(), "etcd")); err != nil {
			t.Fatal(err)
		}
		sys.RestartExited(t, "cache", sys.CacheURL(t)+"/readyz")
		restarted = true
		framework.Eventually(t, func(ctx context.Context) error {
			items, err := cacheReplicas(ctx, t, "shard-1", providerCluster, exports.GroupVersion().WithResource("apiexports"))
			if err != nil {
				return err
			}
			if got := names(items); !got["widgets"] || !got["gadgets"] || len(got) != 2 {
				return fmt.Errorf("replicas %v", got)
			}
			return nil
		}, "provider's exports back in the wiped cache")
		framework.Eventually(t, func(ctx context.Context) error {
			items, err := cacheReplicas(ctx, t, "root", logicalcluster.Root, exports.GroupVersion().WithResource("apiexports"))
			if err != nil {
				return err
			}
			if !names(items)["tenancy.kcp.io"] {
				return fmt.Errorf("replicas %v", names(items))
			}
			return nil
		}, "root's exports back in the wiped cache")
		// The revoked binding stays gone.
		items, err := cacheReplicas(ctx, t, "shard-1", providerCluster, rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"))
		if err != nil {
			t.Fatal(err)
		}
		if names(items)["bind-widgets"] {
			t.Errorf("the revoked ClusterRoleBinding bind-widgets came back: %v", names(items))
		}
	})
}
