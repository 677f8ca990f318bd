package shard

import (
	"net/http"
	"sync"

	restful "github.com/emicklei/go-restful/v3"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/apiserver/pkg/server/routes"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/cached"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/common/restfuladapter"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The shard's OpenAPI documents are built from the installed routes on
// their first request instead of when the server starts. Upstream builds
// every v2 and v3 document in PrepareRun and keeps them for the process's
// life: a large part of an idle shard's heap that a shard whose clients
// never ask for them (controllers, proxies) does not need. Once built they
// are kept, as upstream's are.

// lazyOpenAPIV2 is the OpenAPI v2 document.
type lazyOpenAPIV2 struct {
	spec cached.Value[*spec.Swagger]
}

// newLazyOpenAPIV2 builds from the routes of container (the server's,
// where its APIs are installed) with config, the generic config's v2
// settings (completed).
func newLazyOpenAPIV2(container *restful.Container, config *common.Config) *lazyOpenAPIV2 {
	return &lazyOpenAPIV2{spec: cached.Once(cached.Func(func() (*spec.Swagger, string, error) {
		s, err := builder.BuildOpenAPISpecFromRoutes(restfuladapter.AdaptWebServices(container.RegisteredWebServices()), config)
		if err != nil {
			return nil, "", err
		}
		s.Definitions = handler.PruneDefaults(s.Definitions)
		// Built once, never changed: the etag only tells that.
		return s, "static", nil
	}))}
}

// install serves the document at /openapi/v2, as upstream does.
func (l *lazyOpenAPIV2) install(mux common.PathHandler) {
	handler.NewOpenAPIServiceLazy(l.spec).RegisterOpenAPIVersionedService("/openapi/v2", mux)
}

// get returns the document, building it the first time.
func (l *lazyOpenAPIV2) get() (*spec.Swagger, error) {
	s, _, err := l.spec.Get()
	return s, err
}

// lazyOpenAPIV3 serves /openapi/v3 and its group versions with upstream's
// handler, installed (every group version built) on the first request.
type lazyOpenAPIV3 struct {
	container *restful.Container
	config    *common.OpenAPIV3Config

	once    sync.Once
	handler http.Handler
}

// installLazyOpenAPIV3 serves the v3 documents of container's routes built
// with config at /openapi/v3 on m.
func installLazyOpenAPIV3(container *restful.Container, config *common.OpenAPIV3Config, m *mux.PathRecorderMux) {
	l := &lazyOpenAPIV3{container: container, config: config}
	m.Handle("/openapi/v3", l)
	m.HandlePrefix("/openapi/v3/", l)
}

func (l *lazyOpenAPIV3) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	l.once.Do(func() {
		m := mux.NewPathRecorderMux("openapi-v3")
		routes.OpenAPI{V3Config: l.config}.InstallV3(l.container, m)
		l.handler = m
	})
	l.handler.ServeHTTP(w, req)
}
