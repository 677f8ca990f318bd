package serviceaccount

import (
	"net/http"
	"strings"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
)

// shardedRequestHeader marks kcp's own sharded requests, which are never an
// in-cluster client's.
const shardedRequestHeader = "X-Kubernetes-Sharded-Request"

// WithInClusterRewrite serves a request that names no workspace (no
// /clusters/ prefix, no view) and carries a service account token in the
// token's own workspace, as kcp does: in-cluster clients
// (rest.InClusterConfig) cannot put a prefix on their paths. The claim is
// read unverified; authentication checks the token in that workspace.
func WithInClusterRewrite(handler http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p := req.URL.Path
		if strings.HasPrefix(p, logicalcluster.ClustersPrefix) || viewurl.Serves(p) || req.Header.Get(shardedRequestHeader) != "" {
			handler.ServeHTTP(w, req)
			return
		}
		token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		if !ok {
			handler.ServeHTTP(w, req)
			return
		}
		cluster, ok := TokenCluster(strings.TrimSpace(token))
		if !ok || logicalcluster.ValidateName(string(cluster)) != nil || cluster.IsWildcard() {
			handler.ServeHTTP(w, req)
			return
		}
		prefix := cluster.RequestPath()
		u := *req.URL
		u.Path = prefix + p
		if u.RawPath != "" {
			u.RawPath = prefix + u.RawPath
		}
		r := req.Clone(req.Context())
		r.URL = &u
		r.RequestURI = prefix + req.RequestURI
		handler.ServeHTTP(w, r)
	})
}
