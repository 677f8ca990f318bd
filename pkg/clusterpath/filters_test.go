package clusterpath

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestWithClusterStripsPrefixAndSetsContext(t *testing.T) {
	resolve := func(p logicalcluster.Path) (logicalcluster.Name, bool) {
		if p == "root:org" {
			return "abc123", true
		}
		return "", false
	}
	for _, tc := range []struct {
		target      string
		wantPath    string
		wantURI     string
		wantCluster logicalcluster.Name
		unresolved  bool
		wantCode    int
	}{
		{"/api/v1/namespaces", "/api/v1/namespaces", "/api/v1/namespaces", logicalcluster.SystemAdmin, false, 200},
		{"/clusters/foo/api/v1/namespaces?limit=1", "/api/v1/namespaces", "/api/v1/namespaces?limit=1", "foo", false, 200},
		{"/clusters/root:org/api", "/api", "/api", "abc123", false, 200},
		{"/clusters/root:nope/api", "/api", "/api", "root:nope", true, 200},
		{"/clusters/foo?x=1", "/", "/?x=1", "foo", false, 200},
		{"/clusters/a%2Fb/api", "", "", "", false, 400},
	} {
		t.Run(tc.target, func(t *testing.T) {
			var gotPath, gotURI string
			var gotCluster logicalcluster.Name
			var gotUnresolved bool
			h := WithCluster(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotPath, gotURI = r.URL.Path, r.RequestURI
				gotCluster, _ = logicalcluster.ClusterFromContext(r.Context())
				_, gotUnresolved = UnresolvedPath(r.Context())
			}), legacyscheme.Codecs, resolve)
			req := httptest.NewRequest(http.MethodGet, tc.target, nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", rec.Code, tc.wantCode, rec.Body.String())
			}
			if tc.wantCode != 200 {
				return
			}
			if gotPath != tc.wantPath || gotURI != tc.wantURI || gotCluster != tc.wantCluster || gotUnresolved != tc.unresolved {
				t.Fatalf("got path %q uri %q cluster %q unresolved %v", gotPath, gotURI, gotCluster, gotUnresolved)
			}
			if original := strings.SplitN(tc.target, "?", 2)[0]; req.URL.Path != original {
				t.Fatalf("the caller's request path became %q, want %q unchanged", req.URL.Path, original)
			}
		})
	}
}

func TestOpenAPIV3RootLinksKeepClusterPrefix(t *testing.T) {
	h := WithCluster(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"paths":{"api/v1":{"serverRelativeURL":"/openapi/v3/api/v1?hash=X"}}}`))
	}), legacyscheme.Codecs, func(logicalcluster.Path) (logicalcluster.Name, bool) { return "", false })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/clusters/foo/openapi/v3", nil))
	if want := `"serverRelativeURL":"/clusters/foo/openapi/v3/api/v1?hash=X"`; !strings.Contains(rec.Body.String(), want) {
		t.Fatalf("body %s lacks %s", rec.Body.String(), want)
	}
}
