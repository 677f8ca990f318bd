package workspaceauth

import (
	"k8s.io/apiserver/pkg/apis/apiserver"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
)

// upstreamJWT converts a JWT authenticator of a
// WorkspaceAuthenticationConfiguration into upstream's structured
// authentication type, which has no JSON tags and so cannot be served.
func upstreamJWT(in tenancyv1alpha1.JWTAuthenticator) apiserver.JWTAuthenticator {
	out := apiserver.JWTAuthenticator{
		Issuer: apiserver.Issuer{
			URL:                  in.Issuer.URL,
			DiscoveryURL:         in.Issuer.DiscoveryURL,
			CertificateAuthority: in.Issuer.CertificateAuthority,
			Audiences:            in.Issuer.Audiences,
			AudienceMatchPolicy:  apiserver.AudienceMatchPolicyType(in.Issuer.AudienceMatchPolicy),
		},
		ClaimMappings: apiserver.ClaimMappings{
			Username: upstreamPrefixed(in.ClaimMappings.Username),
			Groups:   upstreamPrefixed(in.ClaimMappings.Groups),
			UID:      apiserver.ClaimOrExpression{Claim: in.ClaimMappings.UID.Claim, Expression: in.ClaimMappings.UID.Expression},
		},
	}
	for _, r := range in.ClaimValidationRules {
		out.ClaimValidationRules = append(out.ClaimValidationRules, apiserver.ClaimValidationRule{
			Claim: r.Claim, RequiredValue: r.RequiredValue, Expression: r.Expression, Message: r.Message,
		})
	}
	for _, e := range in.ClaimMappings.Extra {
		out.ClaimMappings.Extra = append(out.ClaimMappings.Extra, apiserver.ExtraMapping{Key: e.Key, ValueExpression: e.ValueExpression})
	}
	for _, r := range in.UserValidationRules {
		out.UserValidationRules = append(out.UserValidationRules, apiserver.UserValidationRule{Expression: r.Expression, Message: r.Message})
	}
	return out
}

func upstreamPrefixed(in tenancyv1alpha1.PrefixedClaimOrExpression) apiserver.PrefixedClaimOrExpression {
	return apiserver.PrefixedClaimOrExpression{Claim: in.Claim, Prefix: in.Prefix, Expression: in.Expression}
}
