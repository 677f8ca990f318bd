package listencoder

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
)

// jsonEncoders returns upstream's compact JSON encoder (with streaming
// lists, as the API groups use it, or without) and the same wrapped.
func jsonEncoders(t *testing.T, gv schema.GroupVersion, streaming bool) (upstream, parallel kruntime.Encoder) {
	t.Helper()
	var opts []serializer.CodecFactoryOptionsMutator
	if streaming {
		opts = append(opts, serializer.WithStreamingCollectionEncodingToJSON())
	}
	codecs := serializer.NewCodecFactory(scheme.Scheme, opts...)
	find := func(ns kruntime.NegotiatedSerializer) kruntime.Encoder {
		for _, info := range ns.SupportedMediaTypes() {
			if info.MediaType == kruntime.ContentTypeJSON {
				return ns.EncoderForVersion(info.Serializer, gv)
			}
		}
		t.Fatal("no JSON serializer")
		return nil
	}
	return find(codecs), find(WithParallelLists(codecs))
}

func encodeJSON(t *testing.T, e kruntime.Encoder, obj kruntime.Object) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := e.Encode(obj, &b); err != nil {
		t.Fatalf("encode: %v", err)
	}
	return b.Bytes()
}

func TestJSONListsEncodeToUpstreamsBytes(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		upstream, parallel := jsonEncoders(t, corev1.SchemeGroupVersion, streaming)
		for _, n := range []int{0, 1, minItems - 1, minItems, minItems + 1, chunkItems*7 + 3, 5000} {
			want := encodeJSON(t, upstream, configMaps(n))
			got := encodeJSON(t, parallel, configMaps(n))
			if !bytes.Equal(got, want) {
				t.Fatalf("streaming %v, %d items: %d bytes differ from upstream's %d", streaming, n, len(got), len(want))
			}
		}
		// HTML-escaped characters, an empty list meta and another kind.
		roles := &rbacv1.ClusterRoleList{}
		for i := range 2 * minItems {
			roles.Items = append(roles.Items, rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i), Annotations: map[string]string{"a": "<b>&</b>"}},
				Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, Resources: []string{"configmaps"}}}})
		}
		up, par := jsonEncoders(t, rbacv1.SchemeGroupVersion, streaming)
		if !bytes.Equal(encodeJSON(t, par, roles), encodeJSON(t, up, roles)) {
			t.Errorf("streaming %v: ClusterRoleList differs from upstream's bytes", streaming)
		}
		one := &configMaps(1).Items[0]
		if !bytes.Equal(encodeJSON(t, parallel, one), encodeJSON(t, upstream, one)) {
			t.Errorf("streaming %v: a single ConfigMap differs from upstream's bytes", streaming)
		}
	}
}

func TestJSONWriteErrorIsReturned(t *testing.T) {
	_, parallel := jsonEncoders(t, corev1.SchemeGroupVersion, true)
	if err := parallel.Encode(configMaps(20*chunkItems), &failAfter{n: 50_000}); !errors.Is(err, errClosed) {
		t.Fatalf("encode into a failing writer: %v, want its error", err)
	}
}
