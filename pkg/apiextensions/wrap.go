package apiextensions

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

const aggregatedDiscoveryJSON = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// WrapHandler merges the CRDs of the request's logical cluster into the
// discovery and OpenAPI documents that h serves. h is the whole handler
// chain (authentication, authorization, built-in APIs), so every merged
// document is served only to requests h authorizes. The request context
// already carries the logical cluster. Clusters without CRDs go straight
// to h.
func (s *Server) WrapHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		cluster, ok := logicalcluster.ClusterFromContext(req.Context())
		if !ok || cluster.IsWildcard() || req.Method != http.MethodGet {
			h.ServeHTTP(w, req)
			return
		}
		// The OpenAPI documents also leave out the kinds the cluster hides.
		switch p := req.URL.Path; {
		case p == "/openapi/v2":
			s.openAPI.serveV2(h, w, req, cluster)
			return
		case p == "/openapi/v3" || p == "/openapi/v3/":
			s.openAPI.serveV3Root(h, w, req, cluster)
			return
		case strings.HasPrefix(p, "/openapi/v3/apis/"):
			s.openAPI.serveV3GroupVersion(h, w, req, cluster)
			return
		}
		if !s.crds.hasAnyServed(cluster) {
			h.ServeHTTP(w, req)
			return
		}
		switch p := req.URL.Path; {
		case p == "/apis" || p == "/apis/":
			s.serveGroups(h, w, req, cluster)
		case p == "/api" || p == "/api/":
			s.serveCoreGroup(h, w, req, cluster)
		case p == "/api/v1" || p == "/api/v1/":
			s.serveCoreResources(h, w, req, cluster)
		default:
			h.ServeHTTP(w, req)
		}
	})
}

// serveGroups adds the cluster's CRD groups to /apis, in the legacy
// (APIGroupList) or the aggregated (APIGroupDiscoveryList) form.
func (s *Server) serveGroups(h http.Handler, w http.ResponseWriter, req *http.Request, cluster logicalcluster.Name) {
	groups := withoutCoreGroup(discoveryFor(s.crds.served(cluster)))
	accept := req.Header.Get("Accept")
	aggregated := acceptsAggregated(accept)
	if len(groups) == 0 || (!aggregated && !acceptsJSON(accept)) {
		h.ServeHTTP(w, req)
		return
	}
	inner := req.Clone(req.Context())
	if aggregated {
		inner.Header.Set("Accept", aggregatedDiscoveryJSON)
	} else {
		inner.Header.Set("Accept", "application/json")
	}
	rec := record(h, inner)
	contentType := rec.header.Get("Content-Type")
	if rec.code != http.StatusOK || !strings.HasPrefix(contentType, "application/json") {
		rec.replay(w)
		return
	}
	if strings.Contains(contentType, "as=APIGroupDiscoveryList") {
		var list apidiscoveryv2.APIGroupDiscoveryList
		if err := json.Unmarshal(rec.body.Bytes(), &list); err != nil {
			rec.replay(w)
			return
		}
		present := map[string]bool{}
		for _, g := range list.Items {
			present[g.Name] = true
		}
		for _, g := range groups {
			if !present[g.name] {
				list.Items = append(list.Items, g.aggregated())
			}
		}
		s.replayMerged(w, req, rec, contentType, &list)
		return
	}
	var list metav1.APIGroupList
	if err := json.Unmarshal(rec.body.Bytes(), &list); err != nil {
		rec.replay(w)
		return
	}
	present := map[string]bool{}
	for _, g := range list.Groups {
		present[g.Name] = true
	}
	for _, g := range groups {
		if !present[g.name] {
			list.Groups = append(list.Groups, g.apiGroup())
		}
	}
	s.replayMerged(w, req, rec, contentType, &list)
}

// serveWithETag writes body with an ETag of its content and answers 304 to
// a matching If-None-Match.
func serveWithETag(w http.ResponseWriter, req *http.Request, contentType string, body []byte) {
	etag := strconv.Quote(fmt.Sprintf("%X", sha512.Sum512(body)))
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Etag", etag)
	if req.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

func mediaTypes(accept string) []struct {
	typ    string
	params map[string]string
} {
	var out []struct {
		typ    string
		params map[string]string
	}
	for _, clause := range strings.Split(accept, ",") {
		typ, params, err := mime.ParseMediaType(strings.TrimSpace(clause))
		if err == nil {
			out = append(out, struct {
				typ    string
				params map[string]string
			}{typ, params})
		}
	}
	return out
}

// acceptsAggregated tells whether the client accepts aggregated discovery v2.
func acceptsAggregated(accept string) bool {
	for _, m := range mediaTypes(accept) {
		if m.params["g"] == "apidiscovery.k8s.io" && m.params["v"] == "v2" && m.params["as"] == "APIGroupDiscoveryList" {
			return true
		}
	}
	return false
}

// acceptsJSON tells whether the client accepts a plain JSON APIGroupList.
func acceptsJSON(accept string) bool {
	if accept == "" {
		return true
	}
	for _, m := range mediaTypes(accept) {
		if (m.typ == "application/json" || m.typ == "*/*" || m.typ == "application/*") && m.params["as"] == "" {
			return true
		}
	}
	return false
}

// recorder keeps the status, headers and body of an inner response.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
	// discard drops the body of responses with this status.
	discard int
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	if r.code == r.discard {
		return len(b), nil
	}
	return r.body.Write(b)
}

func (r *recorder) replay(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	if r.code == 0 {
		r.code = http.StatusOK
	}
	w.WriteHeader(r.code)
	_, _ = w.Write(r.body.Bytes())
}

// record runs h for req without conditional or compressed responses and
// keeps the result.
func record(h http.Handler, req *http.Request) *recorder {
	return recordDiscarding(h, req, -1)
}

func recordDiscarding(h http.Handler, req *http.Request, discard int) *recorder {
	inner := req.Clone(req.Context())
	inner.Header.Del("If-None-Match")
	inner.Header.Del("If-Modified-Since")
	inner.Header.Del("Accept-Encoding")
	rec := &recorder{header: http.Header{}, discard: discard}
	h.ServeHTTP(rec, inner)
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	return rec
}

// authorizeVia runs the built-in chain for req to authenticate and
// authorize it, and returns its response if it refused the request. The
// body of a successful inner response is dropped: the caller serves its
// own document.
func authorizeVia(h http.Handler, req *http.Request) *recorder {
	rec := recordDiscarding(h, req, http.StatusOK)
	if rec.code == http.StatusUnauthorized || rec.code == http.StatusForbidden || rec.code == http.StatusTooManyRequests {
		return rec
	}
	return nil
}
