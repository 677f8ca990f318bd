package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkspaceAuthenticationConfiguration names JWT issuers whose tokens
// workspaces of the WorkspaceTypes referring to it accept, in addition to
// the system's own authentication. It has the shape of the JWT part of
// Kubernetes' structured AuthenticationConfiguration.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type WorkspaceAuthenticationConfiguration struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	Spec WorkspaceAuthenticationConfigurationSpec `json:"spec"`
}

// WorkspaceAuthenticationConfigurationSpec lists the JWT authenticators.
type WorkspaceAuthenticationConfigurationSpec struct {
	// jwt are the JWT authenticators; each issuer URL appears once.
	//
	// +required
	// +listType=atomic
	JWT []JWTAuthenticator `json:"jwt"`
}

// JWTAuthenticator authenticates tokens of one issuer.
type JWTAuthenticator struct {
	// issuer says where tokens come from and how to verify them.
	//
	// +required
	Issuer Issuer `json:"issuer"`
	// claimValidationRules must all hold for a token to be accepted.
	//
	// +optional
	// +listType=atomic
	ClaimValidationRules []ClaimValidationRule `json:"claimValidationRules,omitempty"`
	// claimMappings turn the token's claims into the user's attributes.
	//
	// +required
	ClaimMappings ClaimMappings `json:"claimMappings"`
	// userValidationRules must all hold for the mapped user.
	//
	// +optional
	// +listType=atomic
	UserValidationRules []UserValidationRule `json:"userValidationRules,omitempty"`
}

// Issuer configures an OIDC provider.
type Issuer struct {
	// url of the issuer, https://host or https://host/path; it must equal
	// the "iss" claim of the tokens and the issuer of the discovery document.
	//
	// +required
	URL string `json:"url"`
	// discoveryURL overrides "{url}/.well-known/openid-configuration" as
	// the address of the discovery document; it must differ from url.
	//
	// +optional
	DiscoveryURL string `json:"discoveryURL,omitempty"`
	// certificateAuthority is the PEM bundle that verifies the issuer's
	// TLS certificate; the system roots are used when empty.
	//
	// +optional
	CertificateAuthority string `json:"certificateAuthority,omitempty"`
	// audiences of which the "aud" claim must contain one.
	//
	// +optional
	// +listType=atomic
	Audiences []string `json:"audiences,omitempty"`
	// audienceMatchPolicy is "MatchAny" when several audiences are given.
	//
	// +optional
	AudienceMatchPolicy AudienceMatchPolicyType `json:"audienceMatchPolicy,omitempty"`
}

// AudienceMatchPolicyType says how the "aud" claim is matched against the
// audiences of an Issuer.
type AudienceMatchPolicyType string

// AudienceMatchPolicyMatchAny accepts a token whose "aud" claim contains
// any of the audiences.
const AudienceMatchPolicyMatchAny AudienceMatchPolicyType = "MatchAny"

// ClaimValidationRule is a claim that must have a value, or a CEL
// expression over the claims that must be true.
type ClaimValidationRule struct {
	// claim that must be present with requiredValue.
	//
	// +optional
	Claim string `json:"claim,omitempty"`
	// requiredValue of the claim.
	//
	// +optional
	RequiredValue string `json:"requiredValue,omitempty"`
	// expression in CEL over "claims" that must evaluate to true.
	//
	// +optional
	Expression string `json:"expression,omitempty"`
	// message returned when the expression is false.
	//
	// +optional
	Message string `json:"message,omitempty"`
}

// ClaimMappings turn claims into the username, groups, uid and extra of the
// authenticated user.
type ClaimMappings struct {
	// username is taken from a claim (with a prefix) or a CEL expression.
	//
	// +optional
	Username PrefixedClaimOrExpression `json:"username,omitempty"`
	// groups are taken from a claim (with a prefix) or a CEL expression.
	//
	// +optional
	Groups PrefixedClaimOrExpression `json:"groups,omitempty"`
	// uid is taken from a claim or a CEL expression.
	//
	// +optional
	UID ClaimOrExpression `json:"uid,omitempty"`
	// extra attributes, each a CEL expression.
	//
	// +optional
	// +listType=atomic
	Extra []ExtraMapping `json:"extra,omitempty"`
}

// PrefixedClaimOrExpression is a claim with an optional prefix, or a CEL
// expression.
type PrefixedClaimOrExpression struct {
	// claim to read.
	//
	// +optional
	Claim string `json:"claim,omitempty"`
	// prefix put before the claim's value.
	//
	// +optional
	Prefix *string `json:"prefix,omitempty"`
	// expression in CEL over "claims".
	//
	// +optional
	Expression string `json:"expression,omitempty"`
}

// ClaimOrExpression is a claim or a CEL expression.
type ClaimOrExpression struct {
	// claim to read.
	//
	// +optional
	Claim string `json:"claim,omitempty"`
	// expression in CEL over "claims".
	//
	// +optional
	Expression string `json:"expression,omitempty"`
}

// ExtraMapping maps a CEL expression to an extra attribute.
type ExtraMapping struct {
	// key of the extra attribute, a domain-prefixed lowercase path.
	//
	// +required
	Key string `json:"key"`
	// valueExpression in CEL giving a string or a list of strings.
	//
	// +required
	ValueExpression string `json:"valueExpression"`
}

// UserValidationRule is a CEL expression over "user" that must be true.
type UserValidationRule struct {
	// expression in CEL over "user".
	//
	// +required
	Expression string `json:"expression"`
	// message returned when the expression is false.
	//
	// +optional
	Message string `json:"message"`
}

// WorkspaceAuthenticationConfigurationList is a list of
// WorkspaceAuthenticationConfigurations.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type WorkspaceAuthenticationConfigurationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []WorkspaceAuthenticationConfiguration `json:"items"`
}
