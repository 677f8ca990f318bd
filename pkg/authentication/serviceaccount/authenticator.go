package serviceaccount

import (
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	uniontoken "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/client-go/util/keyutil"
	kubeserviceaccount "k8s.io/kubernetes/pkg/serviceaccount"
)

// Options are what the service account authenticator is built from: the
// generic control plane's service account settings.
type Options struct {
	// Issuers are the accepted token issuers (--service-account-issuer).
	Issuers []string
	// KeyFiles hold the public keys that verify tokens, unless Keys is set.
	KeyFiles []string
	// Keys verify tokens (an external signer's keys).
	Keys kubeserviceaccount.PublicKeysGetter
	// APIAudiences are the accepted audiences; the issuers when empty.
	APIAudiences []string
	// Getter reads service accounts, secrets and pods of a token's cluster.
	Getter *TokenGetter
}

// NewAuthenticator returns the authenticator of service account tokens,
// bound and secret-based: each token is checked against the service account
// of the logical cluster it carries, so it works only there. A key that
// cannot be read is an error, never a silently empty authenticator.
func NewAuthenticator(o Options) (authenticator.Request, error) {
	keys := o.Keys
	if keys == nil {
		var all []interface{}
		for _, f := range o.KeyFiles {
			k, err := keyutil.PublicKeysFromFile(f)
			if err != nil {
				return nil, fmt.Errorf("service account tokens: read public keys from %s: %w", f, err)
			}
			all = append(all, k...)
		}
		var err error
		if keys, err = kubeserviceaccount.StaticPublicKeysGetter(all); err != nil {
			return nil, fmt.Errorf("service account tokens: %w", err)
		}
	}
	audiences := authenticator.Audiences(o.APIAudiences)
	if len(audiences) == 0 {
		audiences = authenticator.Audiences(o.Issuers)
	}
	tokens := NewClusterAuthenticator(o.Issuers, keys, audiences, o.Getter)
	legacy, err := NewLegacyClusterAuthenticator(keys, audiences, o.Getter)
	if err != nil {
		return nil, fmt.Errorf("secret-based service account tokens: %w", err)
	}
	both := uniontoken.New(tokens, legacy)
	return group.NewAuthenticatedGroupAdder(bearertoken.New(tokencache.New(both, false, 10*time.Second, 0))), nil
}
