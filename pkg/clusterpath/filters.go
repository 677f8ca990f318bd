// Package clusterpath finds the logical cluster of a request: with the
// /clusters/<name|path|*>/... layout that package logicalcluster owns, it
// provides the HTTP filters that put the cluster into the request context,
// guard wildcard and unresolved requests, and resolve identity-qualified
// wildcard requests for the kinds the shard serves itself.
package clusterpath

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// PathResolver maps a multi-segment workspace path to the logical cluster
// hosted on this shard, and false when this shard hosts none.
type PathResolver func(logicalcluster.Path) (logicalcluster.Name, bool)

type unresolvedPathKey struct{}

// WithCluster takes /clusters/<name or path> off the request path and puts
// the logical cluster into the request context. Requests without the prefix
// are served from system:admin. It runs before the apiserver's own filters, so
// request info, authorization and storage all see the stripped path.
//
// A path this shard cannot resolve is kept as the cluster name and marked:
// authorization refuses it to everyone without access (403, no existence
// leak) and WithUnresolvedPaths answers 404 to the privileged.
func WithCluster(handler http.Handler, s runtime.NegotiatedSerializer, resolve PathResolver) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !strings.HasPrefix(req.URL.Path, logicalcluster.ClustersPrefix) {
			cluster := logicalcluster.SystemAdmin
			if isMetricsPath(req.URL.Path) {
				// Scrapers are authorized by root's RBAC (system:kcp:metrics-reader).
				cluster = logicalcluster.Root
			}
			handler.ServeHTTP(w, req.WithContext(logicalcluster.WithCluster(req.Context(), cluster)))
			return
		}
		segment, rest, err := logicalcluster.ParseRequestPath(req.URL.Path, req.URL.RawPath)
		if err != nil {
			responsewriters.ErrorNegotiated(err, s, schema.GroupVersion{}, w, req)
			return
		}
		if IsShardLevelPath(rest) {
			responsewriters.ErrorNegotiated(shardLevelPathError(rest), s, schema.GroupVersion{}, w, req)
			return
		}
		ctx := req.Context()
		cluster, isName := segment.Name()
		if !isName {
			var found bool
			if cluster, found = resolve(segment); !found {
				cluster = logicalcluster.Name(segment)
				ctx = context.WithValue(ctx, unresolvedPathKey{}, segment)
			}
		}

		// A shallow copy with its own URL, as http.StripPrefix makes: a
		// deep Clone would copy every header of every request.
		req = req.WithContext(logicalcluster.WithCluster(ctx, cluster))
		u := *req.URL
		req.URL = &u
		prefix := segment.RequestPath()
		req.URL.Path = rest
		if req.URL.RawPath != "" {
			req.URL.RawPath = strings.TrimPrefix(req.URL.RawPath, prefix)
		}
		req.RequestURI = strings.TrimPrefix(req.RequestURI, prefix)
		if req.RequestURI == "" || req.RequestURI[0] == '?' {
			req.RequestURI = "/" + req.RequestURI
		}

		if rest == "/openapi/v3" {
			serveOpenAPIV3Root(handler, w, req, prefix)
			return
		}
		handler.ServeHTTP(w, req)
	})
}

// isMetricsPath tells whether p is the shard's /metrics or below it.
func isMetricsPath(p string) bool {
	return p == "/metrics" || strings.HasPrefix(p, "/metrics/")
}

// IsShardLevelPath tells whether p serves shard-wide data (metrics,
// profiles, log verbosity) that no workspace may reach under its prefix.
func IsShardLevelPath(p string) bool {
	return isMetricsPath(p) || p == "/debug" || strings.HasPrefix(p, "/debug/")
}

// shardLevelPathError is kcp's 501 for shard-level paths under a workspace.
func shardLevelPathError(p string) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotImplemented, Reason: "NotImplemented",
		Message: fmt.Sprintf("%s is a shard-level endpoint, not available at workspace scope: request it without /clusters/<workspace>", p),
	}}
}

// UnresolvedPath returns the workspace path of a request that this shard
// could not resolve.
func UnresolvedPath(ctx context.Context) (logicalcluster.Path, bool) {
	p, ok := ctx.Value(unresolvedPathKey{}).(logicalcluster.Path)
	return p, ok
}

// serveOpenAPIV3Root serves the OpenAPI v3 discovery document with links
// that keep the /clusters/<name> prefix, so that clients following them stay
// in the logical cluster.
func serveOpenAPIV3Root(handler http.Handler, w http.ResponseWriter, req *http.Request, prefix string) {
	// The document is small; an uncompressed copy is easy to rewrite.
	req.Header.Del("Accept-Encoding")
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	body := rec.Body.Bytes()
	if rec.Code == http.StatusOK {
		body = bytes.ReplaceAll(body, []byte(`"serverRelativeURL":"/openapi/v3/`), []byte(`"serverRelativeURL":"`+prefix+`/openapi/v3/`))
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body)
}

// WithUnresolvedPaths answers 404 to requests for workspace paths this shard
// does not host that got past authorization.
func WithUnresolvedPaths(handler http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if p, ok := UnresolvedPath(req.Context()); ok {
			err := apierrors.NewNotFound(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, string(p))
			err.ErrStatus.Message = fmt.Sprintf("workspace %q not found on this shard", p)
			responsewriters.ErrorNegotiated(err, s, schema.GroupVersion{}, w, req)
			return
		}
		handler.ServeHTTP(w, req)
	})
}

// WithWildcardVerbs answers 405 to anything but list and watch across all
// logical clusters. It runs after request info is known.
func WithWildcardVerbs(handler http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		cluster, _ := logicalcluster.ClusterFromContext(req.Context())
		if cluster.IsWildcard() {
			if info, ok := genericapirequest.RequestInfoFrom(req.Context()); ok && info.IsResourceRequest && !logicalcluster.WildcardAllows(info.Verb) {
				err := apierrors.NewMethodNotSupported(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, info.Verb)
				err.ErrStatus.Message = fmt.Sprintf("%s across all logical clusters (/clusters/*) is not supported: only list and watch are", info.Verb)
				responsewriters.ErrorNegotiated(err, s, schema.GroupVersion{}, w, req)
				return
			}
		}
		handler.ServeHTTP(w, req)
	})
}
