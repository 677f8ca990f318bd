package home

import (
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// TildePath returns the request path p with a leading /clusters/~ (or
// /clusters/~:<workspace>...) naming user's home by its logical cluster,
// and whether p started so. "~" is kubectl ws's name of the home; as a
// server path it is ours, not kcp's.
func TildePath(p string, u user.Info) (string, bool) {
	cluster, rest, ok := logicalcluster.SplitRequestPath(p)
	if !ok || (cluster != WorkspaceName && !strings.HasPrefix(cluster, WorkspaceName+":")) || u == nil || u.GetName() == "" || u.GetName() == user.Anonymous {
		return p, false
	}
	home := ClusterName(u.GetName()).Path()
	if sub := strings.TrimPrefix(cluster, WorkspaceName); sub != "" {
		home = logicalcluster.Path(string(home) + sub)
	}
	return home.RequestPath() + rest, true
}

// WithTildePath serves /clusters/~/... in the caller's home: it
// authenticates such a request (only such) ahead of the chain, which
// authenticates it again, to learn whose home it is. Others are left
// untouched; an unauthenticated one keeps its path, which names no
// workspace.
func WithTildePath(handler http.Handler, authn authenticator.Request) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !strings.HasPrefix(req.URL.Path, logicalcluster.ClustersPrefix+WorkspaceName) {
			handler.ServeHTTP(w, req)
			return
		}
		// A copy: authenticators take credentials off the request they read.
		resp, ok, err := authn.AuthenticateRequest(req.Clone(req.Context()))
		if err != nil || !ok {
			handler.ServeHTTP(w, req)
			return
		}
		p, ok := TildePath(req.URL.Path, resp.User)
		if !ok {
			handler.ServeHTTP(w, req)
			return
		}
		handler.ServeHTTP(w, WithPath(req, p))
	})
}

// WithPath returns a copy of req with its URL path (and request URI)
// replaced by p; the query stays.
func WithPath(req *http.Request, p string) *http.Request {
	r := req.Clone(req.Context())
	u := *req.URL
	u.Path, u.RawPath = p, ""
	r.URL = &u
	r.RequestURI = u.RequestURI()
	return r
}
