package apiextensions

import (
	"fmt"

	upstream "k8s.io/apiextensions-apiserver/pkg/apiserver"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/versioning"
	"k8s.io/apiserver/pkg/registry/generic"
)

// schemas holds the structural schema of every version of one CRD kind.
type schemas struct {
	byVersion             map[string]*structuralschema.Structural
	groupKind             schema.GroupKind
	preserveUnknownFields bool
}

// unstructuredCreator creates empty unstructured objects of a kind.
type unstructuredCreator struct{}

func (unstructuredCreator) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u, nil
}

func newTyper(parameterScheme *runtime.Scheme) upstream.UnstructuredObjectTyper {
	return upstream.UnstructuredObjectTyper{
		Delegate:          parameterScheme,
		UnstructuredTyper: crdserverscheme.NewUnstructuredObjectTyper(),
	}
}

// schemaDefaulter applies the structural defaults of the CRD to its objects
// and delegates everything else.
type schemaDefaulter struct {
	delegate runtime.ObjectDefaulter
	schemas  schemas
}

func (d schemaDefaulter) Default(in runtime.Object) {
	u, ok := in.(runtime.Unstructured)
	if !ok || u.GetObjectKind().GroupVersionKind().GroupKind() != d.schemas.groupKind {
		d.delegate.Default(in)
		return
	}
	structuraldefaulting.Default(u.UnstructuredContent(), d.schemas.byVersion[u.GetObjectKind().GroupVersionKind().Version])
}

// negotiatedSerializer serves custom resources as JSON, YAML and (for the
// few typed objects such as Status) protobuf, coercing decoded objects to
// the schema.
type negotiatedSerializer struct {
	typer     runtime.ObjectTyper
	converter runtime.ObjectConvertor
	schemas   schemas
	types     []runtime.SerializerInfo
}

func newNegotiatedSerializer(typer runtime.ObjectTyper, converter runtime.ObjectConvertor, s schemas) negotiatedSerializer {
	creator := unstructuredCreator{}
	jsonOpts := func(o json.SerializerOptions) runtime.Serializer {
		return json.NewSerializerWithOptions(json.DefaultMetaFactory, creator, typer, o)
	}
	return negotiatedSerializer{
		typer:     typer,
		converter: converter,
		schemas:   s,
		types: []runtime.SerializerInfo{
			{
				MediaType:        "application/json",
				MediaTypeType:    "application",
				MediaTypeSubType: "json",
				EncodesAsText:    true,
				Serializer:       jsonOpts(json.SerializerOptions{StreamingCollectionsEncoding: true}),
				PrettySerializer: jsonOpts(json.SerializerOptions{Pretty: true}),
				StrictSerializer: jsonOpts(json.SerializerOptions{Strict: true, StreamingCollectionsEncoding: true}),
				StreamSerializer: &runtime.StreamSerializerInfo{
					EncodesAsText: true,
					Serializer:    jsonOpts(json.SerializerOptions{}),
					Framer:        json.Framer,
				},
			},
			{
				MediaType:        "application/yaml",
				MediaTypeType:    "application",
				MediaTypeSubType: "yaml",
				EncodesAsText:    true,
				Serializer:       jsonOpts(json.SerializerOptions{Yaml: true}),
				StrictSerializer: jsonOpts(json.SerializerOptions{Yaml: true, Strict: true}),
			},
			{
				MediaType:        "application/vnd.kubernetes.protobuf",
				MediaTypeType:    "application",
				MediaTypeSubType: "vnd.kubernetes.protobuf",
				Serializer:       protobuf.NewSerializerWithOptions(creator, typer, protobuf.SerializerOptions{StreamingCollectionsEncoding: true}),
				StreamSerializer: &runtime.StreamSerializerInfo{
					Serializer: protobuf.NewRawSerializer(creator, typer),
					Framer:     protobuf.LengthDelimitedFramer,
				},
			},
		},
	}
}

func (s negotiatedSerializer) SupportedMediaTypes() []runtime.SerializerInfo { return s.types }

func (s negotiatedSerializer) EncoderForVersion(encoder runtime.Encoder, gv runtime.GroupVersioner) runtime.Encoder {
	return versioning.NewCodec(encoder, nil, s.converter, upstream.Scheme, upstream.Scheme, upstream.Scheme, gv, nil, "shardplaneCRNegotiatedSerializer")
}

func (s negotiatedSerializer) DecoderToVersion(decoder runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	if decoder == nil {
		// A media type custom resources are only encoded to (protobuf has no
		// strict decoder): the handler refuses such bodies first, this is
		// the backstop.
		return noDecoder{}
	}
	strict := false
	if js, ok := decoder.(*json.Serializer); ok {
		strict = js.IsStrict()
	}
	d := coercingDecoder{delegate: decoder, coercer: schemaCoercer{schemas: s.schemas, returnUnknownFieldPaths: strict}}
	return versioning.NewCodec(nil, d, runtime.UnsafeObjectConvertor(upstream.Scheme), upstream.Scheme, upstream.Scheme,
		schemaDefaulter{delegate: upstream.Scheme, schemas: s.schemas}, nil, gv, "shardplaneCRNegotiatedSerializer")
}

// noDecoder decodes nothing.
type noDecoder struct{}

func (noDecoder) Decode([]byte, *schema.GroupVersionKind, runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	return nil, nil, fmt.Errorf("custom resources are not decoded from this media type")
}

// storageCodecGetter wraps the storage codec of custom resources so that
// objects read from etcd are coerced to the schema and converted between
// the stored and the requested version.
type storageCodecGetter struct {
	generic.RESTOptionsGetter
	converter     runtime.ObjectConvertor
	encodeVersion schema.GroupVersion
	decodeVersion schema.GroupVersion
	schemas       schemas
}

func (g storageCodecGetter) GetRESTOptions(gr schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.RESTOptionsGetter.GetRESTOptions(gr, nil)
	if err != nil {
		return opts, err
	}
	d := coercingDecoder{delegate: opts.StorageConfig.Codec, coercer: schemaCoercer{
		// Old objects may predate ObjectMeta validation: drop what is invalid.
		dropInvalidMetadata: true,
		repairGeneration:    true,
		schemas:             g.schemas,
	}}
	c := coercingConverter{delegate: g.converter, coercer: schemaCoercer{schemas: g.schemas}}
	opts.StorageConfig.Codec = versioning.NewCodec(opts.StorageConfig.Codec, d, c, unstructuredCreator{},
		crdserverscheme.NewUnstructuredObjectTyper(), schemaDefaulter{delegate: upstream.Scheme, schemas: g.schemas},
		g.encodeVersion, g.decodeVersion, "shardplaneCRStorage")
	return opts, nil
}

// coercingDecoder applies the schema coercer after decoding.
type coercingDecoder struct {
	delegate runtime.Decoder
	coercer  schemaCoercer
}

func (d coercingDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	var strictErrs []error
	obj, gvk, err := d.delegate.Decode(data, defaults, into)
	if err != nil {
		se, ok := runtime.AsStrictDecodingError(err)
		if !ok || obj == nil {
			return nil, gvk, err
		}
		strictErrs = se.Errors()
	}
	var unknown []string
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if unknown, err = d.coercer.apply(u); err != nil {
			return nil, gvk, err
		}
	}
	if d.coercer.returnUnknownFieldPaths && (len(strictErrs) > 0 || len(unknown) > 0) {
		for _, f := range unknown {
			strictErrs = append(strictErrs, fmt.Errorf(`unknown field "%s"`, f))
		}
		return obj, gvk, runtime.NewStrictDecodingError(strictErrs)
	}
	return obj, gvk, nil
}

// coercingConverter applies the schema coercer after conversion.
type coercingConverter struct {
	delegate runtime.ObjectConvertor
	coercer  schemaCoercer
}

func (c coercingConverter) Convert(in, out, context interface{}) error {
	if err := c.delegate.Convert(in, out, context); err != nil {
		return err
	}
	if u, ok := out.(*unstructured.Unstructured); ok {
		if _, err := c.coercer.apply(u); err != nil {
			return err
		}
	}
	return nil
}

func (c coercingConverter) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	out, err := c.delegate.ConvertToVersion(in, gv)
	if err != nil {
		return nil, err
	}
	if u, ok := out.(*unstructured.Unstructured); ok {
		if _, err := c.coercer.apply(u); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c coercingConverter) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return c.delegate.ConvertFieldLabel(gvk, label, value)
}

// schemaCoercer does for unstructured objects what decoding into Go structs
// does for built-in types: validate and prune ObjectMeta, prune unknown
// fields following the structural schema, and drop nulls that the schema
// does not allow.
type schemaCoercer struct {
	dropInvalidMetadata     bool
	repairGeneration        bool
	returnUnknownFieldPaths bool
	schemas                 schemas
}

func (c schemaCoercer) apply(u *unstructured.Unstructured) ([]string, error) {
	kind, foundKind, err := unstructured.NestedString(u.Object, "kind")
	if err != nil {
		return nil, err
	}
	apiVersion, foundAPIVersion, err := unstructured.NestedString(u.Object, "apiVersion")
	if err != nil {
		return nil, err
	}
	objectMeta, foundObjectMeta, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{
		DropMalformedFields:     c.dropInvalidMetadata,
		ReturnUnknownFieldPaths: c.returnUnknownFieldPaths,
	})
	if err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	// Other objects, such as DeleteOptions, pass here too.
	if gv.Group == c.schemas.groupKind.Group && kind == c.schemas.groupKind.Kind {
		s := c.schemas.byVersion[gv.Version]
		if !c.schemas.preserveUnknownFields {
			opts := structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: c.returnUnknownFieldPaths}
			unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, s, true, opts)...)
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, s)
		}
		err, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, s, false, schemaobjectmeta.CoerceOptions{
			DropInvalidFields:       c.dropInvalidMetadata,
			ReturnUnknownFieldPaths: c.returnUnknownFieldPaths,
		})
		if err != nil {
			return nil, err
		}
		unknown = append(unknown, paths...)
		if c.repairGeneration && objectMeta.Generation == 0 {
			objectMeta.Generation = 1
		}
	}
	if foundKind {
		u.SetKind(kind)
	}
	if foundAPIVersion {
		u.SetAPIVersion(apiVersion)
	}
	if foundObjectMeta {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return nil, err
		}
	}
	return unknown, nil
}
