package e2esystem

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

// tokenClient returns a client of a workspace through the front-proxy that
// presents only a bearer token.
func tokenClient(t *testing.T, cluster, token string) kubernetes.Interface {
	t.Helper()
	cfg := rest.AnonymousClientConfig(sys.AdminConfig(t, cluster))
	cfg.BearerToken = token
	return kube(t, cfg)
}

// TestWorkspaceOIDCThroughTheFrontProxy mirrors kcp's TestWorkspaceOIDC
// through the front-proxy: a workspace whose type names a
// WorkspaceAuthenticationConfiguration accepts the issuer's token, which
// is refused (401) in a workspace of another type; the identity passed on
// is the mapped user, scoped to the workspace, without system groups.
func TestWorkspaceOIDCThroughTheFrontProxy(t *testing.T) {
	ctx := testContext(t)
	org := readyWorkspace(ctx, t, "root", uniqueName("oidc"), "", "")
	orgCluster := logicalcluster.Name(org.Spec.Cluster)
	admin := kcp(t, sys.AdminConfig(t, ""))
	issuer := framework.StartOIDCIssuer(t)

	wac := issuer.AuthenticationConfiguration("mockoidc", "oidc:")
	if err := admin.Create(ctx, orgCluster, kcpclient.WorkspaceAuthenticationConfigurations, wac, &tenancyv1alpha1.WorkspaceAuthenticationConfiguration{}); err != nil {
		t.Fatalf("create WorkspaceAuthenticationConfiguration: %v", err)
	}
	wt := &tenancyv1alpha1.WorkspaceType{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "WorkspaceType"},
		ObjectMeta: metav1.ObjectMeta{Name: "with-oidc"},
		Spec:       tenancyv1alpha1.WorkspaceTypeSpec{AuthenticationConfigurations: []tenancyv1alpha1.AuthenticationConfigurationReference{{Name: wac.Name}}},
	}
	if err := admin.Create(ctx, orgCluster, kcpclient.WorkspaceTypes, wt, &tenancyv1alpha1.WorkspaceType{}); err != nil {
		t.Fatalf("create WorkspaceType: %v", err)
	}
	// With several shards, the workspace goes to another shard than its
	// type's: the type and the configuration reach it through the cache
	// server.
	orgPath := "root:" + org.Name
	onShard := ""
	if shards > 1 {
		onShard = "root"
		if shardOf(org) == "root" {
			onShard = "shard-1"
		}
	}
	team := readyWorkspaceOfType(ctx, t, org.Spec.Cluster, "team-a", &tenancyv1alpha1.WorkspaceTypeReference{Name: "with-oidc", Path: orgPath}, onShard)
	if onShard != "" && shardOf(team) != onShard {
		t.Fatalf("team-a is on shard %q, want %q", shardOf(team), onShard)
	}
	for _, cluster := range []string{team.Spec.Cluster, org.Spec.Cluster} {
		b := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "allow-oidc-user"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "oidc:user-a@example.com"}},
		}
		if _, err := kube(t, sys.AdminConfig(t, cluster)).RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatalf("bind cluster-admin in %s: %v", cluster, err)
		}
	}

	token := issuer.Token(t, "user-a", "user-a@example.com", []string{"developers", "system:masters"})
	user := tokenClient(t, team.Spec.Cluster, token)
	// Built on first use, the authenticator answers 401 until it has the
	// issuer's keys.
	framework.EventuallyEvery(t, 200*time.Millisecond, framework.EventuallyTimeout, func(ctx context.Context) error {
		_, err := user.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		return err
	}, "issuer's token never accepted in %s through the front-proxy", team.Spec.Cluster)

	review, err := user.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview: %v", err)
	}
	u := review.Status.UserInfo
	if u.Username != "oidc:user-a@example.com" {
		t.Errorf("username %q, want oidc:user-a@example.com", u.Username)
	}
	if !slices.Contains(u.Groups, "oidc:developers") || slices.Contains(u.Groups, "system:masters") || slices.Contains(u.Groups, "oidc:system:masters") == false {
		t.Errorf("groups %v: want oidc:developers and oidc:system:masters (prefixed), not system:masters", u.Groups)
	}
	if got, want := u.Extra["authentication.kcp.io/scopes"], (authenticationv1.ExtraValue{"cluster:" + team.Spec.Cluster}); !slices.Equal(got, want) {
		t.Errorf("scopes %v, want %v", got, want)
	}

	// The organization's type names no configuration, though the user
	// has a binding there.
	_, err = tokenClient(t, org.Spec.Cluster, token).CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Errorf("token in %s (type without configuration): %v, want 401", org.Spec.Cluster, err)
	}
	// Without /clusters/ the request names no workspace whose issuers
	// could know the token.
	if code, body := rawGet(ctx, t, proxyClient(t), "/api/v1/namespaces", token, nil); code != http.StatusUnauthorized {
		t.Errorf("token on /api/v1/namespaces without a workspace: %d %s, want 401", code, body)
	}

	t.Run("ViewsThatNameTheWorkspace", func(t *testing.T) {
		framework.RequireViewsAcceptWorkspaceTokensOnlyThroughTheFrontProxy(ctx, t, sys, token, shardOf(team), team.Spec.Cluster, org.Spec.Cluster)
	})
}
