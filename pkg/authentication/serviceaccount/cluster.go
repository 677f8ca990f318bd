package serviceaccount

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"gopkg.in/go-jose/go-jose.v2/jwt"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	kubeserviceaccount "k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
)

const (
	// ClusterClaim is the private JWT claim that names the logical cluster
	// a service account token was issued in.
	ClusterClaim = "kcp.io/cluster"
)

// ClusterTokenGenerator issues tokens that carry the logical cluster of the
// request (the cluster of the service account) in ClusterClaim.
type ClusterTokenGenerator struct {
	Delegate kubeserviceaccount.TokenGenerator
}

// GenerateToken adds ClusterClaim to the private claims.
func (g ClusterTokenGenerator) GenerateToken(ctx context.Context, claims *jwt.Claims, privateClaims interface{}) (string, error) {
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok || cluster.IsWildcard() {
		return "", fmt.Errorf("service account tokens are issued only inside a logical cluster")
	}
	merged := map[string]interface{}{}
	if privateClaims != nil {
		raw, err := json.Marshal(privateClaims)
		if err != nil {
			return "", err
		}
		if err := json.Unmarshal(raw, &merged); err != nil {
			return "", fmt.Errorf("private claims are not a JSON object: %w", err)
		}
	}
	merged[ClusterClaim] = string(cluster)
	return g.Delegate.GenerateToken(ctx, claims, merged)
}

// ClusterAuthenticator authenticates service account tokens that carry
// ClusterClaim: it validates them against the service account in that
// cluster (whatever cluster the request addresses) and records the cluster
// in the user's scope.ServiceAccountClusterExtraKey. Tokens without the claim are left to the
// next authenticator.
type ClusterAuthenticator struct {
	// Delegate validates the token against the cluster in the context.
	Delegate authenticator.Token
}

// NewClusterAuthenticator returns an authenticator for tokens of the given
// issuers, signed with keys, whose service accounts getter reads from the
// cluster of the context (TokenGetter does).
func NewClusterAuthenticator(issuers []string, keys kubeserviceaccount.PublicKeysGetter, implicitAudiences authenticator.Audiences, getter kubeserviceaccount.ServiceAccountTokenGetter) *ClusterAuthenticator {
	return &ClusterAuthenticator{Delegate: kubeserviceaccount.JWTTokenAuthenticator(issuers, keys, implicitAudiences, kubeserviceaccount.NewValidator(getter))}
}

// AuthenticateToken implements authenticator.Token.
func (a *ClusterAuthenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	cluster, ok := TokenCluster(token)
	if !ok {
		return nil, false, nil
	}
	if err := logicalcluster.ValidateName(string(cluster)); err != nil || cluster.IsWildcard() {
		return nil, false, fmt.Errorf("service account token names an invalid logical cluster")
	}
	resp, ok, err := a.Delegate.AuthenticateToken(logicalcluster.WithCluster(ctx, cluster), token)
	if err != nil || !ok {
		return nil, false, err
	}
	u := resp.User
	extra := map[string][]string{}
	for k, v := range u.GetExtra() {
		extra[k] = v
	}
	extra[scope.ServiceAccountClusterExtraKey] = []string{string(cluster)}
	resp.User = &user.DefaultInfo{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: extra}
	return resp, true, nil
}

// TokenCluster reads ClusterClaim from a JWT without verifying it, only
// to find the cluster whose shard verifies the token.
func TokenCluster(token string) (logicalcluster.Name, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", false
	}
	var claims struct {
		Cluster string `json:"kcp.io/cluster"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Cluster == "" {
		return "", false
	}
	return logicalcluster.Name(claims.Cluster), true
}
