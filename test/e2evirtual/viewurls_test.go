package e2evirtual

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/system"
	"github.com/shardplane/shardplane/test/framework"
)

// virtualWorkspaceURL is kcp's e2e helper framework.VirtualWorkspaceURL:
// the shard of a workspace from its internal.tenancy.kcp.io/shard hash,
// then the first of urls that starts with that Shard's
// spec.virtualWorkspaceURL.
func virtualWorkspaceURL(ctx context.Context, c *kcpclient.Client, ws *tenancyv1alpha1.Workspace, urls []string) (string, *corev1alpha1.Shard, error) {
	shards := &corev1alpha1.ShardList{}
	if err := c.List(ctx, logicalcluster.Root, kcpclient.Shards, shards); err != nil {
		return "", nil, err
	}
	hash := ws.Annotations[tenancyv1alpha1.WorkspaceShardHashAnnotationKey]
	for i := range shards.Items {
		s := &shards.Items[i]
		if tenancyv1alpha1.ShardHash(s.Name) != hash {
			continue
		}
		for _, u := range urls {
			if strings.HasPrefix(u, s.Spec.VirtualWorkspaceURL) {
				return u, s, nil
			}
		}
		return "", s, fmt.Errorf("no URL of %v starts with shard %s's virtualWorkspaceURL %s", urls, s.Name, s.Spec.VirtualWorkspaceURL)
	}
	return "", nil, fmt.Errorf("no shard of hash %q (workspace %s)", hash, ws.Name)
}

// TestViewURLsStartWithTheShardsVirtualWorkspaceURL mirrors how kcp's e2e
// tests (e.g. test/e2e/virtual/apiexport, test/e2e/apibinding) reach a
// view: from the export's default endpoint slice, or a WorkspaceType's
// status.virtualWorkspaces, they take the URL that starts with the
// consumer's shard's spec.virtualWorkspaceURL. It also asks each shard's
// own URL for the views, which the shards, whose views run in their own
// process here, forward there, as kcp's shards do.
func TestViewURLsStartWithTheShardsVirtualWorkspaceURL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kcp := kcpClient(t, sys.AdminConfig(t, ""))

	providerWS := organization(ctx, t, "urls-provider", "root")
	consumerName := organization(ctx, t, "urls-consumer", system.ShardName(1))
	const export = "urls.example.io"
	exportWidgets(ctx, t, kcp, providerWS, export)
	framework.Grant(ctx, t, kubeClient(t, sys.AdminConfig(t, string(providerWS))), "urls-provider", provider,
		rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{apisv1alpha2.SchemeGroupVersion.Group}, Resources: []string{"apiexports/content"}, ResourceNames: []string{export}},
	)
	bind(ctx, t, kcp, consumerName, providerWS, export)
	consumer := workspaceOf(ctx, t, kcp, consumerName)

	// The export's default endpoint slice, as kcp's tests read it.
	var endpoint string
	var shard *corev1alpha1.Shard
	framework.Eventually(t, func(ctx context.Context) error {
		slice := &apisv1alpha1.APIExportEndpointSlice{}
		if err := kcp.Get(ctx, providerWS, slicesGVR, export, slice); err != nil {
			return err
		}
		var urls []string
		for _, e := range slice.Status.APIExportEndpoints {
			urls = append(urls, e.URL)
		}
		var err error
		endpoint, shard, err = virtualWorkspaceURL(ctx, kcp, consumer, urls)
		return err
	}, "an endpoint of the consumer's shard")
	if shard.Name != system.ShardName(1) {
		t.Fatalf("consumer on shard %s, want %s", shard.Name, system.ShardName(1))
	}
	list := func(cfg *rest.Config, host string) error {
		cfg = rest.CopyConfig(cfg)
		cfg.Host = logicalcluster.Wildcard.Path().URL(host)
		_, err := dynamic.NewForConfigOrDie(cfg).Resource(widgetsGVR).List(ctx, metav1.ListOptions{})
		return err
	}
	if err := list(sys.UserConfig(t, provider, ""), endpoint); err != nil {
		t.Fatalf("provider lists widgets at %s: %v", endpoint, err)
	}

	// The same view below the shard's own URL: forwarded as the caller, the
	// view decides.
	direct := func(user string) *rest.Config {
		cfg := sys.ShardAdminConfig(t, shard.Name, "")
		cfg.BearerToken, cfg.BearerTokenFile = sys.UserToken(user), ""
		return cfg
	}
	onShard := sys.ShardURL(t, shard.Name) + strings.TrimPrefix(endpoint, shard.Spec.VirtualWorkspaceURL)
	if err := list(direct(provider), onShard); err != nil {
		t.Fatalf("provider lists widgets at the shard's own %s: %v", onShard, err)
	}
	if err := list(direct("user-2"), onShard); !apierrors.IsForbidden(err) {
		t.Fatalf("user-2 lists widgets at the shard's own %s: want 403 from the view, got %v", onShard, err)
	}

	// A WorkspaceType's initializing view: one URL per shard, each below a
	// shard's virtualWorkspaceURL, and answered below each shard's own URL.
	typeName := "urls-init"
	wt := &tenancyv1alpha1.WorkspaceType{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "WorkspaceType"},
		ObjectMeta: metav1.ObjectMeta{Name: typeName},
		Spec:       tenancyv1alpha1.WorkspaceTypeSpec{Initializer: true},
	}
	if err := kcp.Create(ctx, providerWS, kcpclient.WorkspaceTypes, wt, &tenancyv1alpha1.WorkspaceType{}); err != nil {
		t.Fatalf("create WorkspaceType: %v", err)
	}
	shards := &corev1alpha1.ShardList{}
	if err := kcp.List(ctx, logicalcluster.Root, kcpclient.Shards, shards); err != nil {
		t.Fatal(err)
	}
	var views []string
	framework.Eventually(t, func(ctx context.Context) error {
		got := &tenancyv1alpha1.WorkspaceType{}
		if err := kcp.Get(ctx, providerWS, kcpclient.WorkspaceTypes, typeName, got); err != nil {
			return err
		}
		views = nil
		for _, vw := range got.Status.VirtualWorkspaces {
			views = append(views, vw.URL)
		}
		if len(views) != len(shards.Items) {
			return fmt.Errorf("virtualWorkspaces %v, want one per shard", views)
		}
		return nil
	}, "WorkspaceType lists its initializing views")
	for _, s := range shards.Items {
		var view string
		for _, u := range views {
			if strings.HasPrefix(u, s.Spec.VirtualWorkspaceURL) {
				view = u
			}
		}
		if view == "" {
			t.Fatalf("no initializing view of %v below shard %s's virtualWorkspaceURL %s", views, s.Name, s.Spec.VirtualWorkspaceURL)
		}
		cfg := sys.ShardAdminConfig(t, s.Name, "")
		cfg.Host = sys.ShardURL(t, s.Name) + strings.TrimPrefix(view, s.Spec.VirtualWorkspaceURL)
		lcs := &corev1alpha1.LogicalClusterList{}
		if err := kcpClient(t, cfg).List(ctx, logicalcluster.Wildcard, kcpclient.LogicalClusters, lcs); err != nil {
			t.Fatalf("list LogicalClusters in the initializing view below shard %s's own URL: %v", s.Name, err)
		}
	}
}

// workspaceOf returns the Workspace in root whose logical cluster is name.
func workspaceOf(ctx context.Context, t *testing.T, c *kcpclient.Client, name logicalcluster.Name) *tenancyv1alpha1.Workspace {
	t.Helper()
	list := &tenancyv1alpha1.WorkspaceList{}
	if err := c.List(ctx, logicalcluster.Root, workspacesGVR, list); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if logicalcluster.Name(list.Items[i].Spec.Cluster) == name {
			return &list.Items[i]
		}
	}
	t.Fatalf("no workspace of cluster %s in root", name)
	return nil
}
