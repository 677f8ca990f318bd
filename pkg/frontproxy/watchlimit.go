package frontproxy

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/shardplane/shardplane/pkg/fairness"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DefaultMaxWatchesPerUser is the default of --max-watches-per-user.
const DefaultMaxWatchesPerUser = 1000

// watchLimiter bounds the watches one user holds open through this
// front-proxy: watches are long-running, so the shards' in-flight limits
// do not count them, and thousands from one client exhaust the shards
// (TLS handshakes to the backend time out, other users get 503).
type watchLimiter struct {
	max  int
	open fairness.Slots[string]
}

// newWatchLimiter returns a limiter of max watches per user; nil (no
// limit) when max is not positive.
func newWatchLimiter(max int) *watchLimiter {
	if max <= 0 {
		return nil
	}
	return &watchLimiter{max: max}
}

// acquire counts one more watch of user and returns the function that
// releases it, or a 429 error when user holds the most allowed.
func (l *watchLimiter) acquire(user string) (func(), error) {
	release, ok := l.open.TryAcquire(user, int64(l.max))
	if !ok {
		return nil, apierrors.NewTooManyRequests(fmt.Sprintf("%d watches are open for this user through this front-proxy, the most allowed: close some, or retry later", l.max), 1)
	}
	return release, nil
}

// isWatch tells whether a request for path (below /clusters/<x> for
// workspace requests, or a mapped path) is a watch.
func isWatch(method, path, rawQuery string) bool {
	if method != http.MethodGet {
		return false
	}
	// Mapped paths (/services/<x>/clusters/<c>/...) address a cluster too.
	if before, cluster, rest, found := logicalcluster.CutRequestPath(path); found && before != "" && cluster != "" {
		path = rest
	}
	info, err := requestInfos.NewRequestInfo(&http.Request{Method: method, URL: &url.URL{Path: path, RawQuery: rawQuery}})
	return err == nil && info.Verb == "watch"
}
