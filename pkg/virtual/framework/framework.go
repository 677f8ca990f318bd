// Package framework serves virtual workspaces: views below
// /services/<name>/ that answer from a shard's data instead of storing any
// (docs/architecture.md, "Virtual workspaces"). It owns what every view shares:
// routing by the URL layout of package viewurl, authentication of the caller, the error answers, and the
// server skeleton of the standalone virtual-workspaces binary (options.go,
// config.go, server.go). A view is an http.Handler that receives the full
// /services/<name>/... path with the caller in the request context
// (k8s.io/apiserver/pkg/endpoints/request.UserFrom) and authorizes it
// itself.
package framework

import (
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
)

// Views maps the name of a view (the segment after /services/) to its
// handler; a nil handler is a view that is not served.
type Views map[string]http.Handler

// ServeHTTP routes a request to its view, dropping a /shards/<shard>
// prefix first; unknown views answer 404.
func (v Views) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	path, ok := viewurl.TrimShardPrefix(req.URL.Path)
	if !ok {
		NotFound(w, req, req.URL.Path)
		return
	}
	if path != req.URL.Path {
		prefix := strings.TrimSuffix(req.URL.Path, path)
		req = req.Clone(req.Context())
		req.URL.Path = path
		req.URL.RawPath = strings.TrimPrefix(req.URL.RawPath, prefix)
		req.RequestURI = strings.TrimPrefix(req.RequestURI, prefix)
	}
	h := v[viewurl.ViewName(path)]
	if h == nil {
		NotFound(w, req, path)
		return
	}
	h.ServeHTTP(w, req)
}

// WithAuthentication authenticates every request with authn and puts the
// user into its context; a request whose credentials are rejected answers
// 401. Requests without credentials go on as whatever authn makes of them
// (system:anonymous when it accepts anonymous requests, or 401).
func WithAuthentication(handler http.Handler, authn authenticator.Request) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		resp, ok, err := authn.AuthenticateRequest(req)
		if err != nil || !ok {
			if err != nil {
				klog.FromContext(req.Context()).V(4).Info("Authentication failed", "err", err)
			}
			Error(w, req, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		// Credentials go no further than here.
		req.Header.Del("Authorization")
		handler.ServeHTTP(w, req.WithContext(apirequest.WithUser(req.Context(), resp.User)))
	})
}

// Error answers err as a Status in the encoding the client asked for.
func Error(w http.ResponseWriter, req *http.Request, err error) {
	responsewriters.ErrorNegotiated(err, scheme.Codecs, schema.GroupVersion{}, w, req)
}

// NotFound answers 404 for a path no view serves.
func NotFound(w http.ResponseWriter, req *http.Request, path string) {
	Error(w, req, apierrors.NewNotFound(schema.GroupResource{}, path))
}
