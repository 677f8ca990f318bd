package shard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	restful "github.com/emicklei/go-restful/v3"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// widgetRoutes returns a container serving GET /apis/example.io/v1/widgets,
// the information of a document, and definitions that count how often a
// document is built.
func widgetRoutes() (*restful.Container, *spec.Info, common.GetOpenAPIDefinitions, *int) {
	container := restful.NewContainer()
	ws := new(restful.WebService).Path("/apis/example.io/v1")
	ws.Route(ws.GET("/widgets").To(func(*restful.Request, *restful.Response) {}).Operation("listWidgets"))
	container.Add(ws)
	builds := 0
	definitions := func(common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		builds++
		return nil
	}
	return container, &spec.Info{InfoProps: spec.InfoProps{Title: "test", Version: "v1"}}, definitions, &builds
}

// The v2 document is built on its first request, from the routes installed
// by then, and once.
func TestOpenAPIV2IsBuiltOnFirstRequest(t *testing.T) {
	container, info, definitions, builds := widgetRoutes()
	config := &common.Config{Info: info, GetDefinitions: definitions}
	m := mux.NewPathRecorderMux("test")
	newLazyOpenAPIV2(container, config).install(m)
	if *builds != 0 {
		t.Fatalf("the document was built %d times before any request", *builds)
	}
	// A route installed after the server was made is in the document.
	late := new(restful.WebService).Path("/apis/late.io/v1")
	late.Route(late.GET("/gadgets").To(func(*restful.Request, *restful.Response) {}).Operation("listGadgets"))
	container.Add(late)
	for i := 0; i < 2; i++ {
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi/v2", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET /openapi/v2: %d %s", rec.Code, rec.Body)
		}
		for _, path := range []string{"/apis/example.io/v1/widgets", "/apis/late.io/v1/gadgets"} {
			if !strings.Contains(rec.Body.String(), path) {
				t.Errorf("the document lacks %s", path)
			}
		}
	}
	if *builds != 1 {
		t.Errorf("the document was built %d times, want once", *builds)
	}
}

// The v3 documents are installed with upstream's handler on the first
// request: discovery lists every group version, each document has its
// routes.
func TestOpenAPIV3IsBuiltOnFirstRequest(t *testing.T) {
	container, info, definitions, builds := widgetRoutes()
	config := &common.OpenAPIV3Config{Info: info, GetDefinitions: definitions}
	m := mux.NewPathRecorderMux("test")
	installLazyOpenAPIV3(container, config, m)
	if *builds != 0 {
		t.Fatalf("documents built %d times before any request", *builds)
	}
	get := func(path string) string {
		t.Helper()
		rec := httptest.NewRecorder()
		m.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	if discovery := get("/openapi/v3"); !strings.Contains(discovery, `"apis/example.io/v1"`) {
		t.Errorf("discovery lacks apis/example.io/v1: %s", discovery)
	}
	if doc := get("/openapi/v3/apis/example.io/v1"); !strings.Contains(doc, "/apis/example.io/v1/widgets") {
		t.Errorf("the group version's document lacks its route: %s", doc)
	}
	if *builds == 0 {
		t.Error("no document was built by the requests")
	}
	before := *builds
	get("/openapi/v3/apis/example.io/v1")
	if *builds != before {
		t.Errorf("a second request built the documents again")
	}
}
