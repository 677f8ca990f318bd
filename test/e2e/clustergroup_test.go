package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/authorization/workspacecontent"
	"github.com/shardplane/shardplane/test/framework"
)

// TestOtherWorkspacesIdentitiesBindByTheirClusterGroup mirrors kcp's
// TestServiceAccount, TestScopedUser and TestUserWithWarrants
// (test/e2e/apibinding/cross_workspace_auth_test.go): the provider's
// workspace grants "bind" on its export to the group
// system:cluster:<consumer's logical cluster>, the consumer lets
// authenticated users manage APIBindings, and an identity of the consumer —
// its service account, a user scoped to it, a user with a warrant scoped to
// it — binds the export and sees its group in the consumer's discovery.
// Beyond kcp's test, each first tries before the grant and is refused.
func TestOtherWorkspacesIdentitiesBindByTheirClusterGroup(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaces(t)
	for _, identity := range []string{"ServiceAccount", "ScopedUser", "UserWithWarrants"} {
		t.Run(identity, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			kcp := e.kcp(t, kcpAdmin)
			org := e.readyOrg(ctx, t, "xws-"+strings.ToLower(identity))
			consumer := readyWorkspace(ctx, t, kcp, org.path(), "consumer", nil)
			provider := readyWorkspace(ctx, t, kcp, org.path(), "provider", nil)

			schemaName := "today.widgets.example.io"
			if err := kcp.create(ctx, provider.path(), apiResourceSchemasGVR, widgetSchema(schemaName), &apisv1alpha1.APIResourceSchema{}); err != nil {
				t.Fatalf("create APIResourceSchema: %v", err)
			}
			export := &apisv1alpha2.APIExport{
				TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
				ObjectMeta: metav1.ObjectMeta{Name: "today-widgets"},
				Spec:       apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{Name: "widgets", Group: "example.io", Schema: schemaName}}},
			}
			if err := kcp.create(ctx, provider.path(), apiExportsGVR, export, &apisv1alpha2.APIExport{}); err != nil {
				t.Fatalf("create APIExport: %v", err)
			}

			consumerAdmin := e.kube(t, kcpAdmin, consumer.path())
			createClusterRole(ctx, t, consumerAdmin, "manage-apibindings",
				rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{apisv1alpha2.SchemeGroupVersion.Group}, Resources: []string{"apibindings"}},
				rbacv1.PolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}})
			bindClusterRole(ctx, t, consumerAdmin, "authenticated-manage-apibindings", "manage-apibindings", rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:authenticated"})

			var cfg *rest.Config
			switch identity {
			case "ServiceAccount":
				cfg = rest.AnonymousClientConfig(e.config(t, kcpAdmin, consumer.path()))
				cfg.BearerToken = serviceAccountToken(ctx, t, e, consumer, "default-sa")
			case "ScopedUser", "UserWithWarrants":
				// user-1 administers the consumer, user-2 may enter it.
				bindClusterRole(ctx, t, consumerAdmin, "user-1-admin", "cluster-admin", userSubject("user-1"))
				bindClusterRole(ctx, t, consumerAdmin, "user-2-access", workspaceAccessRole, userSubject("user-2"))
				cfg = e.config(t, "user-1", consumer.path())
				scopes := map[string][]string{"authentication.kcp.io/scopes": {"cluster:" + consumer.cluster()}}
				if identity == "ScopedUser" {
					cfg.Impersonate = rest.ImpersonationConfig{UserName: "user-2", Extra: scopes}
				} else {
					w := fmt.Sprintf(`{"user":"user-2","extra":{"authentication.kcp.io/scopes":["cluster:%s"]}}`, consumer.cluster())
					cfg.Impersonate = rest.ImpersonationConfig{UserName: "user-1", Extra: map[string][]string{"authorization.kcp.io/warrant": {w}}}
				}
			}
			base := rest.CopyConfig(cfg)
			base.Host = e.s.BaseURL(t)
			client := newKCPREST(t, base)
			binding := bindingTo("today-widgets", provider.path(), "today-widgets")
			bind := func(ctx context.Context) error {
				return client.create(ctx, consumer.path(), apiBindingsGVR, binding, &apisv1alpha2.APIBinding{})
			}

			framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
				err := bind(ctx)
				if err == nil {
					t.Fatalf("%s bound before the provider granted its cluster's group", identity)
				}
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "no permission to bind") {
					return fmt.Errorf("not yet the bind refusal: %w", err)
				}
				return nil
			}, "%s refused to bind before the grant", identity)

			providerAdmin := e.kube(t, kcpAdmin, provider.path())
			createClusterRole(ctx, t, providerAdmin, "bind-apiexport", rbacv1.PolicyRule{
				Verbs: []string{"bind"}, APIGroups: []string{apisv1alpha2.SchemeGroupVersion.Group}, Resources: []string{"apiexports"}, ResourceNames: []string{"today-widgets"},
			})
			bindClusterRole(ctx, t, providerAdmin, "bind-apiexport", "bind-apiexport", rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:cluster:" + consumer.cluster()})
			eventuallyAllowed(ctx, t, identity+" binds with its cluster's group granted", bind)
			if identity == "ServiceAccount" {
				// A SubjectAccessReview in the provider for it: denied
				// without access to the provider, allowed as kcp's deep
				// review, which the bind check is.
				spec := authorizationv1.SubjectAccessReviewSpec{
					User: "system:serviceaccount:default-sa:default", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:default-sa", "system:authenticated"},
					Extra:              map[string]authorizationv1.ExtraValue{saClusterExtra: {consumer.cluster()}},
					ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "bind", Group: apisv1alpha2.SchemeGroupVersion.Group, Resource: "apiexports", Name: "today-widgets"},
				}
				review, err := providerAdmin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
				if err != nil || review.Status.Allowed || !strings.Contains(review.Status.Reason, "system:cluster:"+consumer.cluster()) {
					t.Errorf("SubjectAccessReview in the provider for the consumer's service account: %+v, %v; want denied as a plain user of its cluster's group", review.Status, err)
				}
				deep := workspacecontent.WithDeepSARConfig(e.config(t, kcpAdmin, provider.path()))
				review, err = newKubeClient(t, deep).AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
				if err != nil || !review.Status.Allowed {
					t.Errorf("deep SubjectAccessReview in the provider for the consumer's service account: %+v, %v; want allowed", review.Status, err)
				}
			}
			framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
				groups, err := newKubeClient(t, cfg).Discovery().ServerGroups()
				if err != nil {
					return err
				}
				if !slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == "example.io" }) {
					return fmt.Errorf("example.io not in the consumer's discovery")
				}
				return nil
			}, "the bound group in the consumer's discovery as %s", identity)
		})
	}
}

// TestServiceAccountTokensCarryKCPsClusterAndServeInCluster: a bound token
// of kcp's audience authenticates, in its own workspace and in others
// (never 401: 403 where it may not enter), as the service account with
// kcp's cluster-name extra; a
// request without /clusters/ (an in-cluster client's) is served in the
// token's workspace, as kcp's in-cluster rewrite does.
func TestServiceAccountTokensCarryKCPsClusterAndServeInCluster(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaces(t)
	ctx := testContext(t)
	home := e.readyOrg(ctx, t, "sa-incluster")
	other := e.readyOrg(ctx, t, "sa-elsewhere")
	ns := uniqueName("sa")
	token := serviceAccountToken(ctx, t, e, home, ns, "https://kcp.default.svc")

	as := func(cluster string) *rest.Config {
		cfg := rest.AnonymousClientConfig(e.config(t, kcpAdmin, cluster))
		cfg.BearerToken = token
		return cfg
	}
	// Authenticated, not let in where it has no access: 403, never 401.
	_, err := newKubeClient(t, as(other.path())).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	requireAPIError(t, err, 403, "whoami in another workspace with the token of "+home.path(), accessDenied, "system:cluster:"+home.cluster())
	for _, cluster := range []string{home.path(), "root"} {
		review, err := newKubeClient(t, as(cluster)).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("whoami in %s with the token of %s: %v", cluster, home.path(), err)
		}
		if u := review.Status.UserInfo; u.Username != "system:serviceaccount:"+ns+":default" || !slices.Equal(u.Extra[saClusterExtra], []string{home.cluster()}) {
			t.Errorf("whoami in %s: %q extra %v, want the service account with %s=[%s]", cluster, u.Username, u.Extra, saClusterExtra, home.cluster())
		}
	}

	// The other workspace's RBAC grants it by its cluster's group.
	otherAdmin := e.kube(t, kcpAdmin, other.path())
	group := rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:cluster:" + home.cluster()}
	bindClusterRole(ctx, t, otherAdmin, ns+"-access", workspaceAccessRole, group)
	bindClusterRole(ctx, t, otherAdmin, ns+"-view", "view", group)
	eventuallyAllowed(ctx, t, "the service account lists configmaps where its cluster's group may", func(ctx context.Context) error {
		return listConfigMaps(ctx, newKubeClient(t, as(other.path())))
	})

	// In-cluster: the base URL, no /clusters/.
	inCluster := as("")
	inCluster.Host = e.s.BaseURL(t)
	bindClusterRole(ctx, t, e.kube(t, kcpAdmin, home.path()), ns+"-view", "view", serviceAccountSubject(ns))
	eventuallyAllowed(ctx, t, "in-cluster list of service accounts", func(ctx context.Context) error {
		list, err := newKubeClient(t, inCluster).CoreV1().ServiceAccounts(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) != 1 || list.Items[0].Name != "default" || list.Items[0].Annotations[clusterAnnotation] != home.cluster() {
			return fmt.Errorf("service accounts of %s in-cluster: %+v, want default of %s", ns, list.Items, home.cluster())
		}
		return nil
	})
}
