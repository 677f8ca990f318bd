package e2evirtual

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/system"
	"github.com/shardplane/shardplane/test/framework"
)

// TestWorkspaceIssuedTokensReachViewsThroughTheFrontProxy: a token of an
// issuer that a workspace's type names (kcp's per-workspace
// authentication) reaches the views of that workspace's shard, served by
// their own virtual-workspaces process, through the front-proxy, which
// authenticates it for the workspace the view's path names, as kcp's does;
// the virtual-workspaces process asked directly answers 401, as kcp's,
// which authenticates no workspace issuers. The type lives on root, the
// workspace on the other shard.
func TestWorkspaceIssuedTokensReachViewsThroughTheFrontProxy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin := kcpClient(t, sys.AdminConfig(t, ""))
	orgName := "oidc-views-" + rand.String(5)
	org := workspaceOfType(ctx, t, logicalcluster.Root, orgName, &tenancyv1alpha1.WorkspaceTypeReference{Name: "organization", Path: "root"}, "root")
	issuer := framework.StartOIDCIssuer(t)

	wac := issuer.AuthenticationConfiguration("mockoidc", "oidc:")
	if err := admin.Create(ctx, org, kcpclient.WorkspaceAuthenticationConfigurations, wac, &tenancyv1alpha1.WorkspaceAuthenticationConfiguration{}); err != nil {
		t.Fatalf("create WorkspaceAuthenticationConfiguration: %v", err)
	}
	wt := &tenancyv1alpha1.WorkspaceType{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "WorkspaceType"},
		ObjectMeta: metav1.ObjectMeta{Name: "with-oidc"},
		Spec:       tenancyv1alpha1.WorkspaceTypeSpec{AuthenticationConfigurations: []tenancyv1alpha1.AuthenticationConfigurationReference{{Name: wac.Name}}},
	}
	if err := admin.Create(ctx, org, kcpclient.WorkspaceTypes, wt, &tenancyv1alpha1.WorkspaceType{}); err != nil {
		t.Fatalf("create WorkspaceType: %v", err)
	}
	shard := system.ShardName(1)
	team := workspaceOfType(ctx, t, org, "team", &tenancyv1alpha1.WorkspaceTypeReference{Name: tenancyv1alpha1.WorkspaceTypeName(wt.Name), Path: "root:" + orgName}, shard)
	for _, cluster := range []logicalcluster.Name{team, org} {
		b := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "allow-oidc-user"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "oidc:user-a@example.com"}},
		}
		if _, err := kubeClient(t, sys.AdminConfig(t, string(cluster))).RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatalf("bind cluster-admin in %s: %v", cluster, err)
		}
	}

	token := issuer.Token(t, "user-a", "user-a@example.com", []string{"developers"})
	cfg := rest.AnonymousClientConfig(sys.AdminConfig(t, string(team)))
	cfg.BearerToken = token
	user := kubeClient(t, cfg)
	// Built on first use, the authenticator answers 401 until it has the
	// issuer's keys.
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := user.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		return err
	}, "issuer's token accepted in %s through the front-proxy", team)

	// The team binds an export of the organization's, so that the view
	// has a schema to list.
	group := rand.String(5) + ".wsauth.test"
	exportSheriffs(ctx, t, admin, org, group)
	bindExport(ctx, t, admin, team, org, group)
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := listSchemas(ctx, kcpClient(t, schemaView(t, sys.AdminConfig(t, ""), shard, team)), team)
		return err
	}, "the view lists %s's bound schema to kcp-admin", team)

	if code := framework.RequireViewsAcceptWorkspaceTokensOnlyThroughTheFrontProxy(ctx, t, sys, token, shard, string(team), string(org)); code != http.StatusOK {
		t.Errorf("the view through the front-proxy answered %d, want 200", code)
	}
}

// workspaceOfType creates a workspace of a type in parent on a shard and
// waits until it is Ready; it returns its logical cluster.
func workspaceOfType(ctx context.Context, t *testing.T, parent logicalcluster.Name, name string, typ *tenancyv1alpha1.WorkspaceTypeReference, shard string) logicalcluster.Name {
	t.Helper()
	c := kcpClient(t, sys.AdminConfig(t, ""))
	ws := &tenancyv1alpha1.Workspace{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.WorkspaceSpec{
			Type:     typ,
			Location: &tenancyv1alpha1.WorkspaceLocation{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1alpha1.ShardNameLabel: shard}}},
		},
	}
	if err := c.Create(ctx, parent, workspacesGVR, ws, &tenancyv1alpha1.Workspace{}); err != nil {
		t.Fatalf("create workspace %s in %s: %v", name, parent, err)
	}
	got := &tenancyv1alpha1.Workspace{}
	framework.Eventually(t, func(ctx context.Context) error {
		if err := c.Get(ctx, parent, workspacesGVR, name, got); err != nil {
			return err
		}
		if got.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
			return fmt.Errorf("phase %q", got.Status.Phase)
		}
		return nil
	}, "workspace %s in %s Ready", name, parent)
	return logicalcluster.Name(got.Spec.Cluster)
}
