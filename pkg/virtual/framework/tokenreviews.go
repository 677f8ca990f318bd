package framework

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/authentication/clusterreview"
	"github.com/shardplane/shardplane/pkg/authentication/serviceaccount"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Reviews of tokens are kept this long: a controller's requests through a
// view cost one review now and then, and a revoked token stops working soon.
const (
	tokenAllowedTTL = 10 * time.Second
	tokenDeniedTTL  = time.Second
)

// serviceAccountTokenReviews authenticates the service account tokens the
// shards issue by TokenReviews in the token's own logical cluster (its
// kcp.io/cluster claim, read unverified only to route the review), on a
// server that reaches that cluster: the front-proxy, or the shard. The
// shard that hosts the service account verifies the token, as kcp's
// virtual-workspaces process delegates authentication. Other tokens are
// left to the next authenticator.
type serviceAccountTokenReviews struct {
	client rest.Interface
}

// newServiceAccountTokenReviews returns the authenticator, with reviews
// cached by token.
func newServiceAccountTokenReviews(config *rest.Config) (authenticator.Token, error) {
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return cache.New(&serviceAccountTokenReviews{client: cs.AuthenticationV1().RESTClient()}, false, tokenAllowedTTL, tokenDeniedTTL), nil
}

// AuthenticateToken implements authenticator.Token.
func (r *serviceAccountTokenReviews) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	cluster, ok := serviceaccount.TokenCluster(token)
	if !ok {
		return nil, false, nil
	}
	if err := logicalcluster.ValidateName(string(cluster)); err != nil || cluster.IsWildcard() {
		return nil, false, errors.New("service account token names an invalid logical cluster")
	}
	status, err := clusterreview.Review(ctx, r.client, cluster, token)
	if err != nil {
		return nil, false, fmt.Errorf("token review in %s: %w", cluster, err)
	}
	if !status.Authenticated {
		if status.Error != "" {
			return nil, false, errors.New(status.Error)
		}
		return nil, false, nil
	}
	return &authenticator.Response{Audiences: status.Audiences, User: clusterreview.User(status.User)}, true, nil
}
