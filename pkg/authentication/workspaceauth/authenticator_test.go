package workspaceauth

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// testSources serve one workspace, "team", of type "with-oidc" in "org",
// which names the configurations in refs.
type testSources struct {
	refs []string
}

func (s *testSources) sources() Sources {
	return Sources{
		TypeOf: func(cluster logicalcluster.Name) (*tenancyv1alpha1.WorkspaceType, bool) {
			if cluster != "team" {
				return nil, false
			}
			wt := &tenancyv1alpha1.WorkspaceType{ObjectMeta: metav1.ObjectMeta{Name: "with-oidc", Annotations: map[string]string{logicalcluster.AnnotationKey: "org"}}}
			for _, r := range s.refs {
				wt.Spec.AuthenticationConfigurations = append(wt.Spec.AuthenticationConfigurations, tenancyv1alpha1.AuthenticationConfigurationReference{Name: r})
			}
			return wt, true
		},
		Config: func(cluster logicalcluster.Name, name string) *tenancyv1alpha1.WorkspaceAuthenticationConfiguration {
			if cluster != "org" {
				return nil
			}
			return &tenancyv1alpha1.WorkspaceAuthenticationConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Generation: 1},
				Spec: tenancyv1alpha1.WorkspaceAuthenticationConfigurationSpec{JWT: []tenancyv1alpha1.JWTAuthenticator{{
					// nothing listens there: the issuer keeps retrying discovery until stopped
					Issuer:        tenancyv1alpha1.Issuer{URL: "https://127.0.0.1:1/" + name, Audiences: []string{"test"}},
					ClaimMappings: tenancyv1alpha1.ClaimMappings{Username: tenancyv1alpha1.PrefixedClaimOrExpression{Claim: "sub", Prefix: ptr.To("")}},
				}}},
			}
		},
	}
}

// running returns an authenticator that may start issuers until the test
// ends.
func running(t *testing.T, s *testSources) *Authenticator {
	t.Helper()
	a := New(s.sources(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	a.lifecycle = ctx
	return a
}

// built returns the types whose authenticators run.
func built(a *Authenticator) map[typeKey]*typeAuthenticator {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[typeKey]*typeAuthenticator{}
	for k, v := range a.byType {
		out[k] = v
	}
	return out
}

var withOIDC = typeKey{cluster: "org", name: "with-oidc"}

func TestAuthenticatorsOfGoneTypesAndConfigurationsAreStopped(t *testing.T) {
	for name, tc := range map[string]struct {
		forget   func(a *Authenticator, s *testSources)
		wantKept bool
	}{
		"type deleted": {forget: func(a *Authenticator, _ *testSources) { a.ForgetType("org", "with-oidc") }},
		"type of the same name in another workspace deleted": {
			forget: func(a *Authenticator, _ *testSources) { a.ForgetType("other", "with-oidc") }, wantKept: true},
		"configuration deleted": {forget: func(a *Authenticator, _ *testSources) { a.ForgetConfiguration("org", "oidc-a") }},
		"configuration the type does not name deleted": {
			forget: func(a *Authenticator, _ *testSources) { a.ForgetConfiguration("org", "oidc-other") }, wantKept: true},
		"configuration of the same name in another workspace deleted": {
			forget: func(a *Authenticator, _ *testSources) { a.ForgetConfiguration("other", "oidc-a") }, wantKept: true},
		"type names no configuration any more": {forget: func(a *Authenticator, s *testSources) {
			s.refs = nil
			if a.forCluster("team") != nil {
				t.Error("a type without configurations authenticates")
			}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			s := &testSources{refs: []string{"oidc-a", "oidc-b"}}
			a := running(t, s)
			if a.forCluster("team") == nil {
				t.Fatal("no authenticator built for team's type")
			}
			before := built(a)[withOIDC]
			if before == nil {
				t.Fatalf("built %v, want with-oidc of org", built(a))
			}
			tc.forget(a, s)
			after, kept := built(a)[withOIDC]
			if kept != tc.wantKept {
				t.Fatalf("kept %v, want %v", kept, tc.wantKept)
			}
			if kept && after != before {
				t.Error("the authenticator was rebuilt")
			}
			// a dropped authenticator's issuers stop: its context is done
			if !kept {
				select {
				case <-before.done:
				default:
					t.Error("the dropped authenticator's issuers still run")
				}
			}
		})
	}
}

func TestForgottenTypeIsBuiltAgainOnUse(t *testing.T) {
	a := running(t, &testSources{refs: []string{"oidc-a"}})
	a.forCluster("team")
	a.ForgetType("org", "with-oidc")
	if a.forCluster("team") == nil || built(a)[withOIDC] == nil {
		t.Error("a forgotten type that is used again has no authenticator")
	}
}
