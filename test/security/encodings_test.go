package security

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/shardplane/shardplane/pkg/cacheserver"
	"github.com/shardplane/shardplane/test/framework"
)

// encodingTarget is one resource of one family (built-in, CRD, core group
// CRD, bound, the APIExport view, the cache server) as one entrance
// reaches it, with one object of it that exists.
type encodingTarget struct {
	family, entrance string
	base             string
	// prefix is the path up to the API root: /clusters/<x>, a view's
	// /services/apiexport/.../clusters/<x>, the cache's /services/cache/...
	prefix string
	// header carries the credentials; cert is a client certificate.
	header http.Header
	cert   *tls.Certificate
	// collection is the collection's path below prefix; name is the
	// object's, which object describes.
	collection, name string
	object           map[string]interface{}
	// typed is the object as a built-in type, which protobuf encodes and
	// strategic merge patches apply to; nil for custom resources.
	typed runtime.Object
	// strict: the resource is served as kube-apiserver serves it, so valid
	// writes must succeed; the cache server's replicas need only never fail.
	strict bool
}

// acceptance is whether a target decodes a content type.
type acceptance int

const (
	decodes acceptance = iota
	// refuses: 415 naming the supported types.
	refuses
	// mayDecode: served, or 415 (CBOR is behind a feature gate).
	mayDecode
)

// bodyEncoding is one Content-Type of a create or update and how it
// encodes an object.
type bodyEncoding struct {
	name string
	// contentType is sent as is; missing sends none.
	contentType string
	missing     bool
	encode      func(encodingTarget) []byte
	accepted    func(encodingTarget) acceptance
	// malformed are bytes no decoder of the type takes.
	malformed []byte
}

func jsonOf(tg encodingTarget) []byte {
	b, err := json.Marshal(tg.object)
	if err != nil {
		panic(err)
	}
	return b
}

func yamlOf(tg encodingTarget) []byte {
	b, err := yaml.JSONToYAML(jsonOf(tg))
	if err != nil {
		panic(err)
	}
	return b
}

// protobufOf is a built-in object in kube's protobuf envelope, and a
// custom resource as the envelope of its JSON (what a client that guesses
// protobuf would send).
func protobufOf(tg encodingTarget) []byte {
	var buf bytes.Buffer
	if tg.typed != nil {
		if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(tg.typed, &buf); err != nil {
			panic(err)
		}
		return buf.Bytes()
	}
	u := unstructured.Unstructured{Object: tg.object}
	unknown := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}, Raw: jsonOf(tg), ContentType: runtime.ContentTypeJSON}
	raw, err := unknown.Marshal()
	if err != nil {
		panic(err)
	}
	return append([]byte("k8s\x00"), raw...)
}

func cborOf(tg encodingTarget) []byte {
	var buf bytes.Buffer
	if err := cbor.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(&unstructured.Unstructured{Object: tg.object}, &buf); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func always(a acceptance) func(encodingTarget) acceptance {
	return func(encodingTarget) acceptance { return a }
}

// garbage is bytes no JSON or YAML decoder takes.
var garbage = []byte("{\"apiVersion\": \xff\xfe ]] \x00")

var bodyEncodings = []bodyEncoding{
	{name: "json", contentType: "application/json", encode: jsonOf, accepted: always(decodes), malformed: garbage},
	{name: "yaml", contentType: "application/yaml", encode: yamlOf, accepted: always(decodes), malformed: garbage},
	{name: "protobuf", contentType: "application/vnd.kubernetes.protobuf", encode: protobufOf,
		accepted: func(tg encodingTarget) acceptance {
			if tg.typed != nil {
				return decodes
			}
			return refuses
		},
		// The envelope's magic, then a field whose length runs past the end.
		malformed: []byte("k8s\x00\x0a\xff\xff\xff\xff\x0f\x12\x01")},
	{name: "cbor", contentType: "application/cbor", encode: cborOf, accepted: always(mayDecode),
		// The self-describe tag, then an indefinite map that never ends.
		malformed: []byte("\xd9\xd9\xf7\xbf\x61")},
	{name: "form", contentType: "application/x-www-form-urlencoded", encode: jsonOf, accepted: always(refuses), malformed: garbage},
	{name: "garbage type", contentType: "text/garbage; x=", encode: jsonOf, accepted: always(refuses), malformed: garbage},
	{name: "no type", missing: true, encode: jsonOf, accepted: always(decodes), malformed: garbage},
}

// patchType is one PATCH Content-Type, its patch of the object and a
// well-formed patch that gives metadata the wrong type.
type patchType struct {
	contentType string
	query       string
	body        func(encodingTarget) []byte
	mistyped    func(encodingTarget) []byte
	accepted    func(encodingTarget) acceptance
}

var patchTypes = []patchType{
	{contentType: "application/json-patch+json", accepted: always(decodes),
		body: func(encodingTarget) []byte {
			return []byte(`[{"op":"add","path":"/metadata/labels/enc-json-patch","value":"x"}]`)
		},
		mistyped: fixed([]byte(`[{"op":"replace","path":"/metadata","value":"x"}]`))},
	{contentType: "application/merge-patch+json", accepted: always(decodes),
		body:     func(encodingTarget) []byte { return []byte(`{"metadata":{"labels":{"enc-merge-patch":"x"}}}`) },
		mistyped: fixed([]byte(`{"metadata":"x"}`))},
	{contentType: "application/strategic-merge-patch+json",
		accepted: func(tg encodingTarget) acceptance {
			if tg.typed != nil || isCoreGroup(tg) {
				return decodes
			}
			return refuses
		},
		body:     func(encodingTarget) []byte { return []byte(`{"metadata":{"labels":{"enc-strategic":"x"}}}`) },
		mistyped: fixed([]byte(`{"metadata":"x"}`))},
	{contentType: "application/apply-patch+yaml", query: "fieldManager=sec-encodings&force=true", accepted: always(decodes), body: yamlOf,
		mistyped: func(tg encodingTarget) []byte { return yamlOf(mistypedOf(tg)) }},
	{contentType: "application/unknown-patch+json", accepted: always(refuses),
		body:     func(encodingTarget) []byte { return []byte(`{"metadata":{"labels":{"enc-unknown":"x"}}}`) },
		mistyped: fixed([]byte(`{"metadata":"x"}`))},
}

func fixed(b []byte) func(encodingTarget) []byte { return func(encodingTarget) []byte { return b } }

// bodyVariant picks what is sent from a valid body, bytes no decoder
// takes and a well-formed body whose metadata has the wrong type.
type bodyVariant struct {
	name string
	make func(valid, malformed, mistyped []byte) []byte
}

var bodyVariants = []bodyVariant{
	{"valid", func(valid, _, _ []byte) []byte { return valid }},
	{"malformed", func(_, malformed, _ []byte) []byte { return malformed }},
	{"mistyped", func(_, _, mistyped []byte) []byte { return mistyped }},
	{"truncated", func(valid, _, _ []byte) []byte { return valid[:len(valid)/2] }},
	{"empty", func([]byte, []byte, []byte) []byte { return []byte{} }},
}

// mistypedOf is the target with "metadata" a string. A built-in kind's
// protobuf envelope then holds JSON, which protobuf does not decode.
func mistypedOf(tg encodingTarget) encodingTarget {
	object := map[string]interface{}{}
	for k, v := range tg.object {
		object[k] = v
	}
	object["metadata"] = "x"
	tg.object, tg.typed = object, nil
	return tg
}

// acceptVariant is one Accept header of a read and the answer it must get
// (nil: any but 5xx).
type acceptVariant struct {
	accept string
	want   func(tg encodingTarget, list bool) func(answer) string
}

func acceptServed(tg encodingTarget, _ bool) func(answer) string { return wantCodes("served", is2xx) }

var acceptVariants = []acceptVariant{
	{"application/json", acceptServed},
	{"*/*", acceptServed},
	{"application/json;as=Table;v=v1;g=meta.k8s.io", func(tg encodingTarget, _ bool) func(answer) string {
		if tg.strict {
			return wantCodes("served", is2xx)
		}
		return nil
	}},
	{"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", nil},
	{"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", nil},
	{"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", nil},
	{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;v=v1;g=meta.k8s.io", nil},
	{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", nil},
	{"application/vnd.kubernetes.protobuf", func(tg encodingTarget, _ bool) func(answer) string {
		if tg.typed != nil {
			return wantCodes("served", is2xx)
		}
		return nil
	}},
	{"application/unknown", func(encodingTarget, bool) func(answer) string { return wantCodes("406", is(http.StatusNotAcceptable)) }},
}

func is2xx(code int) bool { return code >= 200 && code < 300 }

func is4xx(code int) bool { return code >= 400 && code < 500 }

func is(want int) func(int) bool { return func(code int) bool { return code == want } }

// decoded: served, or refused for what the body says (409, 422...), but
// not for its type.
func decoded(code int) bool {
	return is2xx(code) || (is4xx(code) && code != http.StatusUnsupportedMediaType)
}

// wantCodes is a verify of the status code, and of a piece of the message
// when says are given.
func wantCodes(what string, ok func(int) bool, says ...string) func(answer) string {
	return func(a answer) string {
		if !ok(a.code) {
			return fmt.Sprintf("answered %d, want %s", a.code, what)
		}
		for _, s := range says {
			if !strings.Contains(a.body, s) {
				return fmt.Sprintf("answered %d without naming %q", a.code, s)
			}
		}
		return ""
	}
}

// writeWant is what a create, update or patch must get: 415 naming a
// supported type when the type is refused; when it decodes, served for a
// valid body (for a create: served or 409 AlreadyExists), a 4xx for a
// malformed, mistyped or empty one, anything but 5xx for a truncated one
// (half a YAML document may still be one).
func writeWant(tg encodingTarget, acc acceptance, variant, supported string, create, patch bool) func(answer) string {
	unsupported := wantCodes("415 naming "+supported, is(http.StatusUnsupportedMediaType), supported)
	if supported == "" {
		unsupported = wantCodes("415", is(http.StatusUnsupportedMediaType))
	}
	switch acc {
	case refuses:
		return unsupported
	case mayDecode:
		return func(a answer) string {
			if a.code == http.StatusUnsupportedMediaType {
				return unsupported(a)
			}
			return writeWant(tg, decodes, variant, supported, create, patch)(a)
		}
	}
	switch variant {
	case "valid":
		// A custom resource's update needs a resourceVersion, as upstream.
		if create || !tg.strict || (tg.typed == nil && !patch) {
			return wantCodes("served or refused for the body, not its type", decoded)
		}
		return wantCodes("served", is2xx)
	case "malformed", "mistyped", "empty":
		return wantCodes("4xx other than 415", func(c int) bool { return is4xx(c) && c != http.StatusUnsupportedMediaType })
	}
	return nil
}

// encodingProbes is the cross product: every target, every body-bearing
// verb with every content type (and every patch type) and every body
// variant, and reads with every Accept variant.
func encodingProbes(targets []encodingTarget, victim *tenant) []probe {
	var probes []probe
	add := func(tg encodingTarget, what, method, path, query string, header http.Header, body []byte, verify func(answer) string) {
		h := http.Header{}
		for k, v := range tg.header {
			h[k] = v
		}
		for k, v := range header {
			h[k] = v
		}
		probes = append(probes, probe{
			what:   fmt.Sprintf("%s via %s: %s", tg.family, tg.entrance, what),
			method: method, base: tg.base, path: tg.prefix + path, query: query,
			header: h, body: body, cert: tg.cert, victim: victim, expect: anyAnswer, verify: verify,
		})
	}
	contentType := func(e bodyEncoding) http.Header {
		if e.missing {
			return http.Header{"Content-Type": nil}
		}
		return http.Header{"Content-Type": {e.contentType}}
	}
	object := tgObjectPath
	for _, tg := range targets {
		for _, e := range bodyEncodings {
			valid, mistyped := e.encode(tg), e.encode(mistypedOf(tg))
			for _, v := range bodyVariants {
				body := v.make(valid, e.malformed, mistyped)
				acc := e.accepted(tg)
				add(tg, fmt.Sprintf("create, Content-Type %s, %s body", e.name, v.name), http.MethodPost, tg.collection, "", contentType(e), body,
					writeWant(tg, acc, v.name, runtime.ContentTypeJSON, true, false))
				add(tg, fmt.Sprintf("update, Content-Type %s, %s body", e.name, v.name), http.MethodPut, object(tg), "", contentType(e), body,
					writeWant(tg, acc, v.name, runtime.ContentTypeJSON, false, false))
				// Any other type than a patch type is refused, whatever
				// the body.
				add(tg, fmt.Sprintf("patch, Content-Type %s, %s body", e.name, v.name), http.MethodPatch, object(tg), "", contentType(e), body,
					writeWant(tg, refuses, v.name, patchTypesNamed(tg), false, true))
			}
		}
		for _, pt := range patchTypes {
			valid := pt.body(tg)
			for _, v := range bodyVariants {
				add(tg, fmt.Sprintf("patch, Content-Type %s, %s body", pt.contentType, v.name), http.MethodPatch, object(tg), pt.query,
					http.Header{"Content-Type": {pt.contentType}}, v.make(valid, garbage, pt.mistyped(tg)),
					writeWant(tg, pt.accepted(tg), v.name, patchTypesNamed(tg), false, true))
			}
		}
		for _, av := range acceptVariants {
			reads := []struct {
				what, path, query string
				list              bool
			}{{"get", object(tg), "", false}, {"list", tg.collection, "", true}}
			if long {
				reads = append(reads, struct {
					what, path, query string
					list              bool
				}{"watch", tg.collection, "watch=1&timeoutSeconds=1", true})
			}
			for _, r := range reads {
				var verify func(answer) string
				if av.want != nil {
					verify = av.want(tg, r.list)
				}
				if r.what == "watch" && verify != nil && av.accept != "application/unknown" {
					verify = nil
				}
				add(tg, fmt.Sprintf("%s, Accept %s", r.what, av.accept), http.MethodGet, r.path, r.query, http.Header{"Accept": {av.accept}}, nil, verify)
			}
		}
	}
	return probes
}

// isCoreGroup tells whether tg is served below /api/v1. Custom resources
// there take strategic merge patches, as in kcp, which accepts them for
// every group client-go registers; those of the other groups here answer
// 415.
func isCoreGroup(tg encodingTarget) bool { return strings.HasPrefix(tg.collection, "/api/v1/") }

// patchTypesNamed is a patch type the 415 of a refused patch names: the
// custom resource handlers name them, as upstream's does; for built-in
// kinds go-restful refuses the type before the handler, with a bare
// "415: Unsupported Media Type", as in kube-apiserver.
func patchTypesNamed(tg encodingTarget) string {
	if tg.typed != nil {
		return ""
	}
	return "application/merge-patch+json"
}

func tgObjectPath(tg encodingTarget) string { return tg.collection + "/" + tg.name }

// TestEveryRequestEncodingGetsA4xxNotA5xx sends every resource family —
// built-in, CRD, core group CRD, bound by an APIBinding, the APIExport
// view, the cache server — creates, updates and patches in every content
// type (JSON, YAML, protobuf, CBOR, form, garbage, none) and patch type,
// with valid, malformed, truncated and empty bodies, and reads with every
// Accept variant (Table, partial metadata, protobuf, unknown), through the
// front-proxy and directly at the shard. No answer is a 5xx; an
// unsupported type gets 415 naming the supported ones, an unknown Accept
// 406, a protobuf built-in is decoded, a valid write is served.
func TestEveryRequestEncodingGetsA4xxNotA5xx(t *testing.T) {
	ctx := testContext(t)
	a, b := twoTenants(t)
	targets := encodingTargets(ctx, t, a)
	probes := encodingProbes(targets, b)
	start := time.Now()
	runAll(ctx, t, probes)
	t.Logf("%d targets, %d requests in %s", len(targets), len(probes), time.Since(start).Round(time.Millisecond))
}

const (
	encGroup      = "enc.example.io"
	encBoundGroup = "bound.enc.example.io"
	encExport     = "things-enc"
	encName       = "enc-probe"
	// encCacheShard is the shard name the cache server's probes write
	// replicas under: no shard has it, so no shard reads them.
	encCacheShard = "sec-encodings"
)

// encodingTargets sets up, in the tenant's workspace, a CRD, a core group
// CRD and a bound resource (an APIExport of the workspace bound there), an
// object of each and a ConfigMap, and a ClusterRole replica on the cache
// server, and returns every resource by every entrance.
func encodingTargets(ctx context.Context, t *testing.T, tn *tenant) []encodingTarget {
	t.Helper()
	token := bearer(sys.UserToken(tn.user))
	proxy := sys.URL(t)
	ws := "/clusters/" + tn.path.String()
	setUp := func(what, path, body string) {
		t.Helper()
		err := framework.Poll(ctx, 0, func(ctx context.Context) error {
			a := send(ctx, t, probe{method: http.MethodPost, base: proxy, path: ws + path, header: token, body: []byte(body)})
			if is2xx(a.code) || a.code == http.StatusConflict {
				return nil
			}
			return fmt.Errorf("%d: %s", a.code, truncate(a.body, 300))
		})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	schema := `{"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`
	crd := func(name, group, plural, kind string) string {
		return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + name + `"},"spec":{"group":"` + group + `",` +
			`"names":{"plural":"` + plural + `","singular":"` + strings.ToLower(kind) + `","kind":"` + kind + `","listKind":"` + kind + `List"},"scope":"Namespaced",` +
			`"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":` + schema + `}}]}}`
	}
	setUp("CRD gizmos", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd("gizmos."+encGroup, encGroup, "gizmos", "Gizmo"))
	setUp("core group CRD encgadgets", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd("encgadgets.core", "", "encgadgets", "EncGadget"))
	setUp("APIResourceSchema things", "/apis/apis.kcp.io/v1alpha1/apiresourceschemas",
		`{"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIResourceSchema","metadata":{"name":"v1.things.`+encBoundGroup+`"},"spec":{"group":"`+encBoundGroup+`",`+
			`"names":{"plural":"things","singular":"thing","kind":"Thing","listKind":"ThingList"},"scope":"Namespaced",`+
			`"versions":[{"name":"v1","served":true,"storage":true,"schema":`+schema+`}]}}`)
	setUp("APIExport things", "/apis/apis.kcp.io/v1alpha2/apiexports",
		`{"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIExport","metadata":{"name":"`+encExport+`"},"spec":{"resources":[{"group":"`+encBoundGroup+`","name":"things","schema":"v1.things.`+encBoundGroup+`","storage":{"crd":{}}}]}}`)
	setUp("APIBinding things", "/apis/apis.kcp.io/v1alpha2/apibindings",
		`{"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIBinding","metadata":{"name":"`+encExport+`"},"spec":{"reference":{"export":{"path":"`+tn.path.String()+`","name":"`+encExport+`"}}}}`)

	object := func(apiVersion, kind string, namespaced bool) map[string]interface{} {
		meta := map[string]interface{}{"name": encName, "labels": map[string]interface{}{"enc": "x"}}
		if namespaced {
			meta["namespace"] = "default"
		}
		return map[string]interface{}{"apiVersion": apiVersion, "kind": kind, "metadata": meta, "spec": map[string]interface{}{"size": "small"}}
	}
	configMap := object("v1", "ConfigMap", true)
	delete(configMap, "spec")
	configMap["data"] = map[string]interface{}{"v": "x"}
	typedConfigMap := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: encName, Namespace: "default", Labels: map[string]string{"enc": "x"}}, Data: map[string]string{"v": "x"}}

	shard := sys.ShardURL(t, tn.shard)
	byPath, byName := ws, "/clusters/"+tn.cluster.String()
	entrances := []struct{ name, base, prefix string }{{"front-proxy", proxy, byPath}, {"shard", shard, byName}}
	if long {
		entrances = append(entrances, struct{ name, base, prefix string }{"front-proxy by cluster name", proxy, byName})
	}
	var targets []encodingTarget
	for _, f := range []struct {
		family     string
		collection string
		object     map[string]interface{}
		typed      runtime.Object
	}{
		{"built-in configmaps", "/api/v1/namespaces/default/configmaps", configMap, typedConfigMap},
		{"CRD gizmos", "/apis/" + encGroup + "/v1/namespaces/default/gizmos", object(encGroup+"/v1", "Gizmo", true), nil},
		{"core group CRD encgadgets", "/api/v1/namespaces/default/encgadgets", object("v1", "EncGadget", true), nil},
		{"bound things", "/apis/" + encBoundGroup + "/v1/namespaces/default/things", object(encBoundGroup+"/v1", "Thing", true), nil},
	} {
		for _, in := range entrances {
			targets = append(targets, encodingTarget{family: f.family, entrance: in.name, base: in.base, prefix: in.prefix, header: token,
				collection: f.collection, name: encName, object: f.object, typed: f.typed, strict: true})
		}
	}
	// The APIExport view of the export, into the same workspace.
	view := "/services/apiexport/" + tn.cluster.String() + "/" + encExport + "/clusters/" + tn.cluster.String()
	things := "/apis/" + encBoundGroup + "/v1/namespaces/default/things"
	for _, in := range []struct{ name, base, prefix string }{
		{"front-proxy", proxy, "/shards/" + tn.shard + view},
		{"views of the shard", sys.ViewsURL(t, tn.shard), view},
	} {
		targets = append(targets, encodingTarget{family: "APIExport view of things", entrance: in.name, base: in.base, prefix: in.prefix, header: token,
			collection: things, name: encName, object: object(encBoundGroup+"/v1", "Thing", true), strict: true})
	}
	// The cache server, as a shard writes to it.
	clusterRole := object("rbac.authorization.k8s.io/v1", "ClusterRole", false)
	delete(clusterRole, "spec")
	clusterRole["rules"] = []interface{}{}
	targets = append(targets, encodingTarget{family: "cache server clusterroles", entrance: "cache server", base: sys.CacheURL(t),
		prefix: "/services/cache/shards/" + encCacheShard + "/clusters/" + tn.cluster.String(), cert: cacheWriter(t),
		collection: "/apis/rbac.authorization.k8s.io/v1/clusterroles", name: encName, object: clusterRole})

	// Every target serves its object before the probes start (CRDs and
	// bindings take a moment to be served everywhere).
	for _, tg := range targets {
		err := framework.Poll(ctx, 0, func(ctx context.Context) error {
			p := probe{method: http.MethodPost, base: tg.base, path: tg.prefix + tg.collection, header: tg.header, cert: tg.cert, body: jsonOf(tg)}
			if a := send(ctx, t, p); !is2xx(a.code) && a.code != http.StatusConflict {
				return fmt.Errorf("create: %d: %s", a.code, truncate(a.body, 300))
			}
			p.method, p.path, p.body = http.MethodGet, tg.prefix+tgObjectPath(tg), nil
			if a := send(ctx, t, p); !is2xx(a.code) {
				return fmt.Errorf("get: %d: %s", a.code, truncate(a.body, 300))
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s via %s serves %s: %v", tg.family, tg.entrance, encName, err)
		}
	}
	return targets
}

var cacheWriterCert struct {
	once sync.Once
	cert *tls.Certificate
	err  error
}

// cacheWriter is the client certificate of the cache server's writers
// (the shards' group).
func cacheWriter(t *testing.T) *tls.Certificate {
	t.Helper()
	cacheWriterCert.once.Do(func() {
		cfg, err := clientcmd.LoadFromFile(filepath.Join(sys.CacheDir(), cacheserver.WriterKubeconfigFile))
		if err != nil {
			cacheWriterCert.err = err
			return
		}
		for _, auth := range cfg.AuthInfos {
			cert, err := tls.X509KeyPair(auth.ClientCertificateData, auth.ClientKeyData)
			cacheWriterCert.cert, cacheWriterCert.err = &cert, err
			return
		}
		cacheWriterCert.err = fmt.Errorf("no user in %s", cacheserver.WriterKubeconfigFile)
	})
	if cacheWriterCert.err != nil {
		t.Fatalf("cache writer certificate: %v", cacheWriterCert.err)
	}
	return cacheWriterCert.cert
}
