package apiextensions

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The OpenAPI documents of a workspace leave out the limited kinds it
// does not bind, as its discovery does: in kcp they come from the
// workspace's own APIs (CRDs and bindings), so a kind served only through
// an unbound export is in none of them.

const gvkExtension = "x-kubernetes-group-version-kind"

// isPathOf tells whether an OpenAPI path serves gvr: its collection, an
// object, a subresource or their watch paths.
func isPathOf(path string, gvr schema.GroupVersionResource) bool {
	prefix := "/apis/" + gvr.Group + "/" + gvr.Version + "/"
	if gvr.Group == "" {
		prefix = "/api/" + gvr.Version + "/"
	}
	rest, ok := strings.CutPrefix(path, prefix)
	if !ok {
		return false
	}
	rest = strings.TrimPrefix(rest, "watch/")
	rest = strings.TrimPrefix(rest, "namespaces/{namespace}/")
	first, _, _ := strings.Cut(rest, "/")
	return first == gvr.Resource
}

// definesKindOf tells whether a definition is the kind of gvr or its list,
// by its group-version-kind extension.
func definesKindOf(ext spec.Extensions, gvr schema.GroupVersionResource) bool {
	kind, ok := limitedKind[gvr]
	raw, found := ext[gvkExtension]
	if !ok || !found {
		return false
	}
	// The extension is a list of objects, decoded or built in memory.
	b, err := json.Marshal(raw)
	if err != nil {
		return false
	}
	var gvks []struct{ Group, Version, Kind string }
	if json.Unmarshal(b, &gvks) != nil {
		return false
	}
	for _, gvk := range gvks {
		if gvk.Group == gvr.Group && gvk.Version == gvr.Version && (gvk.Kind == kind || gvk.Kind == kind+"List") {
			return true
		}
	}
	return false
}

func anyPathOf(path string, hidden []schema.GroupVersionResource) bool {
	for _, gvr := range hidden {
		if isPathOf(path, gvr) {
			return true
		}
	}
	return false
}

func anyKindOf(ext spec.Extensions, hidden []schema.GroupVersionResource) bool {
	for _, gvr := range hidden {
		if definesKindOf(ext, gvr) {
			return true
		}
	}
	return false
}

// swaggerWithout returns sw without the paths and definitions of hidden.
// sw is not changed: it may be shared with other documents.
func swaggerWithout(sw *spec.Swagger, hidden []schema.GroupVersionResource) *spec.Swagger {
	out := *sw
	if sw.Paths != nil {
		paths := *sw.Paths
		paths.Paths = map[string]spec.PathItem{}
		for p, item := range sw.Paths.Paths {
			if !anyPathOf(p, hidden) {
				paths.Paths[p] = item
			}
		}
		out.Paths = &paths
	}
	if sw.Definitions != nil {
		out.Definitions = spec.Definitions{}
		for name, def := range sw.Definitions {
			if !anyKindOf(def.Extensions, hidden) {
				out.Definitions[name] = def
			}
		}
	}
	return &out
}

// openAPIV3Without returns the group version document doc without the
// paths and schemas of hidden. doc is not changed.
func openAPIV3Without(doc *spec3.OpenAPI, hidden []schema.GroupVersionResource) *spec3.OpenAPI {
	out := *doc
	if doc.Paths != nil {
		paths := *doc.Paths
		paths.Paths = map[string]*spec3.Path{}
		for p, item := range doc.Paths.Paths {
			if !anyPathOf(p, hidden) {
				paths.Paths[p] = item
			}
		}
		out.Paths = &paths
	}
	if doc.Components != nil && doc.Components.Schemas != nil {
		components := *doc.Components
		components.Schemas = map[string]*spec.Schema{}
		for name, s := range doc.Components.Schemas {
			if s == nil || !anyKindOf(s.Extensions, hidden) {
				components.Schemas[name] = s
			}
		}
		out.Components = &components
	}
	return &out
}

// hiddenGroupVersions maps the OpenAPI v3 path of each group version that
// has hidden resources ("apis/<group>/<version>") to those resources.
func hiddenGroupVersions(hidden []schema.GroupVersionResource) map[string][]schema.GroupVersionResource {
	out := map[string][]schema.GroupVersionResource{}
	for _, gvr := range hidden {
		p := "apis/" + gvr.Group + "/" + gvr.Version
		if gvr.Group == "" {
			p = "api/" + gvr.Version
		}
		out[p] = append(out[p], gvr)
	}
	return out
}

func hiddenFingerprint(hidden []schema.GroupVersionResource) string {
	var b strings.Builder
	for _, gvr := range hidden {
		fmt.Fprintf(&b, "hidden:%s;", gvr)
	}
	return b.String()
}

// staticV2Without serves the built-in OpenAPI v2 document without hidden:
// one handler for all clusters that hide the same kinds and have no CRDs.
func (m *openAPIMerger) staticV2Without(hidden []schema.GroupVersionResource) (http.Handler, error) {
	key := hiddenFingerprint(hidden)
	m.lock.Lock()
	h := m.staticV2s[key]
	m.lock.Unlock()
	if h != nil {
		return h, nil
	}
	v, err, _ := m.builds.Do("static-v2\x00"+key, func() (interface{}, error) {
		if m.staticV2 == nil {
			return nil, fmt.Errorf("static OpenAPI v2 spec is not available")
		}
		static, err := m.staticV2()
		if err != nil {
			return nil, fmt.Errorf("static OpenAPI v2 spec: %w", err)
		}
		mux := &singleHandler{}
		handler.NewOpenAPIService(swaggerWithout(static, hidden)).RegisterOpenAPIVersionedService("/openapi/v2", mux)
		m.lock.Lock()
		m.staticV2s[key] = mux.handler
		m.lock.Unlock()
		return mux.handler, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(http.Handler), nil
}

// staticV3Without returns the built-in OpenAPI v3 document of a group
// version (path "apis/<group>/<version>") without hidden, fetched through
// inner as req's client. It returns the inner response instead when inner
// does not answer 200 (the client may not read it, ...).
func (m *openAPIMerger) staticV3Without(inner http.Handler, req *http.Request, path string, hidden []schema.GroupVersionResource) (*v3Document, *recorder) {
	get := req.Clone(req.Context())
	get.URL = &url.URL{Path: "/openapi/v3/" + path}
	get.RequestURI = get.URL.Path
	get.Header.Set("Accept", "application/json")
	rec := record(inner, get)
	if rec.code != http.StatusOK {
		return nil, rec
	}
	etag, _ := strconv.Unquote(rec.header.Get("Etag"))
	if d := m.cachedStaticV3(path, etag, hidden); d != nil {
		return d, nil
	}
	var doc spec3.OpenAPI
	if err := json.Unmarshal(rec.body.Bytes(), &doc); err != nil {
		return nil, rec
	}
	j, err := json.Marshal(openAPIV3Without(&doc, hidden))
	if err != nil {
		return nil, rec
	}
	d := &v3Document{json: j, etag: fmt.Sprintf("%X", sha512.Sum512(j)), lastModified: time.Now()}
	m.lock.Lock()
	m.staticV3s[staticV3Key(path, etag, hidden)] = d
	m.lock.Unlock()
	return d, nil
}

// cachedStaticV3 returns the document staticV3Without made of the
// built-in document of path whose ETag (its hash in /openapi/v3) is etag,
// if it made it.
func (m *openAPIMerger) cachedStaticV3(path, etag string, hidden []schema.GroupVersionResource) *v3Document {
	m.lock.Lock()
	defer m.lock.Unlock()
	return m.staticV3s[staticV3Key(path, etag, hidden)]
}

func staticV3Key(path, etag string, hidden []schema.GroupVersionResource) string {
	return path + "\x00" + etag + "\x00" + hiddenFingerprint(hidden)
}
