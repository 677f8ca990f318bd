package e2e

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
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
