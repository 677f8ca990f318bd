package frontproxy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"

	"github.com/shardplane/shardplane/pkg/authentication/clusterreview"
	"github.com/shardplane/shardplane/pkg/authentication/serviceaccount"
)

// homeReviewTTL is how long an answer of a service account's home shard is
// reused: a deleted service account's token keeps working elsewhere at
// most that long (upstream's webhook token cache keeps answers longer).
const homeReviewTTL = 10 * time.Second

// homeReviews authenticates a service account token at the shard of the
// token's logical cluster, by a TokenReview there: only that shard can
// look the service account up. The front-proxy uses it for a token sent
// to a workspace on another shard, and passes the identity on in request
// headers.
type homeReviews struct {
	index   *Index
	clients *reviewClients
	cached  authenticator.Token
}

func newHomeReviews(index *Index, clients *reviewClients) *homeReviews {
	h := &homeReviews{index: index, clients: clients}
	h.cached = tokencache.New(authenticator.TokenFunc(h.review), false, homeReviewTTL, 0)
	return h
}

// authenticate returns the token's user as its home shard sees it; false
// when the shard does not authenticate it or the index does not know the
// cluster.
func (h *homeReviews) authenticate(ctx context.Context, token string) (user.Info, bool, error) {
	resp, ok, err := h.cached.AuthenticateToken(ctx, token)
	if err != nil || !ok {
		return nil, false, err
	}
	return resp.User, true, nil
}

func (h *homeReviews) review(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	cluster, ok := serviceaccount.TokenCluster(token)
	if !ok {
		return nil, false, nil
	}
	target, result := h.index.Resolve(cluster.Path())
	if result != Found || target.Cluster != cluster {
		return nil, false, nil
	}
	client, err := h.clients.get(target.BaseURL.String())
	if err != nil {
		return nil, false, err
	}
	status, err := clusterreview.Review(ctx, client.AuthenticationV1().RESTClient(), cluster, token)
	if err != nil {
		return nil, false, fmt.Errorf("token review at shard %s: %w", target.Shard, err)
	}
	if !status.Authenticated {
		return nil, false, nil
	}
	return &authenticator.Response{User: clusterreview.User(status.User)}, true, nil
}

// reviewClients are TokenReview clients of the shards, by base URL.
type reviewClients struct {
	index   *Index
	clients sync.Map
}

func (r *reviewClients) get(baseURL string) (kubernetes.Interface, error) {
	if c, ok := r.clients.Load(baseURL); ok {
		return c.(kubernetes.Interface), nil
	}
	cfg, err := r.index.shardConfig(baseURL)
	if err != nil {
		return nil, err
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	actual, _ := r.clients.LoadOrStore(baseURL, c)
	return actual.(kubernetes.Interface), nil
}
