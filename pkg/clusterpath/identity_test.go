package clusterpath

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestWithResourceIdentityServesNativeResourcesOfAnExportByItsIdentity(t *testing.T) {
	lookup := func(group, resource string) (string, bool) {
		if group == "tenancy.kcp.io" && resource == "workspaces" {
			return "abc", true
		}
		return "", false
	}
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	codecs := serializer.NewCodecFactory(scheme)
	resolver := &genericapirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	for _, tc := range []struct {
		name    string
		cluster logicalcluster.Name
		url     string
		// wantCode is the answer; 200 means the inner handler ran and saw
		// wantPath and wantResource.
		wantCode     int
		wantPath     string
		wantResource string
	}{
		{"list by identity", logicalcluster.Wildcard, "/apis/tenancy.kcp.io/v1alpha1/workspaces:abc?limit=10", 200,
			"/apis/tenancy.kcp.io/v1alpha1/workspaces", "workspaces"},
		{"watch by identity", logicalcluster.Wildcard, "/apis/tenancy.kcp.io/v1alpha1/workspaces:abc?watch=true", 200,
			"/apis/tenancy.kcp.io/v1alpha1/workspaces", "workspaces"},
		{"wrong identity", logicalcluster.Wildcard, "/apis/tenancy.kcp.io/v1alpha1/workspaces:other", 404, "", ""},
		{"empty identity", logicalcluster.Wildcard, "/apis/tenancy.kcp.io/v1alpha1/workspaces:", 404, "", ""},
		{"bound resource passes", logicalcluster.Wildcard, "/apis/example.io/v1/widgets:xyz", 200,
			"/apis/example.io/v1/widgets:xyz", "widgets:xyz"},
		{"unqualified passes", logicalcluster.Wildcard, "/apis/tenancy.kcp.io/v1alpha1/workspaces", 200,
			"/apis/tenancy.kcp.io/v1alpha1/workspaces", "workspaces"},
		{"one cluster passes", "root", "/apis/tenancy.kcp.io/v1alpha1/workspaces:abc", 200,
			"/apis/tenancy.kcp.io/v1alpha1/workspaces:abc", "workspaces:abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var gotPath, gotURI, gotResource string
			inner := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				info, _ := genericapirequest.RequestInfoFrom(req.Context())
				gotPath, gotURI, gotResource = req.URL.Path, req.RequestURI, info.Resource
				if info.Path != req.URL.Path {
					t.Errorf("request info path %q, URL path %q", info.Path, req.URL.Path)
				}
			})
			req := httptest.NewRequest(http.MethodGet, tc.url, nil)
			info, err := resolver.NewRequestInfo(req)
			if err != nil {
				t.Fatal(err)
			}
			ctx := genericapirequest.WithRequestInfo(logicalcluster.WithCluster(req.Context(), tc.cluster), info)
			rec := httptest.NewRecorder()
			WithResourceIdentity(inner, codecs, lookup).ServeHTTP(rec, req.WithContext(ctx))
			if rec.Code != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", rec.Code, tc.wantCode, rec.Body.String())
			}
			if tc.wantCode != 200 {
				if gotPath != "" {
					t.Error("the inner handler served a request with a wrong identity")
				}
				if !strings.Contains(rec.Body.String(), "identity") {
					t.Errorf("404 body does not say why: %s", rec.Body.String())
				}
				return
			}
			if gotPath != tc.wantPath || gotResource != tc.wantResource {
				t.Errorf("inner handler saw path %q resource %q, want %q %q", gotPath, gotResource, tc.wantPath, tc.wantResource)
			}
			if !strings.HasPrefix(gotURI, tc.wantPath) {
				t.Errorf("request URI %q does not start with %q", gotURI, tc.wantPath)
			}
		})
	}
}
