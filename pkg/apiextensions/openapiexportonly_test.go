package apiextensions

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

func TestIsPathOfMatchesEveryPathOfTheResource(t *testing.T) {
	shards := schema.GroupVersionResource{Group: "core.kcp.io", Version: "v1alpha1", Resource: "shards"}
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	for _, tc := range []struct {
		path string
		gvr  schema.GroupVersionResource
		want bool
	}{
		{"/apis/core.kcp.io/v1alpha1/shards", shards, true},
		{"/apis/core.kcp.io/v1alpha1/shards/{name}", shards, true},
		{"/apis/core.kcp.io/v1alpha1/shards/{name}/status", shards, true},
		{"/apis/core.kcp.io/v1alpha1/watch/shards", shards, true},
		{"/apis/core.kcp.io/v1alpha1/watch/shards/{name}", shards, true},
		{"/apis/core.kcp.io/v1alpha1/logicalclusters", shards, false},
		{"/apis/core.kcp.io/v1alpha1/", shards, false},
		{"/apis/core.kcp.io/v1alpha2/shards", shards, false},
		{"/apis/other.kcp.io/v1alpha1/shards", shards, false},
		{"/apis/core.kcp.io/v1alpha1/shardsx", shards, false},
		{"/api/v1/namespaces/{namespace}/pods/{name}", pods, true},
		{"/api/v1/watch/namespaces/{namespace}/pods", pods, true},
		{"/api/v1/namespaces/{namespace}/services", pods, false},
	} {
		if got := isPathOf(tc.path, tc.gvr); got != tc.want {
			t.Errorf("isPathOf(%q, %v) = %v, want %v", tc.path, tc.gvr, got, tc.want)
		}
	}
}

func gvkExt(group, version, kind string) spec.Extensions {
	return spec.Extensions{gvkExtension: []interface{}{map[string]interface{}{"group": group, "version": version, "kind": kind}}}
}

func TestOpenAPIDocumentsWithoutHiddenKindsKeepTheRestAndTheirInput(t *testing.T) {
	hidden := []schema.GroupVersionResource{shardsResource}
	def := func(kind string) spec.Schema {
		return spec.Schema{VendorExtensible: spec.VendorExtensible{Extensions: gvkExt("core.kcp.io", "v1alpha1", kind)}}
	}
	sw := &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Paths: &spec.Paths{Paths: map[string]spec.PathItem{
			"/apis/core.kcp.io/v1alpha1/shards":          {},
			"/apis/core.kcp.io/v1alpha1/watch/shards":    {},
			"/apis/core.kcp.io/v1alpha1/logicalclusters": {},
		}},
		Definitions: spec.Definitions{
			"io.kcp.core.v1alpha1.Shard":              def("Shard"),
			"io.kcp.core.v1alpha1.ShardList":          def("ShardList"),
			"io.kcp.core.v1alpha1.LogicalCluster":     def("LogicalCluster"),
			"io.kcp.core.v1alpha1.ShardSpec":          {},
			"io.k8s.apimachinery.pkg.apis.meta.v1.Me": {VendorExtensible: spec.VendorExtensible{Extensions: gvkExt("", "v1", "Shard")}},
		},
	}}
	out := swaggerWithout(sw, hidden)
	if _, ok := out.Paths.Paths["/apis/core.kcp.io/v1alpha1/logicalclusters"]; !ok || len(out.Paths.Paths) != 1 {
		t.Errorf("v2 paths: %v", out.Paths.Paths)
	}
	if _, ok := out.Definitions["io.kcp.core.v1alpha1.Shard"]; ok || len(out.Definitions) != 3 {
		t.Errorf("v2 definitions: %v", out.Definitions)
	}
	if len(sw.Paths.Paths) != 3 || len(sw.Definitions) != 5 {
		t.Error("the input v2 document was changed")
	}

	shard, logicalCluster := def("Shard"), def("LogicalCluster")
	doc := &spec3.OpenAPI{
		Paths: &spec3.Paths{Paths: map[string]*spec3.Path{
			"/apis/core.kcp.io/v1alpha1/shards/{name}":   {},
			"/apis/core.kcp.io/v1alpha1/logicalclusters": {},
		}},
		Components: &spec3.Components{Schemas: map[string]*spec.Schema{"Shard": &shard, "LogicalCluster": &logicalCluster}},
	}
	out3 := openAPIV3Without(doc, hidden)
	if _, ok := out3.Paths.Paths["/apis/core.kcp.io/v1alpha1/logicalclusters"]; !ok || len(out3.Paths.Paths) != 1 {
		t.Errorf("v3 paths: %v", out3.Paths.Paths)
	}
	if _, ok := out3.Components.Schemas["LogicalCluster"]; !ok || len(out3.Components.Schemas) != 1 {
		t.Errorf("v3 schemas: %v", out3.Components.Schemas)
	}
	if len(doc.Paths.Paths) != 2 || len(doc.Components.Schemas) != 2 {
		t.Error("the input v3 document was changed")
	}
}

func TestHiddenGroupVersionsNamesTheirV3Documents(t *testing.T) {
	got := hiddenGroupVersions([]schema.GroupVersionResource{shardsResource, {Version: "v1", Resource: "pods"}})
	if len(got["apis/core.kcp.io/v1alpha1"]) != 1 || len(got["api/v1"]) != 1 || len(got) != 2 {
		t.Errorf("hiddenGroupVersions = %v", got)
	}
}

// builtInV3 serves a built-in /openapi/v3 with core.kcp.io/v1alpha1, whose
// document has shards and logicalclusters, to clients it lets in.
func builtInV3() http.Handler {
	doc := []byte(`{"openapi":"3.0.0","paths":{"/apis/core.kcp.io/v1alpha1/shards":{},"/apis/core.kcp.io/v1alpha1/logicalclusters":{}}}`)
	etag := fmt.Sprintf("%X", sha512.Sum512(doc))
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "ok" {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		switch req.URL.Path {
		case "/openapi/v3":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"paths":{"apis/core.kcp.io/v1alpha1":{"serverRelativeURL":"/openapi/v3/apis/core.kcp.io/v1alpha1?hash=%s"}}}`, etag)
		case "/openapi/v3/apis/core.kcp.io/v1alpha1":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Etag", strconv.Quote(etag))
			_, _ = w.Write(doc)
		default:
			http.NotFound(w, req)
		}
	})
}

func TestOpenAPIV3OfAClusterHidingShardsLinksAndServesADocumentWithoutThem(t *testing.T) {
	idx, err := newCRDIndex(wildcardinformer.New(&cache.ListWatch{}, &apiextensionsv1.CustomResourceDefinition{}, "test-customresourcedefinitions"))
	if err != nil {
		t.Fatal(err)
	}
	m := newOpenAPIMerger(idx)
	m.hidden = func(cluster logicalcluster.Name) []schema.GroupVersionResource {
		if cluster == "org" {
			return []schema.GroupVersionResource{shardsResource}
		}
		return nil
	}
	inner := builtInV3()
	get := func(serve func(http.Handler, http.ResponseWriter, *http.Request, logicalcluster.Name), cluster logicalcluster.Name, path, auth string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", auth)
		rec := httptest.NewRecorder()
		serve(inner, rec, req, cluster)
		return rec
	}

	root := get(m.serveV3Root, "org", "/openapi/v3", "ok")
	var discovery handler3.OpenAPIV3Discovery
	if err := json.Unmarshal(root.Body.Bytes(), &discovery); err != nil {
		t.Fatalf("root: %v: %s", err, root.Body)
	}
	link := discovery.Paths["apis/core.kcp.io/v1alpha1"].ServerRelativeURL
	doc := get(m.serveV3GroupVersion, "org", link, "ok")
	if doc.Code != http.StatusOK || strings.Contains(doc.Body.String(), "shards") || !strings.Contains(doc.Body.String(), "logicalclusters") {
		t.Errorf("GET %s: HTTP %d %s, want the document without shards", link, doc.Code, doc.Body)
	}
	// A stale hash is redirected to the document's own.
	if stale := get(m.serveV3GroupVersion, "org", "/openapi/v3/apis/core.kcp.io/v1alpha1?hash=0", "ok"); stale.Code != http.StatusMovedPermanently ||
		stale.Header().Get("Location") != logicalcluster.Name("org").RequestPath()+link {
		t.Errorf("stale hash: HTTP %d to %q, want a redirect to %s", stale.Code, stale.Header().Get("Location"), link)
	}
	// Clients the built-in chain refuses get its answer.
	if refused := get(m.serveV3GroupVersion, "org", link, "no"); refused.Code != http.StatusForbidden {
		t.Errorf("refused client: HTTP %d, want 403", refused.Code)
	}
	// Clusters that serve Shards get the built-in documents as they are.
	if rootDoc := get(m.serveV3GroupVersion, "root", "/openapi/v3/apis/core.kcp.io/v1alpha1", "ok"); !strings.Contains(rootDoc.Body.String(), "shards") {
		t.Errorf("root's document: %s", rootDoc.Body)
	}
}
