package clusterpath

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// clusterPathSeeds are request targets as clients send them, with the
// spellings that have tricked path parsers before.
var clusterPathSeeds = []string{
	"/clusters/root/api/v1/namespaces",
	"/clusters/root:org:team/apis/apps/v1/namespaces/default/deployments?watch=true",
	"/clusters/*/api/v1/configmaps",
	"/clusters/system:admin/apis",
	"/clusters/root",
	"/clusters/root/",
	"/clusters/",
	"/clusters",
	"/clusters//api",
	"/clusters/../api",
	"/clusters/root/../system:admin/api",
	"/clusters/root/./api",
	"/clusters/root/api/..",
	"/clusters/a%2Fb/api",
	"/clusters/root%3Aorg/api",
	"/cluster%73/root/api",
	"/clusters/root/api%2F..%2Fmetrics",
	"/clusters/root//api",
	"/clusters/root/clusters/other/api",
	"/clusters/root/metrics",
	"/clusters/root/debug/pprof/",
	"/clusters/root/openapi/v3",
	"/clusters/root?x=1",
	"/clusters/root:nope/api",
	"/clusters/Root/api",
	"/clusters/root:/api",
	"/clusters/ü/api",
	"/clusters/" + strings.Repeat("a", 64) + "/api",
	"/clusters/" + strings.Repeat("root:", 100) + "root/api",
	"http://shard/clusters/root/api",
	"/metrics",
	"/api/v1/namespaces",
	"*",
	"",
}

// statusCodecs encode the errors the filters answer with.
func statusCodecs() runtime.NegotiatedSerializer {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(s)
}

// requestFor parses target as the HTTP server parses a request line, and
// false when the server would refuse it before any handler runs.
func requestFor(target string) (*http.Request, bool) {
	if strings.ContainsAny(target, " \r\n") {
		return nil, false
	}
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + target + " HTTP/1.1\r\nHost: shard\r\n\r\n")))
	return req, err == nil
}

// FuzzWithCluster checks logicalcluster.ParseRequestPath and the WithCluster filter on request
// targets: they never panic, refuse with an API error, and what they let
// through addresses a valid cluster with a consistent, stripped request.
func FuzzWithCluster(f *testing.F) {
	for _, s := range clusterPathSeeds {
		f.Add(s)
	}
	codecs := statusCodecs()
	resolve := func(p logicalcluster.Path) (logicalcluster.Name, bool) {
		if p == "root:org" {
			return "abc123", true
		}
		return "", false
	}
	f.Fuzz(func(t *testing.T, target string) {
		req, ok := requestFor(target)
		if !ok {
			return
		}
		path, rawPath := req.URL.Path, req.URL.RawPath
		prefixed := strings.HasPrefix(path, logicalcluster.ClustersPrefix)
		var segment logicalcluster.Path
		var rest string
		splitOK := false
		if prefixed {
			var err error
			segment, rest, err = logicalcluster.ParseRequestPath(path, rawPath)
			if err == nil {
				splitOK = true
				checkSplit(t, path, segment, rest)
			} else if status, ok := err.(apierrors.APIStatus); !ok || (status.Status().Code != http.StatusBadRequest && status.Status().Code != http.StatusNotFound) {
				t.Fatalf("ParseRequestPath(%q, %q) error %v is not a 400 or 404 API error", path, rawPath, err)
			}
		}

		var inner *http.Request
		h := WithCluster(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { inner = r }), codecs, resolve)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)

		if req.URL.Path != path || req.URL.RawPath != rawPath {
			t.Fatalf("the caller's URL changed from %q (%q) to %q (%q)", path, rawPath, req.URL.Path, req.URL.RawPath)
		}
		if inner == nil {
			if rec.Code < 400 {
				t.Fatalf("%q was neither served nor refused: code %d", target, rec.Code)
			}
			if prefixed && splitOK && !IsShardLevelPath(rest) {
				t.Fatalf("%q split into %q %q but was refused: %d %s", target, segment, rest, rec.Code, rec.Body.String())
			}
			return
		}
		cluster, ok := logicalcluster.ClusterFromContext(inner.Context())
		if !ok {
			t.Fatalf("%q reached the handler without a cluster", target)
		}
		if !prefixed {
			if inner.URL.Path != path || (cluster != logicalcluster.SystemAdmin && cluster != logicalcluster.Root) {
				t.Fatalf("%q without a cluster prefix reached the handler as %q in %q", target, inner.URL.Path, cluster)
			}
			return
		}
		if !splitOK || IsShardLevelPath(rest) {
			t.Fatalf("%q reached the handler although ParseRequestPath refuses it or it is shard-level", target)
		}
		if inner.URL.Path != rest {
			t.Fatalf("%q reached the handler as %q, want %q", target, inner.URL.Path, rest)
		}
		if _, unresolved := UnresolvedPath(inner.Context()); unresolved != (cluster == logicalcluster.Name(segment) && !segment.IsSystem() && strings.Contains(string(segment), ":")) {
			t.Fatalf("%q: cluster %q of segment %q, unresolved %v", target, cluster, segment, unresolved)
		}
		if inner.URL.RawPath != "" {
			if p, err := url.PathUnescape(inner.URL.RawPath); err != nil || p != inner.URL.Path {
				t.Fatalf("%q reached the handler with raw path %q that does not spell path %q", target, inner.URL.RawPath, inner.URL.Path)
			}
		}
		if strings.HasPrefix(req.RequestURI, "/") {
			u, err := url.ParseRequestURI(inner.RequestURI)
			if err != nil || u.Path != inner.URL.Path {
				t.Fatalf("%q reached the handler with request URI %q that does not name path %q", target, inner.RequestURI, inner.URL.Path)
			}
		}
	})
}

// checkSplit checks what ParseRequestPath returned for path without an error.
func checkSplit(t *testing.T, path string, segment logicalcluster.Path, rest string) {
	t.Helper()
	if segment != logicalcluster.Wildcard.Path() {
		if _, err := logicalcluster.ParsePath(string(segment)); err != nil {
			t.Fatalf("ParseRequestPath(%q) returned invalid segment %q: %v", path, segment, err)
		}
	}
	if !strings.HasPrefix(rest, "/") {
		t.Fatalf("ParseRequestPath(%q) returned rest %q without a leading slash", path, rest)
	}
	if built := segment.RequestPath() + rest; built != path && !(rest == "/" && built == path+"/") {
		t.Fatalf("ParseRequestPath(%q) = %q %q, which builds %q", path, segment, rest, built)
	}
	for _, seg := range strings.Split(rest, "/") {
		if seg == "." || seg == ".." {
			t.Fatalf("ParseRequestPath(%q) let through rest %q with a %q segment", path, rest, seg)
		}
	}
	if rest == "/clusters" || strings.HasPrefix(rest, logicalcluster.ClustersPrefix) {
		t.Fatalf("ParseRequestPath(%q) let through a nested cluster path %q", path, rest)
	}
	again, againRest, err := logicalcluster.ParseRequestPath(segment.RequestPath()+rest, "")
	if err != nil || again != segment || againRest != rest {
		t.Fatalf("ParseRequestPath of the rebuilt path %q = %q %q %v, want %q %q", segment.RequestPath()+rest, again, againRest, err, segment, rest)
	}
}
