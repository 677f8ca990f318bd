package frontproxy

import (
	"context"
	"fmt"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/shardplane/shardplane/pkg/authentication/clusterreview"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
)

const (
	// workspaceReviewTTL is how long a shard's answer for a workspace
	// issuer's token is reused: a change of the workspace's type or of its
	// configurations reaches the front-proxy within that time.
	workspaceReviewTTL = 10 * time.Second
	// workspaceReviewFailureTTL keeps a refused token from being reviewed
	// on every request, briefly: an issuer still starting up is retried
	// soon.
	workspaceReviewFailureTTL = 2 * time.Second
)

// workspaceReviews authenticates a token the front-proxy does not know
// with the JWT issuers of the workspace a request goes to: the workspace's
// shard knows its type and runs their authenticators, and answers a
// TokenReview posted in the workspace with the identity, scoped to it. The
// front-proxy passes that identity on like any other.
type workspaceReviews struct {
	clients *reviewClients
	cached  authenticator.Token
}

func newWorkspaceReviews(clients *reviewClients) *workspaceReviews {
	w := &workspaceReviews{clients: clients}
	w.cached = tokencache.New(authenticator.TokenFunc(w.review), false, workspaceReviewTTL, workspaceReviewFailureTTL)
	return w
}

// authenticate returns who token is in a workspace; nil when the
// workspace's issuers do not authenticate it. Only JWTs are reviewed.
func (w *workspaceReviews) authenticate(ctx context.Context, target Target, token string) (user.Info, error) {
	if strings.Count(token, ".") != 2 {
		return nil, nil
	}
	// The cache is keyed by the token it is given: the workspace is part
	// of it, since the same token is someone else, or no one, elsewhere.
	resp, ok, err := w.cached.AuthenticateToken(ctx, target.BaseURL.String()+"|"+target.Cluster.String()+"|"+token)
	if err != nil || !ok {
		return nil, err
	}
	return resp.User, nil
}

func (w *workspaceReviews) review(ctx context.Context, key string) (*authenticator.Response, bool, error) {
	parts := strings.SplitN(key, "|", 3)
	if len(parts) != 3 {
		return nil, false, nil
	}
	baseURL, cluster, token := parts[0], logicalcluster.Name(parts[1]), parts[2]
	client, err := w.clients.get(baseURL)
	if err != nil {
		return nil, false, err
	}
	status, err := clusterreview.Review(ctx, client.AuthenticationV1().RESTClient(), cluster, token)
	if err != nil {
		return nil, false, fmt.Errorf("token review in %s: %w", cluster, err)
	}
	if !status.Authenticated || !workspaceIssued(status.User, cluster) {
		return nil, false, nil
	}
	return &authenticator.Response{User: clusterreview.User(status.User)}, true, nil
}

// workspaceIssued tells whether a reviewed user is one a workspace issuer
// made: scoped to exactly that workspace, no system: name or group but
// system:authenticated. Anything else the shard accepts (its admin or
// static tokens) the front-proxy does not let in this way.
func workspaceIssued(u authenticationv1.UserInfo, cluster logicalcluster.Name) bool {
	if strings.HasPrefix(u.Username, "system:") {
		return false
	}
	for _, g := range u.Groups {
		if strings.HasPrefix(g, "system:") && g != user.AllAuthenticated {
			return false
		}
	}
	scopes := u.Extra[scope.ScopeExtraKey]
	return len(scopes) == 1 && scopes[0] == scope.ClusterScope(cluster)
}
