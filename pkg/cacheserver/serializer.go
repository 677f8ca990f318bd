package cacheserver

import (
	"fmt"

	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/crdserverscheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/runtime/serializer/versioning"
)

// scheme holds the typed objects the server itself answers with (status,
// discovery, options); replicas are unstructured.
var scheme = runtime.NewScheme()

// codecs encode what scheme holds.
var codecs = serializer.NewCodecFactory(scheme)

func init() {
	unversioned := schema.GroupVersion{Version: "v1"}
	metav1.AddToGroupVersion(scheme, unversioned)
	scheme.AddUnversionedTypes(unversioned, &metav1.Status{}, &metav1.WatchEvent{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
}

// unstructuredCreator creates empty unstructured objects of a kind.
type unstructuredCreator struct{}

func (unstructuredCreator) New(kind schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kind)
	return u, nil
}

// parameterScheme holds the typed options of one group version, which
// requests decode besides the replicas.
func parameterScheme(gv schema.GroupVersion) *runtime.Scheme {
	s := runtime.NewScheme()
	s.AddUnversionedTypes(gv, &metav1.ListOptions{}, &metav1.GetOptions{}, &metav1.DeleteOptions{})
	return s
}

// newTyper types replicas by their apiVersion and kind and everything else
// by the parameter scheme.
func newTyper(parameters *runtime.Scheme) runtime.ObjectTyper {
	return replicaTyper{parameters: parameters, replicas: crdserverscheme.NewUnstructuredObjectTyper()}
}

// replicaTyper types unstructured objects by themselves and the rest by
// the parameter scheme.
type replicaTyper struct {
	parameters, replicas runtime.ObjectTyper
}

func (t replicaTyper) ObjectKinds(obj runtime.Object) ([]schema.GroupVersionKind, bool, error) {
	if _, ok := obj.(runtime.Unstructured); ok {
		return t.replicas.ObjectKinds(obj)
	}
	return t.parameters.ObjectKinds(obj)
}

func (t replicaTyper) Recognizes(gvk schema.GroupVersionKind) bool {
	return t.parameters.Recognizes(gvk) || t.replicas.Recognizes(gvk)
}

// replicaSerializer reads and writes replicas as JSON and YAML. Decoded
// objects get well-formed metadata; nothing else of them is looked at.
type replicaSerializer struct {
	converter runtime.ObjectConvertor
	types     []runtime.SerializerInfo
}

func newReplicaSerializer(typer runtime.ObjectTyper, converter runtime.ObjectConvertor) replicaSerializer {
	creator := unstructuredCreator{}
	jsonWith := func(o json.SerializerOptions) runtime.Serializer {
		return json.NewSerializerWithOptions(json.DefaultMetaFactory, creator, typer, o)
	}
	return replicaSerializer{
		converter: converter,
		types: []runtime.SerializerInfo{
			{
				MediaType: runtime.ContentTypeJSON, MediaTypeType: "application", MediaTypeSubType: "json", EncodesAsText: true,
				Serializer:       jsonWith(json.SerializerOptions{}),
				PrettySerializer: jsonWith(json.SerializerOptions{Pretty: true}),
				StrictSerializer: jsonWith(json.SerializerOptions{Strict: true}),
				StreamSerializer: &runtime.StreamSerializerInfo{EncodesAsText: true, Serializer: jsonWith(json.SerializerOptions{}), Framer: json.Framer},
			},
			{
				MediaType: runtime.ContentTypeYAML, MediaTypeType: "application", MediaTypeSubType: "yaml", EncodesAsText: true,
				Serializer:       jsonWith(json.SerializerOptions{Yaml: true}),
				StrictSerializer: jsonWith(json.SerializerOptions{Yaml: true, Strict: true}),
			},
		},
	}
}

func (s replicaSerializer) SupportedMediaTypes() []runtime.SerializerInfo { return s.types }

func (s replicaSerializer) EncoderForVersion(encoder runtime.Encoder, gv runtime.GroupVersioner) runtime.Encoder {
	return versioning.NewCodec(encoder, nil, s.converter, scheme, scheme, scheme, gv, nil, "cacheserver")
}

func (s replicaSerializer) DecoderToVersion(decoder runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	return versioning.NewCodec(nil, metadataCoercingDecoder{delegate: decoder}, runtime.UnsafeObjectConvertor(scheme), scheme, scheme, scheme, nil, gv, "cacheserver")
}

// metadataCoercingDecoder makes the metadata of a decoded replica what
// ObjectMeta would decode to, and refuses metadata that is not ObjectMeta.
type metadataCoercingDecoder struct {
	delegate runtime.Decoder
}

func (d metadataCoercingDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := d.delegate.Decode(data, defaults, into)
	if obj == nil {
		return obj, gvk, err
	}
	// Strict decoding reports unknown fields with the object: the handler
	// decides whether they fail the request.
	if _, strict := runtime.AsStrictDecodingError(err); err != nil && !strict {
		return nil, gvk, err
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		objectMeta, found, metaErr := schemaobjectmeta.GetObjectMeta(u.Object, false)
		if metaErr != nil {
			return nil, gvk, metaErr
		}
		if found {
			if metaErr := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); metaErr != nil {
				return nil, gvk, metaErr
			}
		}
	}
	return obj, gvk, err
}

// replicaConverter converts the replicas of one kind, which are served in
// one version and never change it; typed objects (options, status) convert
// through the scheme.
type replicaConverter struct {
	gv         schema.GroupVersion
	namespaced bool
}

func (c replicaConverter) Convert(in, out, context interface{}) error {
	uIn, inOK := in.(*unstructured.Unstructured)
	uOut, outOK := out.(*unstructured.Unstructured)
	if !inOK || !outOK {
		return scheme.Convert(in, out, context)
	}
	if gv := uIn.GroupVersionKind().GroupVersion(); gv != c.gv {
		return fmt.Errorf("%s is served as %s only", uIn.GroupVersionKind().Kind, c.gv)
	}
	uOut.SetUnstructuredContent(runtime.DeepCopyJSON(uIn.UnstructuredContent()))
	return nil
}

// ConvertToVersion returns a replica unchanged when the target is its one
// version. It never modifies in, so it is safe without a copy.
func (c replicaConverter) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	if _, ok := in.(runtime.Unstructured); !ok {
		return scheme.ConvertToVersion(in, target)
	}
	from := in.GetObjectKind().GroupVersionKind()
	to, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{from})
	if !ok || to.GroupVersion() != c.gv || from.GroupVersion() != c.gv {
		return nil, fmt.Errorf("%s is served as %s only, not converted to %s", from, c.gv, target.Identifier())
	}
	return in, nil
}

func (c replicaConverter) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	switch {
	case label == "metadata.name", c.namespaced && label == "metadata.namespace":
		return label, value, nil
	}
	return "", "", fmt.Errorf("field label not supported: %s", label)
}
