package e2e

import (
	"context"
	"errors"
	"slices"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/test/framework"
)

// saClusterExtra names the logical cluster of a service account (kcp's key).
const saClusterExtra = "authentication.kcp.io/cluster-name"

// serviceAccountToken creates namespace ns in a workspace, waits for its
// default service account and returns a bound token of it for audiences
// (the issuer when none).
func serviceAccountToken(ctx context.Context, t *testing.T, e *wsEnv, w ws, ns string, audiences ...string) string {
	t.Helper()
	admin := e.kube(t, kcpAdmin, w.path())
	createNamespace(ctx, t, admin, ns)
	var token string
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: audiences}}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if token = tr.Status.Token; token == "" {
			return errors.New("empty token")
		}
		return nil
	}, "token of %s/default in %s", ns, w.path())
	return token
}

// workspaceServiceAccount creates namespace ns in a workspace, waits for
// its default service account and returns a client with a token of it for
// any cluster.
func workspaceServiceAccount(ctx context.Context, t *testing.T, e *wsEnv, w ws, ns string) func(cluster string) kubernetes.Interface {
	t.Helper()
	token := serviceAccountToken(ctx, t, e, w, ns)
	return func(cluster string) kubernetes.Interface {
		cfg := rest.AnonymousClientConfig(e.config(t, kcpAdmin, cluster))
		cfg.BearerToken = token
		return newKubeClient(t, cfg)
	}
}

func serviceAccountSubject(ns string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "default"}
}

// hasResourceRule tells whether rules grant verb on resource.
func hasResourceRule(rules []authorizationv1.ResourceRule, verb, resource string) bool {
	return slices.ContainsFunc(rules, func(r authorizationv1.ResourceRule) bool {
		return (slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*")) && (slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*"))
	})
}

// TestServiceAccountIsJudgedByItsWorkspaceRBACAlone: an in-workspace
// controller's service account needs no "access" binding; without any
// binding it can still ask who it is, and its workspace's RBAC decides the
// rest.
func TestServiceAccountIsJudgedByItsWorkspaceRBACAlone(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaces(t)
	ctx := testContext(t)
	w := e.readyOrg(ctx, t, "sa-own")
	as := workspaceServiceAccount(ctx, t, e, w, "sa")
	sa := as(w.path())

	var review *authenticationv1.SelfSubjectReview
	eventuallyAllowed(ctx, t, "service account: whoami in its workspace", func(ctx context.Context) (err error) {
		review, err = sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return err
	})
	if u := review.Status.UserInfo; u.Username != "system:serviceaccount:sa:default" || !slices.Equal(u.Extra[saClusterExtra], []string{w.cluster()}) {
		t.Errorf("whoami: %q extra %v, want system:serviceaccount:sa:default of %s", u.Username, u.Extra, w.cluster())
	}
	err := listConfigMaps(ctx, sa)
	requireAPIError(t, err, 403, "service account without a binding: list configmaps", "cannot list")

	bindClusterRole(ctx, t, e.kube(t, kcpAdmin, w.path()), "sa-view", "view", serviceAccountSubject("sa"))
	eventuallyAllowed(ctx, t, "service account with view: list configmaps", func(ctx context.Context) error { return listConfigMaps(ctx, sa) })

	rules, err := sa.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "default"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectRulesReview: %v", err)
	}
	if !hasResourceRule(rules.Status.ResourceRules, "list", "configmaps") {
		t.Errorf("rules of the service account lack list configmaps: %+v", rules.Status.ResourceRules)
	}
}

// TestForeignServiceAccountIsAPlainAuthenticatedUser is a service account
// of one workspace that presents its token where a namesake service account
// is bound (in root and in another workspace): there it is not that
// service account but a plain authenticated user. SubjectAccessReview and
// SelfSubjectRulesReview answer the same.
func TestForeignServiceAccountIsAPlainAuthenticatedUser(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaces(t)
	ctx := testContext(t)
	ns := uniqueName("sa")
	home := e.readyOrg(ctx, t, "sa-home")
	other := e.readyOrg(ctx, t, "sa-other")
	as := workspaceServiceAccount(ctx, t, e, home, ns)
	bindClusterRole(ctx, t, e.kube(t, kcpAdmin, home.path()), "sa-admin", "cluster-admin", serviceAccountSubject(ns))
	eventuallyAllowed(ctx, t, "service account: list configmaps at home", func(ctx context.Context) error { return listConfigMaps(ctx, as(home.path())) })

	// The namesake is cluster-admin in another workspace and may read in root.
	bindClusterRole(ctx, t, e.kube(t, kcpAdmin, other.path()), ns+"-admin", "cluster-admin", serviceAccountSubject(ns))
	bindClusterRole(ctx, t, e.kube(t, kcpAdmin, "root"), ns+"-view", "view", serviceAccountSubject(ns))
	t.Cleanup(func() {
		_ = e.kube(t, kcpAdmin, "root").RbacV1().ClusterRoleBindings().Delete(context.Background(), ns+"-view", metav1.DeleteOptions{})
	})
	sar := func(extra map[string]authorizationv1.ExtraValue) bool {
		t.Helper()
		r, err := e.kube(t, kcpAdmin, "root").AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:serviceaccount:" + ns + ":default", Groups: []string{"system:serviceaccounts", "system:authenticated"}, Extra: extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "configmaps", Namespace: "default"},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SubjectAccessReview: %v", err)
		}
		return r.Status.Allowed
	}
	// The binding in root is effective for root's own service account.
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(context.Context) error {
		if !sar(map[string]authorizationv1.ExtraValue{saClusterExtra: {"root"}}) {
			return errors.New("denied")
		}
		return nil
	}, "SubjectAccessReview for root's own %s/default never allowed", ns)

	// In root, where authenticated users may enter, the foreign service
	// account is one of them: no more.
	root := as("root")
	err := listConfigMaps(ctx, root)
	requireAPIError(t, err, 403, "foreign service account: list configmaps in root", "act only in that cluster")
	if _, err := root.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{}); err != nil {
		t.Errorf("foreign service account: whoami in root: %v", err)
	}
	rules, err := root.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "default"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("foreign service account: SelfSubjectRulesReview in root: %v", err)
	}
	if hasResourceRule(rules.Status.ResourceRules, "list", "configmaps") {
		t.Errorf("foreign service account's rules in root include the namesake's view: %+v", rules.Status.ResourceRules)
	}
	if !hasResourceRule(rules.Status.ResourceRules, "create", "selfsubjectreviews") {
		t.Errorf("foreign service account's rules in root lack those of authenticated users: %+v", rules.Status.ResourceRules)
	}
	if sar(map[string]authorizationv1.ExtraValue{saClusterExtra: {home.cluster()}}) {
		t.Errorf("SubjectAccessReview in root allows the service account of %s", home.cluster())
	}

	// In the other workspace it is not even let in.
	err = listConfigMaps(ctx, as(other.path()))
	requireAPIError(t, err, 403, "foreign service account: list configmaps in a workspace where its namesake is admin", accessDenied)
	_, err = as(other.path()).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pwned"}}, metav1.CreateOptions{})
	requireStatus(t, err, 403, "foreign service account: create a namespace where its namesake is admin")
}

// TestWarrantsGrantOnlyInTheirScope: an identity is allowed what one of its
// warrants is allowed, in the clusters the warrant is scoped to. Warrants
// reach the shard only from trusted parties; here system:masters
// impersonates an identity carrying them.
func TestWarrantsGrantOnlyInTheirScope(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaces(t)
	ctx := testContext(t)
	w := e.readyOrg(ctx, t, "warrant")
	grantAccessAndView(ctx, t, e.kube(t, kcpAdmin, w.path()), "user-3")
	eventuallyAllowed(ctx, t, "user-3: list configmaps", func(ctx context.Context) error { return listConfigMaps(ctx, e.kube(t, "user-3", w.path())) })

	holder := func(warrant string) kubernetes.Interface {
		extra := map[string][]string{"authorization.kcp.io/warrant": {warrant}}
		return newKubeClient(t, impersonating(e.config(t, shardAdmin, w.path()), "warrant-holder", nil, extra))
	}
	err := listConfigMaps(ctx, newKubeClient(t, impersonating(e.config(t, shardAdmin, w.path()), "warrant-holder", nil, nil)))
	requireAPIError(t, err, 403, "warrant-holder without warrant: list configmaps", accessDenied)

	withWarrant := holder(`{"user":"user-3","groups":["system:authenticated"]}`)
	if err := listConfigMaps(ctx, withWarrant); err != nil {
		t.Errorf("warrant-holder with a warrant for user-3: list configmaps: %v", err)
	}
	rules, err := withWarrant.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "default"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectRulesReview with a warrant: %v", err)
	}
	if !hasResourceRule(rules.Status.ResourceRules, "list", "configmaps") {
		t.Errorf("rules with a warrant for user-3 lack user-3's view: %+v", rules.Status.ResourceRules)
	}
	err = listConfigMaps(ctx, holder(`{"user":"user-3","groups":["system:authenticated"],"extra":{"authentication.kcp.io/scopes":["cluster:elsewhere"]}}`))
	requireAPIError(t, err, 403, "warrant-holder with a warrant for user-3 scoped elsewhere: list configmaps", accessDenied)
	err = listConfigMaps(ctx, holder(`{"user":"system:serviceaccount:sa:default","groups":["system:authenticated"]}`))
	requireAPIError(t, err, 403, "warrant-holder with a warrant for a service account of no cluster", accessDenied)
}
