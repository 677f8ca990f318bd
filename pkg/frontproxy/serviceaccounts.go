package frontproxy

import (
	"fmt"
	"time"

	"gopkg.in/go-jose/go-jose.v2/jwt"

	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	keyutil "k8s.io/client-go/util/keyutil"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
)

// serviceAccountTokens recognizes the service account tokens the shards
// issue. The proxy checks their signature and expiry, then passes the token
// on: only the shard can look the service account up and scope it to its
// logical cluster. Any other bearer token is authenticated by the proxy
// and never reaches a shard, so a shard's static tokens (its admin's) are
// worthless through the proxy.
type serviceAccountTokens struct {
	keys []interface{}
}

func newServiceAccountTokens(keyFiles []string) (*serviceAccountTokens, error) {
	if len(keyFiles) == 0 {
		return nil, nil
	}
	s := &serviceAccountTokens{}
	for _, f := range keyFiles {
		keys, err := keyutil.PublicKeysFromFile(f)
		if err != nil {
			return nil, fmt.Errorf("service account keys %s: %w", f, err)
		}
		s.keys = append(s.keys, keys...)
	}
	return s, nil
}

// saClaims are the claims the proxy reads: the service account, in the
// bound-token form and in the legacy secret-based form.
type saClaims struct {
	Cluster    string `json:"kcp.io/cluster"`
	Kubernetes *struct {
		Namespace      string `json:"namespace"`
		ServiceAccount struct {
			Name string `json:"name"`
		} `json:"serviceaccount"`
	} `json:"kubernetes.io,omitempty"`
	LegacyNamespace string `json:"kubernetes.io/serviceaccount/namespace"`
	LegacyName      string `json:"kubernetes.io/serviceaccount/service-account.name"`
}

// authenticate returns the service account of a shard token; false for
// tokens that are not shard service account tokens at all.
func (s *serviceAccountTokens) authenticate(token string) (user.Info, bool, error) {
	tok, err := jwt.ParseSigned(token)
	if err != nil {
		return nil, false, nil
	}
	var public jwt.Claims
	var private saClaims
	verified := false
	for _, k := range s.keys {
		if err := tok.Claims(k, &public, &private); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		// Another issuer's JWT (OIDC): not ours to judge.
		return nil, false, nil
	}
	if private.Cluster == "" {
		return nil, false, fmt.Errorf("service account token names no logical cluster")
	}
	if err := logicalcluster.ValidateName(private.Cluster); err != nil {
		return nil, false, fmt.Errorf("service account token names an invalid logical cluster")
	}
	if err := public.ValidateWithLeeway(jwt.Expected{Time: time.Now()}, time.Minute); err != nil {
		return nil, false, fmt.Errorf("service account token: %w", err)
	}
	ns, name := private.LegacyNamespace, private.LegacyName
	if private.Kubernetes != nil {
		ns, name = private.Kubernetes.Namespace, private.Kubernetes.ServiceAccount.Name
	}
	if ns == "" || name == "" {
		return nil, false, fmt.Errorf("service account token names no service account")
	}
	return &user.DefaultInfo{
		Name:   serviceaccount.MakeUsername(ns, name),
		Groups: serviceaccount.MakeGroupNames(ns),
		Extra:  map[string][]string{scope.ServiceAccountClusterExtraKey: {private.Cluster}},
	}, true, nil
}
