package apiextensions

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/munnerz/goautoneg"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// maxCachedClusters bounds how many logical clusters keep merged OpenAPI
// documents in memory; others are rebuilt on their next request.
const maxCachedClusters = 32

// openAPIMerger serves the OpenAPI v2 and v3 documents of logical clusters
// with CRDs: the built-in documents plus the cluster's CRDs.
type openAPIMerger struct {
	crds *crdIndex
	// staticV2 returns the built-in OpenAPI v2 document (set by Install;
	// nil: none).
	staticV2 func() (*spec.Swagger, error)
	// hidden returns the limited kinds a cluster does not serve (nil:
	// none).
	hidden func(logicalcluster.Name) []schema.GroupVersionResource

	// builds merges one cluster's documents at a time, outside of lock.
	builds singleflight.Group
	// lock guards docs and order; it is not held while documents are
	// merged, so the informer's handler never waits for a merge.
	lock sync.Mutex
	// docs are the merged documents per cluster, built on request.
	docs  map[logicalcluster.Name]*clusterOpenAPI
	order []logicalcluster.Name
	// staticV2s serve the built-in v2 document without hidden kinds, by
	// hiddenFingerprint; staticV3s are built-in v3 group version documents
	// without hidden kinds, by path, built-in ETag and hiddenFingerprint.
	staticV2s map[string]http.Handler
	staticV3s map[string]*v3Document
}

// clusterOpenAPI are the documents of one cluster for one set of CRDs.
type clusterOpenAPI struct {
	fingerprint string
	// v2 serves the merged v2 document, built on first use.
	v2        http.Handler
	v2Once    sync.Once
	v2Handler http.Handler
	v2Err     error
	// v3 maps "apis/<group>/<version>" to its document.
	v3 map[string]*v3Document
}

type v3Document struct {
	json         []byte
	etag         string
	lastModified time.Time
	protoOnce    sync.Once
	proto        []byte
	protoErr     error
}

func newOpenAPIMerger(crds *crdIndex) *openAPIMerger {
	return &openAPIMerger{crds: crds, docs: map[logicalcluster.Name]*clusterOpenAPI{},
		staticV2s: map[string]http.Handler{}, staticV3s: map[string]*v3Document{}}
}

// OnAdd, OnUpdate and OnDelete release the documents of a cluster whose
// CRDs changed.
func (m *openAPIMerger) OnAdd(obj interface{})       { m.forget(obj) }
func (m *openAPIMerger) OnUpdate(_, obj interface{}) { m.forget(obj) }
func (m *openAPIMerger) OnDelete(obj interface{})    { m.forget(obj) }

func (m *openAPIMerger) forget(obj interface{}) {
	crd, ok := crdFromObject(obj)
	if !ok {
		return
	}
	m.lock.Lock()
	defer m.lock.Unlock()
	delete(m.docs, clusterOf(crd))
}

// established returns the established CRDs of a cluster and a fingerprint
// of them.
func (m *openAPIMerger) established(cluster logicalcluster.Name) ([]*apiextensionsv1.CustomResourceDefinition, string) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	var fp strings.Builder
	for _, crd := range m.crds.served(cluster) {
		// Core group CRDs are not in the documents (yet): their paths are
		// below /api, which the built-in document covers.
		if apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) && crd.Spec.Group != "" {
			crds = append(crds, crd)
			fmt.Fprintf(&fp, "%s/%s;", crd.UID, crd.ResourceVersion)
		}
	}
	return crds, fp.String()
}

// hiddenIn returns the limited kinds cluster does not serve.
func (m *openAPIMerger) hiddenIn(cluster logicalcluster.Name) []schema.GroupVersionResource {
	if m.hidden == nil {
		return nil
	}
	return m.hidden(cluster)
}

// documents returns the cluster's merged documents, or nil if it has no
// established CRDs and hides no kinds.
func (m *openAPIMerger) documents(cluster logicalcluster.Name) *clusterOpenAPI {
	crds, fp := m.established(cluster)
	hidden := m.hiddenIn(cluster)
	if len(crds) == 0 && len(hidden) == 0 {
		return nil
	}
	fp += hiddenFingerprint(hidden)
	m.lock.Lock()
	d := m.docs[cluster]
	m.lock.Unlock()
	if d != nil && d.fingerprint == fp {
		return d
	}
	v, _, _ := m.builds.Do(string(cluster)+"\x00"+fp, func() (interface{}, error) {
		return m.build(cluster, crds, hidden, fp), nil
	})
	return v.(*clusterOpenAPI)
}

// build merges the documents of a cluster's CRDs and caches them.
func (m *openAPIMerger) build(cluster logicalcluster.Name, crds []*apiextensionsv1.CustomResourceDefinition, hidden []schema.GroupVersionResource, fp string) *clusterOpenAPI {
	d := &clusterOpenAPI{fingerprint: fp, v3: m.buildV3(crds)}
	v2crds := crds
	d.v2 = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		d.v2Once.Do(func() {
			if len(v2crds) == 0 {
				d.v2Handler, d.v2Err = m.staticV2Without(hidden)
				return
			}
			d.v2Handler, d.v2Err = m.buildV2(v2crds, hidden)
		})
		if d.v2Err != nil {
			klog.FromContext(req.Context()).Error(d.v2Err, "Building OpenAPI v2 failed", "cluster", cluster)
			http.Error(w, "OpenAPI v2 document not available", http.StatusServiceUnavailable)
			return
		}
		d.v2Handler.ServeHTTP(w, req)
	})
	m.lock.Lock()
	defer m.lock.Unlock()
	if _, ok := m.docs[cluster]; !ok {
		m.order = append(m.order, cluster)
	}
	m.docs[cluster] = d
	for len(m.order) > maxCachedClusters {
		delete(m.docs, m.order[0])
		m.order = m.order[1:]
	}
	return d
}

// buildV2 merges the static v2 spec with the CRDs' and returns a handler
// that serves it as JSON or protobuf with ETags.
func (m *openAPIMerger) buildV2(crds []*apiextensionsv1.CustomResourceDefinition, hidden []schema.GroupVersionResource) (http.Handler, error) {
	if m.staticV2 == nil {
		return nil, fmt.Errorf("static OpenAPI v2 spec is not available")
	}
	static, err := m.staticV2()
	if err != nil {
		return nil, fmt.Errorf("static OpenAPI v2 spec: %w", err)
	}
	var specs []*spec.Swagger
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			s, err := builder.BuildOpenAPIV2(crd, v.Name, builder.Options{V2: true, IncludeSelectableFields: true})
			if err != nil {
				return nil, fmt.Errorf("OpenAPI v2 of %s version %s: %w", crd.Name, v.Name, err)
			}
			// The static spec has its defaults pruned; so must the CRDs'.
			s.Definitions = handler.PruneDefaults(s.Definitions)
			specs = append(specs, s)
		}
	}
	merged, err := builder.MergeSpecs(static, specs...)
	if err != nil {
		return nil, err
	}
	if len(hidden) > 0 {
		merged = swaggerWithout(merged, hidden)
	}
	mux := &singleHandler{}
	handler.NewOpenAPIService(merged).RegisterOpenAPIVersionedService("/openapi/v2", mux)
	return mux.handler, nil
}

// singleHandler captures the one handler an OpenAPI service registers.
type singleHandler struct{ handler http.Handler }

func (s *singleHandler) Handle(_ string, h http.Handler) { s.handler = h }

// buildV3 builds one document per CRD group version.
func (m *openAPIMerger) buildV3(crds []*apiextensionsv1.CustomResourceDefinition) map[string]*v3Document {
	byGV := map[schema.GroupVersion][]*spec3.OpenAPI{}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			s, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{IncludeSelectableFields: true})
			if err != nil {
				klog.Background().Error(err, "Building OpenAPI v3 failed", "crd", crd.Name, "version", v.Name)
				continue
			}
			gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
			byGV[gv] = append(byGV[gv], s)
		}
	}
	docs := map[string]*v3Document{}
	for gv, specs := range byGV {
		merged, err := builder.MergeSpecsV3(specs...)
		if err != nil {
			klog.Background().Error(err, "Merging OpenAPI v3 failed", "groupVersion", gv)
			continue
		}
		j, err := json.Marshal(merged)
		if err != nil {
			continue
		}
		docs["apis/"+gv.Group+"/"+gv.Version] = &v3Document{json: j, etag: fmt.Sprintf("%X", sha512.Sum512(j)), lastModified: time.Now()}
	}
	return docs
}

// serveV2 serves /openapi/v2 once the built-in handler chain has
// authorized the request.
func (m *openAPIMerger) serveV2(inner http.Handler, w http.ResponseWriter, req *http.Request, cluster logicalcluster.Name) {
	docs := m.documents(cluster)
	if docs == nil || m.staticV2 == nil {
		inner.ServeHTTP(w, req)
		return
	}
	if rec := authorizeVia(inner, req); rec != nil {
		rec.replay(w)
		return
	}
	docs.v2.ServeHTTP(w, req)
}

// serveV3Root adds the cluster's CRD group versions to /openapi/v3 and
// links the documents of group versions with hidden kinds to their
// documents without them.
func (m *openAPIMerger) serveV3Root(inner http.Handler, w http.ResponseWriter, req *http.Request, cluster logicalcluster.Name) {
	docs := m.documents(cluster)
	hidden := hiddenGroupVersions(m.hiddenIn(cluster))
	if (docs == nil || len(docs.v3) == 0) && len(hidden) == 0 {
		inner.ServeHTTP(w, req)
		return
	}
	rec := record(inner, req)
	var root handler3.OpenAPIV3Discovery
	if rec.code != http.StatusOK || json.Unmarshal(rec.body.Bytes(), &root) != nil {
		rec.replay(w)
		return
	}
	if root.Paths == nil {
		root.Paths = map[string]handler3.OpenAPIV3DiscoveryGroupVersion{}
	}
	for path, gvrs := range hidden {
		builtIn, ok := root.Paths[path]
		if !ok {
			continue
		}
		d := m.cachedStaticV3(path, hashOf(builtIn.ServerRelativeURL), gvrs)
		if d == nil {
			d, _ = m.staticV3Without(inner, req, path, gvrs)
		}
		if d != nil {
			root.Paths[path] = handler3.OpenAPIV3DiscoveryGroupVersion{ServerRelativeURL: v3URL("", path, d.etag)}
		}
	}
	if docs != nil {
		for path, d := range docs.v3 {
			if _, builtIn := root.Paths[path]; builtIn {
				continue
			}
			root.Paths[path] = handler3.OpenAPIV3DiscoveryGroupVersion{ServerRelativeURL: v3URL("", path, d.etag)}
		}
	}
	body, err := json.Marshal(root)
	if err != nil {
		rec.replay(w)
		return
	}
	serveWithETag(w, req, "application/json", body)
}

// serveV3GroupVersion serves /openapi/v3/apis/<group>/<version> of a CRD
// group version once the built-in chain has authorized the request.
func (m *openAPIMerger) serveV3GroupVersion(inner http.Handler, w http.ResponseWriter, req *http.Request, cluster logicalcluster.Name) {
	path := strings.TrimPrefix(req.URL.Path, "/openapi/v3/")
	if gvrs := hiddenGroupVersions(m.hiddenIn(cluster))[path]; len(gvrs) > 0 {
		// Fetched as the client: inner authorizes the request.
		doc, rec := m.staticV3Without(inner, req, path, gvrs)
		if doc == nil {
			rec.replay(w)
			return
		}
		serveV3Document(w, req, cluster, path, doc)
		return
	}
	docs := m.documents(cluster)
	var doc *v3Document
	if docs != nil {
		doc = docs.v3[path]
	}
	if doc == nil {
		inner.ServeHTTP(w, req)
		return
	}
	if rec := authorizeVia(inner, req); rec != nil {
		rec.replay(w)
		return
	}
	serveV3Document(w, req, cluster, path, doc)
}

// serveV3Document serves doc, the OpenAPI v3 document of path in cluster,
// as JSON or protobuf, redirecting a request for another hash to its own.
func serveV3Document(w http.ResponseWriter, req *http.Request, cluster logicalcluster.Name, path string, doc *v3Document) {
	w.Header().Add("Vary", "Accept")
	accept := req.Header.Get("Accept")
	if accept == "" {
		accept = "*/*"
	}
	for _, clause := range goautoneg.ParseAccept(accept) {
		var body []byte
		var contentType string
		switch {
		case clause.Type != "application" && clause.Type != "*":
			continue
		case clause.SubType == "json" || clause.SubType == "*":
			body, contentType = doc.json, "application/json"
		case clause.SubType == "com.github.proto-openapi.spec.v3.v1.0+protobuf" || clause.SubType == "com.github.proto-openapi.spec.v3@v1.0+protobuf":
			doc.protoOnce.Do(func() { doc.proto, doc.protoErr = handler3.ToV3ProtoBinary(doc.json) })
			if doc.protoErr != nil {
				http.Error(w, doc.protoErr.Error(), http.StatusInternalServerError)
				return
			}
			body, contentType = doc.proto, "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"
		default:
			continue
		}
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Etag", strconv.Quote(doc.etag))
		if hash := req.URL.Query().Get("hash"); hash != "" {
			if hash != doc.etag {
				// Keep the client in its logical cluster.
				http.Redirect(w, req, v3URL(cluster.RequestPath(), path, doc.etag), http.StatusMovedPermanently)
				return
			}
			w.Header().Set("Cache-Control", "public, immutable")
			w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).Format(time.RFC1123))
		}
		http.ServeContent(w, req, "", doc.lastModified, bytes.NewReader(body))
		return
	}
	w.WriteHeader(http.StatusNotAcceptable)
}

// hashOf returns the hash parameter of an /openapi/v3 link.
func hashOf(link string) string {
	u, err := url.Parse(link)
	if err != nil {
		return ""
	}
	return u.Query().Get("hash")
}

func v3URL(prefix, path, etag string) string {
	u := url.URL{Path: prefix + "/openapi/v3/" + path, RawQuery: url.Values{"hash": []string{etag}}.Encode()}
	return u.String()
}
