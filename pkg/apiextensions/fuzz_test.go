package apiextensions

import (
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// fuzzCRD is a CRD whose schema has what the coercer acts on: pruned and
// preserved fields, defaults, nullable and non-nullable fields, an
// int-or-string, maps, lists and an embedded resource.
func fuzzCRD() *v1.CustomResourceDefinition {
	crd := testCRD("x.io", "widgets", []string{"v1", "v2"}, v1.Established)
	crd.Spec.Conversion = &v1.CustomResourceConversion{Strategy: v1.NoneConverter}
	str := v1.JSONSchemaProps{Type: "string"}
	schemaProps := &v1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]v1.JSONSchemaProps{
			"spec": {
				Type: "object",
				Properties: map[string]v1.JSONSchemaProps{
					"size":     {Type: "integer", Default: &v1.JSON{Raw: []byte(`3`)}},
					"ratio":    {Type: "number"},
					"name":     str,
					"nullable": {Type: "string", Nullable: true},
					"port":     {XIntOrString: true},
					"labels":   {Type: "object", AdditionalProperties: &v1.JSONSchemaPropsOrBool{Allows: true, Schema: &str}},
					"items": {Type: "array", Items: &v1.JSONSchemaPropsOrArray{Schema: &v1.JSONSchemaProps{
						Type:       "object",
						Properties: map[string]v1.JSONSchemaProps{"key": str, "value": str},
					}}},
					"free":     {Type: "object", XPreserveUnknownFields: boolPtr(true)},
					"template": {Type: "object", XEmbeddedResource: true, XPreserveUnknownFields: boolPtr(true)},
				},
			},
			"status": {Type: "object", Properties: map[string]v1.JSONSchemaProps{"phase": str}},
		},
	}
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Schema = &v1.CustomResourceValidation{OpenAPIV3Schema: schemaProps.DeepCopy()}
	}
	return crd
}

func boolPtr(b bool) *bool { return &b }

// customResourceBodySeeds are request bodies for a widget: well-formed,
// with unknown and duplicate fields, wrong types, other versions and
// kinds, and malformed documents.
var customResourceBodySeeds = []string{
	`{"apiVersion":"x.io/v1","kind":"Kwidgets","metadata":{"name":"a","namespace":"ns","labels":{"a":"b"}},"spec":{"size":1,"name":"n","port":"http","items":[{"key":"k","value":"v"}],"free":{"any":[1,{"x":null}]},"template":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","unknown":1}}}}`,
	`{"apiVersion":"x.io/v1","kind":"Kwidgets","metadata":{"name":"a","unknown":true},"spec":{"unknown":1,"size":null,"nullable":null,"name":null},"extra":{}}`,
	`{"apiVersion":"x.io/v1","kind":"Kwidgets","metadata":{"name":"a","name":"b"},"spec":{"size":1,"size":2}}`,
	`{"apiVersion":"x.io/v1","kind":"Kwidgets","metadata":{"name":1,"labels":["a"],"creationTimestamp":"yesterday","generation":"x"}}`,
	`{"apiVersion":"x.io/v1","kind":"Kwidgets","metadata":"x","spec":"y","status":[]}`,
	`{"apiVersion":"x.io/v1","kind":"Kwidgets","spec":{"template":{"metadata":"x"},"ratio":1e400,"size":1.5,"port":-9223372036854775809}}`,
	`{"apiVersion":"x.io/v2","kind":"Kwidgets","metadata":{"name":"a"},"spec":{"size":1}}`,
	`{"apiVersion":"x.io/v3","kind":"Kwidgets"}`,
	`{"apiVersion":"x.io/v1","kind":"Other"}`,
	`{"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Orphan"}`,
	`{"apiVersion":"/","kind":""}`, `{"apiVersion":1}`, `{"kind":"Kwidgets"}`,
	`{}`, `[]`, `null`, `"x"`, ``, `{`, `{"spec":` + strings.Repeat(`{"free":`, 100) + `{}` + strings.Repeat(`}`, 101),
	"apiVersion: x.io/v1\nkind: Kwidgets\nmetadata:\n  name: a\n  name: b\nspec:\n  size: 0x10\n  name: yes\n",
	"apiVersion: x.io/v1\nkind: Kwidgets\nmetadata: &m\n  name: a\nspec:\n  free: *m\n",
	"apiVersion: x.io/v1\nkind: Kwidgets\nspec:\n  size: .inf\n  port: ~\n  labels: {? [a]: b}\n",
	"---\n- a\n---\nb: c\n", "a: !!binary aGVsbG8=\n", "\xff\xfe",
	"k8s\x00", "k8s\x00\x0a\x0b\x0a\x07x.io/v1\x12\x00",
}

// FuzzCustomResourceDecoder decodes request bodies as the create, update
// and patch handlers of a custom resource do, for every media type and
// both field validation modes that have a serializer: decoding never
// panics, errors are errors, strict decoding is never more lenient than
// the default, and a decoded widget holds nothing its schema prunes.
func FuzzCustomResourceDecoder(f *testing.F) {
	for _, s := range customResourceBodySeeds {
		f.Add([]byte(s))
	}
	crd := fuzzCRD()
	st, err := newSpecState(crd, func(*v1.CustomResourceDefinition) (map[string]*spec.Schema, error) { return nil, nil })
	if err != nil {
		f.Fatal(err)
	}
	factory, err := conversion.NewCRConverterFactory(nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	converter, _, err := factory.NewConverter(crd)
	if err != nil {
		f.Fatal(err)
	}
	gvk := schema.GroupVersionKind{Group: "x.io", Version: "v1", Kind: "Kwidgets"}
	ns := newNegotiatedSerializer(st.versions["v1"].typer, converter, st.schemas)
	hubSchema := st.schemas.byVersion["v1"]
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, info := range ns.SupportedMediaTypes() {
			decoded := map[bool]runtime.Object{}
			failed := map[bool]bool{}
			for _, strict := range []bool{false, true} {
				d := info.Serializer
				if strict {
					d = info.StrictSerializer
				}
				// The protobuf entry has no strict serializer: a decoder
				// built from nil must refuse, not panic.
				defaults := gvk
				obj, _, err := ns.DecoderToVersion(d, gvk.GroupVersion()).Decode(body, &defaults, &unstructured.Unstructured{})
				if _, isStrict := runtime.AsStrictDecodingError(err); err != nil && (!isStrict || obj == nil) {
					failed[strict] = true
					continue
				}
				if obj == nil {
					t.Fatalf("%s (strict %v) returned neither an object nor an error", info.MediaType, strict)
				}
				if err == nil {
					decoded[strict] = obj
				}
				if u, ok := obj.(*unstructured.Unstructured); ok && u.GroupVersionKind() == gvk {
					pruned := u.DeepCopy()
					paths := structuralpruning.PruneWithOptions(pruned.Object, hubSchema, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
					if len(paths) > 0 {
						t.Fatalf("%s (strict %v) decoded a widget with fields its schema prunes: %v", info.MediaType, strict, paths)
					}
				}
			}
			if strictObj, ok := decoded[true]; ok {
				if failed[false] {
					t.Fatalf("%s: the strict decoder accepted what the default one refused", info.MediaType)
				}
				if lenient, ok := decoded[false]; ok && !apiequality.Semantic.DeepEqual(strictObj, lenient) {
					t.Fatalf("%s: strict and default decoding differ:\n%#v\n%#v", info.MediaType, strictObj, lenient)
				}
			}
		}
	})
}
