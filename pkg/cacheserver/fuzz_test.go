package cacheserver

import (
	"net/http"
	"strings"
	"testing"

	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// FuzzParsePath checks that parsePath refuses with a 400 and that a scope
// it returns names a valid shard and cluster and is what the path spells.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{
		"/services/cache/shards/s1/clusters/c1/apis/apis.kcp.io/v1alpha2/apiexports",
		"/shards/s1/clusters/c1/apis", "/services/cache/shards/*/clusters/*/api",
		"/services/cache/shards/system:cache:server/clusters/system:admin",
		"/services/cache/shards/s1/clusters/root/", "/services/cache/shards/s1/clusters/root",
		"/healthz", "/services/cache/livez", "/metrics", "/services/cache", "/services/cache/",
		"/services/cache/shards//clusters/c1/apis", "/services/cache/shards/s1/clusters//apis",
		"/services/cache/shards/s1/clusters/root:org/apis", "/services/cache/shards/s1/clusters/c1/apis/../x",
		"/services/cache/shards/s1/clusters/c1/./x", "/services/cache/shards/s1/clusters/c1/metrics",
		"/services/cache/shards/s1/clusters/c1/clusters/c2/api", "/services/cache/shards/ü/clusters/c1",
		"/services/cache/shards/" + strings.Repeat("a", 62) + "/clusters/c1", "/", "", "*",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		sc, ok, err := parsePath(p)
		if err != nil {
			if status, isStatus := err.(apierrors.APIStatus); !isStatus || status.Status().Code != http.StatusBadRequest || ok {
				t.Fatalf("parsePath(%q) = ok %v, error %v: want a 400 API error", p, ok, err)
			}
			return
		}
		if !ok {
			return
		}
		if err := cacheclient.ValidateShard(string(sc.shard)); err != nil {
			t.Fatalf("parsePath(%q) returned shard %q: %v", p, sc.shard, err)
		}
		if !sc.cluster.IsWildcard() {
			if err := logicalcluster.ValidateName(string(sc.cluster)); err != nil {
				t.Fatalf("parsePath(%q) returned cluster %q: %v", p, sc.cluster, err)
			}
		}
		if !strings.HasPrefix(sc.rest, "/") {
			t.Fatalf("parsePath(%q) returned rest %q without a leading slash", p, sc.rest)
		}
		if sc.prefix+sc.rest != p && !(sc.rest == "/" && sc.prefix == p) {
			t.Fatalf("parsePath(%q) = prefix %q rest %q, which do not make the path", p, sc.prefix, sc.rest)
		}
		if built := cacheclient.Path(sc.shard, sc.cluster); sc.prefix != built && sc.prefix != strings.TrimPrefix(built, cacheclient.ServicePrefix) {
			t.Fatalf("parsePath(%q) took off %q, want %q", p, sc.prefix, built)
		}
		for _, seg := range strings.Split(sc.rest, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("parsePath(%q) let through rest %q with a %q segment", p, sc.rest, seg)
			}
		}
		again, ok, err := parsePath(cacheclient.Path(sc.shard, sc.cluster) + sc.rest)
		if err != nil || !ok || again.shard != sc.shard || again.cluster != sc.cluster || again.rest != sc.rest {
			t.Fatalf("parsePath of the rebuilt path = %+v %v %v, want %+v", again, ok, err, sc)
		}
	})
}

// replicaBodySeeds are request bodies for a replica: well-formed, with
// unknown and duplicate fields, malformed metadata, and other kinds.
var replicaBodySeeds = []string{
	`{"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIExport","metadata":{"name":"a","annotations":{"kcp.io/cluster":"root"}},"spec":{}}`,
	`{"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIExport","metadata":{"name":"a","unknown":1},"spec":{"x":[1,2.5,null,"s"]}}`,
	`{"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIExport","metadata":{"name":"a","name":"b"}}`,
	`{"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIExport","metadata":"x"}`,
	`{"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIExport","metadata":{"name":1,"labels":["a"],"creationTimestamp":"yesterday"}}`,
	`{"apiVersion":"apis.kcp.io/v1alpha2","kind":"APIExport","metadata":null}`,
	`{"apiVersion":"other.io/v1","kind":"Other","metadata":{"name":"a"}}`,
	`{"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Orphan"}`,
	`{"kind":"APIExport"}`, `{}`, `[]`, `null`, `"x"`, `1e400`, ``, `{`, `{"a":` + strings.Repeat("[", 200) + `}`,
	"apiVersion: apis.kcp.io/v1alpha2\nkind: APIExport\nmetadata:\n  name: a\n  name: b\n",
	"apiVersion: apis.kcp.io/v1alpha2\nkind: APIExport\nmetadata: &a\n  name: *a\n",
	"---\n- a\n- b\n", "a: !!binary aGVsbG8=\n", "\xff\xfe",
}

// decoderOf returns the decoder a handler builds for a body of info's
// media type: strict when field validation is Warn or Strict.
func decoderOf(ns runtime.NegotiatedSerializer, info runtime.SerializerInfo, strict bool, gv schema.GroupVersion) (runtime.Decoder, bool) {
	d := info.Serializer
	if strict {
		d = info.StrictSerializer
	}
	if d == nil {
		return nil, false
	}
	return ns.DecoderToVersion(d, gv), true
}

// FuzzReplicaDecoder decodes request bodies as the handlers of a replica
// kind do, for every media type: decoding never panics, and a decoded
// replica has metadata that decodes as ObjectMeta.
func FuzzReplicaDecoder(f *testing.F) {
	for _, s := range replicaBodySeeds {
		f.Add([]byte(s))
	}
	gvk := schema.GroupVersionKind{Group: "apis.kcp.io", Version: "v1alpha2", Kind: "APIExport"}
	gv := gvk.GroupVersion()
	ns := newReplicaSerializer(newTyper(parameterScheme(gv)), replicaConverter{gv: gv})
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, info := range ns.SupportedMediaTypes() {
			decoded := map[bool]runtime.Object{}
			failed := map[bool]bool{}
			for _, strict := range []bool{false, true} {
				decoder, ok := decoderOf(ns, info, strict, gv)
				if !ok {
					continue
				}
				defaults := gvk
				obj, _, err := decoder.Decode(body, &defaults, &unstructured.Unstructured{})
				if _, isStrict := runtime.AsStrictDecodingError(err); err != nil && !isStrict {
					failed[strict] = true
					continue
				}
				if obj == nil {
					t.Fatalf("%s (strict %v) returned no object and error %v", info.MediaType, strict, err)
				}
				if err == nil {
					decoded[strict] = obj
				}
				if u, ok := obj.(*unstructured.Unstructured); ok {
					if _, _, err := schemaobjectmeta.GetObjectMeta(u.Object, false); err != nil {
						t.Fatalf("%s (strict %v) decoded a replica with malformed metadata: %v", info.MediaType, strict, err)
					}
				}
			}
			if strictObj, ok := decoded[true]; ok {
				if failed[false] {
					t.Fatalf("%s: the strict decoder accepted what the lenient one refused", info.MediaType)
				}
				// YAML keys that differ (0 and "0") may become one JSON key,
				// and upstream's strict and lenient YAML conversions keep
				// different ones, as in kube-apiserver; JSON must agree.
				if lenient, ok := decoded[false]; ok && info.MediaType == runtime.ContentTypeJSON && !apiequality.Semantic.DeepEqual(strictObj, lenient) {
					t.Fatalf("%s: strict and lenient decoding differ:\n%#v\n%#v", info.MediaType, strictObj, lenient)
				}
			}
		}
	})
}
