package shard

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/kplane-dev/kplane/pkg/logicalcluster"
)

const clustersPrefix = "/clusters/"

// WithCluster takes /clusters/<name> off the request path and puts the
// logical cluster into the request context. Requests without the prefix are
// served from system:admin. It runs before the apiserver's own filters, so
// request info, authorization and storage all see the stripped path.
func WithCluster(handler http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !strings.HasPrefix(req.URL.Path, clustersPrefix) {
			handler.ServeHTTP(w, req.WithContext(logicalcluster.WithCluster(req.Context(), logicalcluster.SystemAdmin)))
			return
		}
		cluster, rest, err := splitClusterPath(req.URL.Path, req.URL.RawPath)
		if err != nil {
			responsewriters.ErrorNegotiated(err, s, schema.GroupVersion{}, w, req)
			return
		}

		req = req.Clone(logicalcluster.WithCluster(req.Context(), cluster))
		prefix := clustersPrefix + string(cluster)
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

// splitClusterPath validates the cluster segment of a /clusters/ path and
// returns the cluster and the remaining path.
func splitClusterPath(path, rawPath string) (logicalcluster.Name, string, error) {
	after := strings.TrimPrefix(path, clustersPrefix)
	name, rest := after, "/"
	if i := strings.IndexByte(after, '/'); i >= 0 {
		name, rest = after[:i], after[i:]
	}
	if rawPath != "" {
		rawAfter := strings.TrimPrefix(rawPath, clustersPrefix)
		if i := strings.IndexByte(rawAfter, '/'); i >= 0 {
			rawAfter = rawAfter[:i]
		}
		if strings.Contains(rawAfter, "%") {
			return "", "", apierrors.NewBadRequest(fmt.Sprintf("logical cluster name %q must not contain encoded characters", rawAfter))
		}
	}
	if name == "" {
		return "", "", apierrors.NewBadRequest("logical cluster name must not be empty in /clusters/<name>/")
	}
	for _, seg := range strings.Split(rest, "/") {
		if seg == ".." || seg == "." {
			return "", "", apierrors.NewBadRequest(fmt.Sprintf("path %q must not contain %q segments", path, seg))
		}
	}
	if rest == "/clusters" || strings.HasPrefix(rest, clustersPrefix) {
		return "", "", apierrors.NewBadRequest(fmt.Sprintf("path %q names more than one logical cluster", path))
	}
	if name == string(logicalcluster.Wildcard) {
		return logicalcluster.Wildcard, rest, nil
	}
	p, err := logicalcluster.ParsePath(name)
	if err != nil {
		return "", "", apierrors.NewBadRequest(err.Error())
	}
	cluster, ok := p.Name()
	if !ok {
		return "", "", apierrors.NewNotFound(schema.GroupResource{Group: "tenancy.kcp.io", Resource: "workspaces"}, name)
	}
	if err := logicalcluster.ValidateName(string(cluster)); err != nil {
		return "", "", apierrors.NewBadRequest(err.Error())
	}
	return cluster, rest, nil
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

// withWildcardVerbs answers 405 to anything but list and watch across all
// logical clusters. It runs after request info is known.
func withWildcardVerbs(handler http.Handler, s runtime.NegotiatedSerializer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		cluster, _ := logicalcluster.ClusterFromContext(req.Context())
		if cluster.IsWildcard() {
			if info, ok := genericapirequest.RequestInfoFrom(req.Context()); ok && info.IsResourceRequest && info.Verb != "list" && info.Verb != "watch" {
				err := apierrors.NewMethodNotSupported(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, info.Verb)
				err.ErrStatus.Message = fmt.Sprintf("%s across all logical clusters (/clusters/*) is not supported: only list and watch are", info.Verb)
				responsewriters.ErrorNegotiated(err, s, schema.GroupVersion{}, w, req)
				return
			}
		}
		handler.ServeHTTP(w, req)
	})
}
