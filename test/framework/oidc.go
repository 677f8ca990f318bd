package framework

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	jose "gopkg.in/go-jose/go-jose.v2"
	"gopkg.in/go-jose/go-jose.v2/jwt"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
)

// OIDCIssuer is a minimal OpenID Connect provider for tests: discovery and
// key set over TLS with a certificate of its own, and tokens it signs on
// request. There is no login flow, as in kcp's mock issuer.
type OIDCIssuer struct {
	// URL is the issuer URL, the "iss" of its tokens.
	URL string
	// CA is the PEM certificate that verifies the issuer's TLS.
	CA string

	signer jose.Signer
}

// OIDCAudience is the audience of the issuer's tokens.
const OIDCAudience = "shardplane-e2e"

// StartOIDCIssuer starts an issuer on 127.0.0.1 until the test ends.
func StartOIDCIssuer(t testing.TB) *OIDCIssuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("issuer key: %v", err)
	}
	const kid = "e2e"
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatalf("issuer signer: %v", err)
	}
	issuer := &OIDCIssuer{signer: signer}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{
			"issuer":                                issuer.URL,
			"jwks_uri":                              issuer.URL + "/keys",
			"response_types_supported":              []string{"id_token"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"}}})
	})
	server := httptest.NewTLSServer(mux)
	t.Cleanup(server.Close)
	issuer.URL = server.URL
	issuer.CA = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: server.Certificate().Raw}))
	return issuer
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Token returns a token for a user with an email and groups, valid for an
// hour.
func (i *OIDCIssuer) Token(t testing.TB, subject, email string, groups []string) string {
	t.Helper()
	now := time.Now()
	claims := map[string]any{
		"iss":   i.URL,
		"sub":   subject,
		"aud":   OIDCAudience,
		"iat":   jwt.NewNumericDate(now),
		"exp":   jwt.NewNumericDate(now.Add(time.Hour)),
		"email": email,
		// upstream refuses an email claim whose address is not verified
		"email_verified": true,
	}
	if groups != nil {
		claims["groups"] = groups
	}
	token, err := jwt.Signed(i.signer).Claims(claims).CompactSerialize()
	if err != nil {
		t.Fatalf("sign token: %v", err)
	}
	return token
}

// AuthenticationConfiguration returns a WorkspaceAuthenticationConfiguration
// named name for the issuer, mapping the email and groups claims with
// prefix, as kcp's tests configure theirs.
func (i *OIDCIssuer) AuthenticationConfiguration(name, prefix string) *tenancyv1alpha1.WorkspaceAuthenticationConfiguration {
	return &tenancyv1alpha1.WorkspaceAuthenticationConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "WorkspaceAuthenticationConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: tenancyv1alpha1.WorkspaceAuthenticationConfigurationSpec{JWT: []tenancyv1alpha1.JWTAuthenticator{{
			Issuer: tenancyv1alpha1.Issuer{URL: i.URL, CertificateAuthority: i.CA, Audiences: []string{OIDCAudience}},
			ClaimMappings: tenancyv1alpha1.ClaimMappings{
				Username: tenancyv1alpha1.PrefixedClaimOrExpression{Claim: "email", Prefix: ptr.To(prefix)},
				Groups:   tenancyv1alpha1.PrefixedClaimOrExpression{Claim: "groups", Prefix: ptr.To(prefix)},
			},
		}}},
	}
}
