package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/test/framework"
)

var workspaceAuthenticationConfigurationsGVR = tenancyv1alpha1.SchemeGroupVersion.WithResource("workspaceauthenticationconfigurations")

// mappings returns claim mappings of a username and groups.
func mappings(username, groups tenancyv1alpha1.PrefixedClaimOrExpression) tenancyv1alpha1.WorkspaceAuthenticationConfigurationSpec {
	return tenancyv1alpha1.WorkspaceAuthenticationConfigurationSpec{JWT: []tenancyv1alpha1.JWTAuthenticator{{
		Issuer:        tenancyv1alpha1.Issuer{URL: "https://example.com"},
		ClaimMappings: tenancyv1alpha1.ClaimMappings{Username: username, Groups: groups},
	}}}
}

// TestAcceptableWorkspaceAuthenticationConfigurations mirrors kcp's test of
// the same name: the configurations it creates in an organization are
// accepted or refused with the messages of kcp's CRD validation.
func TestAcceptableWorkspaceAuthenticationConfigurations(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx := testContext(t)
	org := e.readyOrg(ctx, t, "oidc-acceptable")
	kcp := e.kcp(t, kcpAdmin)

	for name, tc := range map[string]struct {
		spec    tenancyv1alpha1.WorkspaceAuthenticationConfigurationSpec
		wantErr string
	}{
		"empty": {wantErr: "spec.jwt: Required value"},
		"minimal-claim": {spec: mappings(
			tenancyv1alpha1.PrefixedClaimOrExpression{Claim: "email"},
			tenancyv1alpha1.PrefixedClaimOrExpression{Claim: "groups"})},
		"minimal-expression": {spec: mappings(
			tenancyv1alpha1.PrefixedClaimOrExpression{Expression: "concat('oidc:', email)"},
			tenancyv1alpha1.PrefixedClaimOrExpression{Expression: "groups"})},
		"claim-and-expression": {spec: mappings(
			tenancyv1alpha1.PrefixedClaimOrExpression{Claim: "email", Expression: "concat('oidc:', email)"},
			tenancyv1alpha1.PrefixedClaimOrExpression{Claim: "roles", Expression: "groups"}),
			wantErr: "claim and expression cannot both be specified"},
		"expression-and-prefix": {spec: mappings(
			tenancyv1alpha1.PrefixedClaimOrExpression{Prefix: ptr.To("random-prefix:"), Expression: "concat('oidc:', email)"},
			tenancyv1alpha1.PrefixedClaimOrExpression{Prefix: ptr.To("group-random-prefix:"), Expression: "groups"}),
			wantErr: "prefix can only be specified when claim is specified"},
	} {
		t.Run(name, func(t *testing.T) {
			wac := &tenancyv1alpha1.WorkspaceAuthenticationConfiguration{
				TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "WorkspaceAuthenticationConfiguration"},
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       tc.spec,
			}
			err := kcp.create(ctx, org.path(), workspaceAuthenticationConfigurationsGVR, wac, &tenancyv1alpha1.WorkspaceAuthenticationConfiguration{})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("create %s: %v", name, err)
				}
				return
			}
			requireAPIError(t, err, 422, "create "+name, tc.wantErr)
		})
	}
}

// oidcClient returns a client of a logical cluster on the shard that
// presents only a bearer token.
func oidcClient(t *testing.T, e *wsEnv, cluster, token string) kubernetes.Interface {
	t.Helper()
	cfg := rest.AnonymousClientConfig(e.config(t, kcpAdmin, cluster))
	cfg.BearerToken = token
	return newKubeClient(t, cfg)
}

// createOIDCConfiguration creates a WorkspaceAuthenticationConfiguration
// for issuer in a cluster, prefixing usernames and groups with prefix, as
// kcp's tests do.
func createOIDCConfiguration(ctx context.Context, t *testing.T, e *wsEnv, cluster string, issuer *framework.OIDCIssuer, prefix string) string {
	t.Helper()
	name := uniqueName("oidc")
	wac := issuer.AuthenticationConfiguration(name, prefix)
	if err := e.kcp(t, kcpAdmin).create(ctx, cluster, workspaceAuthenticationConfigurationsGVR, wac, &tenancyv1alpha1.WorkspaceAuthenticationConfiguration{}); err != nil {
		t.Fatalf("create WorkspaceAuthenticationConfiguration in %s: %v", cluster, err)
	}
	return name
}

// authRefs names configurations in a WorkspaceType.
func authRefs(names ...string) []tenancyv1alpha1.AuthenticationConfigurationReference {
	var refs []tenancyv1alpha1.AuthenticationConfigurationReference
	for _, n := range names {
		refs = append(refs, tenancyv1alpha1.AuthenticationConfigurationReference{Name: n})
	}
	return refs
}

// eventuallyAuthenticated polls until c lists configmaps: the type's
// authenticator is built on first use and fetches the issuer's keys
// asynchronously, answering 401 meanwhile.
func eventuallyAuthenticated(t *testing.T, what string, c kubernetes.Interface) {
	t.Helper()
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		return listConfigMaps(ctx, c)
	}, "%s: never allowed", what)
}

// TestWorkspaceOIDC mirrors kcp's TestWorkspaceOIDC, TestUserScope and
// TestForbiddenSystemAccess on the shard: a workspace whose type names a
// configuration accepts the issuer's tokens with the claim mappings
// applied and the workspace's scope; a workspace of another type and root
// answer 401; system groups gain nothing; a configuration added to an
// existing type works for its existing workspaces.
func TestWorkspaceOIDC(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx := testContext(t)
	org := e.readyOrg(ctx, t, "oidc")
	kcp := e.kcp(t, kcpAdmin)
	issuer := framework.StartOIDCIssuer(t)
	authConfig := createOIDCConfiguration(ctx, t, e, org.path(), issuer, "oidc:")

	withOIDC := createWorkspaceType(ctx, t, kcp, org.path(), uniqueName("with-oidc"), tenancyv1alpha1.WorkspaceTypeSpec{AuthenticationConfigurations: authRefs(authConfig)})
	without := createWorkspaceType(ctx, t, kcp, org.path(), uniqueName("without-oidc"), tenancyv1alpha1.WorkspaceTypeSpec{})
	teamA := readyWorkspace(ctx, t, kcp, org.path(), "team-a", typeRef(withOIDC.Name, org.path()))
	teamB := readyWorkspace(ctx, t, kcp, org.path(), "team-b", typeRef(without.Name, org.path()))
	for _, w := range []ws{teamA, teamB} {
		bindClusterRole(ctx, t, e.kube(t, kcpAdmin, w.path()), "allow-oidc-user", "cluster-admin",
			userSubject("oidc:user-a@example.com"), rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "oidc:developers"})
	}

	token := issuer.Token(t, "user-a", "user-a@example.com", []string{"developers", "admins"})
	eventuallyAuthenticated(t, "user-a in team-a", oidcClient(t, e, teamA.path(), token))

	t.Run("SelfSubjectReviewReportsTheMappedScopedUser", func(t *testing.T) {
		review, err := oidcClient(t, e, teamA.path(), token).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SelfSubjectReview: %v", err)
		}
		u := review.Status.UserInfo
		if u.Username != "oidc:user-a@example.com" {
			t.Errorf("username %q, want oidc:user-a@example.com", u.Username)
		}
		for _, g := range []string{"system:authenticated", "oidc:developers", "oidc:admins"} {
			if !slices.Contains(u.Groups, g) {
				t.Errorf("groups %v lack %s", u.Groups, g)
			}
		}
		if got, want := u.Extra["authentication.kcp.io/scopes"], (authenticationv1.ExtraValue{"cluster:" + teamA.cluster()}); !slices.Equal(got, want) {
			t.Errorf("scopes %v, want %v", got, want)
		}
	})

	t.Run("TokenReviewInTheWorkspaceReportsTheUser", func(t *testing.T) {
		for _, tc := range []struct {
			w    ws
			want bool
		}{{teamA, true}, {teamB, false}} {
			review, err := e.kube(t, kcpAdmin, tc.w.path()).AuthenticationV1().TokenReviews().Create(ctx,
				&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("TokenReview in %s: %v", tc.w.path(), err)
			}
			if review.Status.Authenticated != tc.want {
				t.Errorf("TokenReview in %s: authenticated %v (%s), want %v", tc.w.path(), review.Status.Authenticated, review.Status.Error, tc.want)
			}
			if tc.want && review.Status.User.Username != "oidc:user-a@example.com" {
				t.Errorf("TokenReview in %s: user %q, want oidc:user-a@example.com", tc.w.path(), review.Status.User.Username)
			}
		}
	})

	t.Run("OtherWorkspacesAnswerUnauthorized", func(t *testing.T) {
		for _, cluster := range []string{teamB.path(), "root"} {
			err := listConfigMaps(ctx, oidcClient(t, e, cluster, token))
			if !apierrors.IsUnauthorized(err) {
				t.Errorf("token of team-a's issuer in %s: %v, want 401", cluster, err)
			}
		}
	})

	t.Run("ShardPathsAnswerUnauthorized", func(t *testing.T) {
		// Without /clusters/ the request is the shard's own, in no
		// workspace whose type could name the issuer.
		cfg := rest.AnonymousClientConfig(e.s.ClientConfig(t, "base"))
		cfg.Host = e.s.BaseURL(t)
		cfg.BearerToken = token
		_, err := newKubeClient(t, cfg).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) {
			t.Errorf("token of team-a's issuer on /api/v1/namespaces of the shard: %v, want 401", err)
		}
	})

	t.Run("SystemGroupsGainNothing", func(t *testing.T) {
		hacker := issuer.Token(t, "hacker", "hacker@example.com", []string{"system:masters", "system:kcp:admin"})
		err := listConfigMaps(ctx, oidcClient(t, e, teamA.path(), hacker))
		// Authenticated, but system:masters and system:kcp:admin are gone:
		// not even let into the workspace.
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), accessDenied) {
			t.Errorf("hacker with system groups in team-a: %v, want 403 %q", err, accessDenied)
		}
	})

	t.Run("ConfigurationAddedToExistingTypeWorks", func(t *testing.T) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			wt := &tenancyv1alpha1.WorkspaceType{}
			if err := kcp.get(ctx, org.path(), workspaceTypesGVR, without.Name, wt); err != nil {
				return err
			}
			wt.Spec.AuthenticationConfigurations = authRefs(authConfig)
			return kcp.update(ctx, org.path(), workspaceTypesGVR, wt.Name, wt, &tenancyv1alpha1.WorkspaceType{})
		})
		if err != nil {
			t.Fatalf("add configuration to %s: %v", without.Name, err)
		}
		eventuallyAuthenticated(t, "user-a in team-b after its type names the configuration", oidcClient(t, e, teamB.path(), token))
	})
}

// TestWorkspaceIssuerCannotMintSystemUsers mirrors kcp's
// TestForbiddenSystemAccess: a configuration without prefixes cannot make
// a system: user.
func TestWorkspaceIssuerCannotMintSystemUsers(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx := testContext(t)
	org := e.readyOrg(ctx, t, "oidc-evil")
	kcp := e.kcp(t, kcpAdmin)
	issuer := framework.StartOIDCIssuer(t)
	evil := createOIDCConfiguration(ctx, t, e, org.path(), issuer, "")
	wt := createWorkspaceType(ctx, t, kcp, org.path(), uniqueName("evil"), tenancyv1alpha1.WorkspaceTypeSpec{AuthenticationConfigurations: authRefs(evil)})
	team := readyWorkspace(ctx, t, kcp, org.path(), "team", typeRef(wt.Name, org.path()))
	bindClusterRole(ctx, t, e.kube(t, kcpAdmin, team.path()), "allow-dummy", "cluster-admin", userSubject("dummy@example.com"))
	eventuallyAuthenticated(t, "dummy in team", oidcClient(t, e, team.path(), issuer.Token(t, "dummy", "dummy@example.com", nil)))

	err := listConfigMaps(ctx, oidcClient(t, e, team.path(), issuer.Token(t, "al", "al@bundy.com", []string{"system:kcp:admin"})))
	if !apierrors.IsForbidden(err) {
		t.Errorf("system:kcp:admin group claim: %v, want 403", err)
	}
	err = listConfigMaps(ctx, oidcClient(t, e, team.path(), issuer.Token(t, "al", "system:masters", nil)))
	if !apierrors.IsUnauthorized(err) {
		t.Errorf("system: username: %v, want 401", err)
	}
}

// workspaceAuthenticationHook is the shard's post-start hook that runs the
// authenticators of workspace types' issuers; /livez?verbose lists it.
const workspaceAuthenticationHook = "poststarthook/shardplane-workspace-authentication"

// livezChecks returns the checks a shard's /livez?verbose lists.
func livezChecks(ctx context.Context, t *testing.T, s *framework.Shard) string {
	t.Helper()
	body, err := newKubeClient(t, s.ClientConfig(t, "base")).CoreV1().RESTClient().Get().AbsPath("/livez").Param("verbose", "").DoRaw(ctx)
	if err != nil {
		t.Fatalf("/livez?verbose: %v", err)
	}
	return string(body)
}

// TestWorkspaceIssuersNeedTheWorkspaceAuthenticationGate: kcp's
// WorkspaceAuthentication gate is alpha and off by default. The shared
// shard, started with it as kcp's e2e server is, runs the issuers'
// authenticators; a shard started without it runs none, and a token of an
// issuer that a workspace's type names is 401 there, in the workspace and
// in its TokenReview.
func TestWorkspaceIssuersNeedTheWorkspaceAuthenticationGate(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	if checks := livezChecks(ctx, t, sharedShard(t)); !strings.Contains(checks, workspaceAuthenticationHook) {
		t.Fatalf("the shard started with the gate lacks %s:\n%s", workspaceAuthenticationHook, checks)
	}

	e := &wsEnv{s: framework.StartShard(t, framework.WithTokenUsers(framework.KCPTestTokenUsers()...))}
	e.waitForRootBootstrap(t)
	if checks := livezChecks(ctx, t, e.s); strings.Contains(checks, workspaceAuthenticationHook) {
		t.Errorf("the shard started without the gate runs %s:\n%s", workspaceAuthenticationHook, checks)
	}
	org := e.readyOrg(ctx, t, "oidc-gate")
	kcp := e.kcp(t, kcpAdmin)
	issuer := framework.StartOIDCIssuer(t)
	authConfig := createOIDCConfiguration(ctx, t, e, org.path(), issuer, "oidc:")
	wt := createWorkspaceType(ctx, t, kcp, org.path(), uniqueName("with-oidc"), tenancyv1alpha1.WorkspaceTypeSpec{AuthenticationConfigurations: authRefs(authConfig)})
	team := readyWorkspace(ctx, t, kcp, org.path(), "team", typeRef(wt.Name, org.path()))
	bindClusterRole(ctx, t, e.kube(t, kcpAdmin, team.path()), "allow-oidc-user", "cluster-admin", userSubject("oidc:user-a@example.com"))
	token := issuer.Token(t, "user-a", "user-a@example.com", nil)

	if err := listConfigMaps(ctx, oidcClient(t, e, team.path(), token)); !apierrors.IsUnauthorized(err) {
		t.Errorf("issuer's token in team without the gate: %v, want 401", err)
	}
	review, err := e.kube(t, kcpAdmin, team.path()).AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenReview in team: %v", err)
	}
	if review.Status.Authenticated {
		t.Errorf("TokenReview in team without the gate authenticated %q", review.Status.User.Username)
	}
}
