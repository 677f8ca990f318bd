package v1alpha1

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestValidateWorkspaceAuthenticationConfigurationReportsKcpMessages(t *testing.T) {
	jwt := func(username, groups PrefixedClaimOrExpression) []JWTAuthenticator {
		return []JWTAuthenticator{{
			Issuer:        Issuer{URL: "https://example.com"},
			ClaimMappings: ClaimMappings{Username: username, Groups: groups},
		}}
	}
	for name, tc := range map[string]struct {
		spec    WorkspaceAuthenticationConfigurationSpec
		wantErr string
	}{
		"empty":              {wantErr: "spec.jwt: Required value"},
		"minimal-claim":      {spec: WorkspaceAuthenticationConfigurationSpec{JWT: jwt(PrefixedClaimOrExpression{Claim: "email"}, PrefixedClaimOrExpression{Claim: "groups"})}},
		"minimal-expression": {spec: WorkspaceAuthenticationConfigurationSpec{JWT: jwt(PrefixedClaimOrExpression{Expression: "concat('oidc:', email)"}, PrefixedClaimOrExpression{Expression: "groups"})}},
		"claim-and-expression": {
			spec:    WorkspaceAuthenticationConfigurationSpec{JWT: jwt(PrefixedClaimOrExpression{Claim: "email", Expression: "x"}, PrefixedClaimOrExpression{Claim: "roles", Expression: "groups"})},
			wantErr: "claim and expression cannot both be specified",
		},
		"expression-and-prefix": {
			spec:    WorkspaceAuthenticationConfigurationSpec{JWT: jwt(PrefixedClaimOrExpression{Prefix: ptr.To("p:"), Expression: "x"}, PrefixedClaimOrExpression{Expression: "groups"})},
			wantErr: "spec.jwt[0].claimMappings.username: Invalid value: \"object\": prefix can only be specified when claim is specified",
		},
		"no-username": {
			spec:    WorkspaceAuthenticationConfigurationSpec{JWT: jwt(PrefixedClaimOrExpression{}, PrefixedClaimOrExpression{Claim: "groups"})},
			wantErr: "either claim or expression must be specified",
		},
		"no-issuer-url": {
			spec:    WorkspaceAuthenticationConfigurationSpec{JWT: []JWTAuthenticator{{ClaimMappings: ClaimMappings{Username: PrefixedClaimOrExpression{Claim: "sub"}, Groups: PrefixedClaimOrExpression{Claim: "groups"}}}}},
			wantErr: "spec.jwt[0].issuer.url: Required value",
		},
		"required-value-without-claim": {
			spec: WorkspaceAuthenticationConfigurationSpec{JWT: []JWTAuthenticator{{
				Issuer:               Issuer{URL: "https://example.com"},
				ClaimValidationRules: []ClaimValidationRule{{Expression: "true", RequiredValue: "x"}},
				ClaimMappings:        ClaimMappings{Username: PrefixedClaimOrExpression{Claim: "sub"}, Groups: PrefixedClaimOrExpression{Claim: "groups"}},
			}}},
			wantErr: "requiredValue can only be specified when claim is specified",
		},
	} {
		t.Run(name, func(t *testing.T) {
			wac := &WorkspaceAuthenticationConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: tc.spec}
			errs := ValidateWorkspaceAuthenticationConfiguration(wac)
			if tc.wantErr == "" {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if got := errs.ToAggregate(); got == nil || !strings.Contains(got.Error(), tc.wantErr) {
				t.Fatalf("errors %v do not contain %q", got, tc.wantErr)
			}
		})
	}
}
