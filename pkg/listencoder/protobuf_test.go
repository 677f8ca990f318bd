package listencoder

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
)

func configMaps(n int) *corev1.ConfigMapList {
	r := rand.New(rand.NewSource(int64(n)))
	l := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "12345", Continue: "next"}}
	for i := range n {
		cm := corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("cm-%d", i), Namespace: "default", UID: "u", ResourceVersion: fmt.Sprint(i),
				Annotations:       map[string]string{"kcp.io/cluster": fmt.Sprintf("c%d", i%37)},
				CreationTimestamp: metav1.NewTime(time.Unix(1700000000+int64(i), 0)),
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "bench", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
					FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{".":{},"f:k":{}}}`)}}},
			},
			Data: map[string]string{"k": strings.Repeat("v", r.Intn(300))},
		}
		if i%3 == 0 {
			cm.Labels = map[string]string{"a": "b", "fill": "true"}
		}
		if i%500 == 7 {
			cm.Data["big"] = strings.Repeat("x", 100_000) // an item larger than a varint byte or two
			cm.BinaryData = map[string][]byte{"bin": {0, 1, 2}}
		}
		l.Items = append(l.Items, cm)
	}
	return l
}

// encoders returns upstream's protobuf encoder (with streaming lists, as
// the API groups use it) and the same wrapped, both for core/v1.
func encoders(t *testing.T) (upstream, parallel kruntime.Encoder, codecs serializer.CodecFactory) {
	t.Helper()
	codecs = serializer.NewCodecFactory(scheme.Scheme, serializer.WithStreamingCollectionEncodingToProtobuf())
	find := func(ns kruntime.NegotiatedSerializer) kruntime.Encoder {
		for _, info := range ns.SupportedMediaTypes() {
			if info.MediaType == kruntime.ContentTypeProtobuf {
				return ns.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
			}
		}
		t.Fatal("no protobuf serializer")
		return nil
	}
	return find(codecs), find(WithParallelLists(codecs)), codecs
}

func encode(t *testing.T, e kruntime.Encoder, obj kruntime.Object) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := e.(kruntime.EncoderWithAllocator).EncodeWithAllocator(obj, &b, &kruntime.Allocator{}); err != nil {
		t.Fatalf("encode: %v", err)
	}
	return b.Bytes()
}

func TestListsEncodeToUpstreamsBytes(t *testing.T) {
	upstream, parallel, codecs := encoders(t)
	for _, n := range []int{0, 1, minItems - 1, minItems, minItems + 1, chunkItems*7 + 3, 5000} {
		want := encode(t, upstream, configMaps(n))
		got := encode(t, parallel, configMaps(n))
		if !bytes.Equal(got, want) {
			t.Fatalf("%d items: %d bytes differ from upstream's %d", n, len(got), len(want))
		}
		decoded := &corev1.ConfigMapList{}
		if _, _, err := codecs.UniversalDeserializer().Decode(got, nil, decoded); err != nil {
			t.Fatalf("%d items: decode: %v", n, err)
		}
		orig := configMaps(n)
		if !apiequality.Semantic.DeepEqual(decoded.Items, orig.Items) && n > 0 {
			t.Fatalf("%d items: decoded items differ", n)
		}
	}
	// Another kind, and an object that is not a list.
	roles := &rbacv1.ClusterRoleList{}
	for i := range 2 * minItems {
		roles.Items = append(roles.Items, rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i)},
			Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, Resources: []string{"configmaps"}}}})
	}
	rbacCodecs := serializer.NewCodecFactory(scheme.Scheme, serializer.WithStreamingCollectionEncodingToProtobuf())
	var up, par kruntime.Encoder
	for _, info := range rbacCodecs.SupportedMediaTypes() {
		if info.MediaType == kruntime.ContentTypeProtobuf {
			up = rbacCodecs.EncoderForVersion(info.Serializer, rbacv1.SchemeGroupVersion)
		}
	}
	for _, info := range WithParallelLists(rbacCodecs).SupportedMediaTypes() {
		if info.MediaType == kruntime.ContentTypeProtobuf {
			par = rbacCodecs.EncoderForVersion(info.Serializer, rbacv1.SchemeGroupVersion)
		}
	}
	if !bytes.Equal(encode(t, par, roles), encode(t, up, roles)) {
		t.Error("ClusterRoleList differs from upstream's bytes")
	}
	one := &configMaps(1).Items[0]
	if !bytes.Equal(encode(t, parallel, one), encode(t, upstream, one)) {
		t.Error("a single ConfigMap differs from upstream's bytes")
	}
}

func TestOnlyProtobufAndCompactJSONAreWrapped(t *testing.T) {
	codecs := serializer.NewCodecFactory(scheme.Scheme)
	wrapped := WithParallelLists(codecs).SupportedMediaTypes()
	for i, info := range codecs.SupportedMediaTypes() {
		_, proto := wrapped[i].Serializer.(*listSerializer)
		_, json := wrapped[i].Serializer.(*jsonSerializer)
		if proto != (info.MediaType == kruntime.ContentTypeProtobuf) || json != (info.MediaType == kruntime.ContentTypeJSON) {
			t.Errorf("%s: wrapped for protobuf %v, for JSON %v", info.MediaType, proto, json)
		}
		if wrapped[i].PrettySerializer != info.PrettySerializer || wrapped[i].StreamSerializer != info.StreamSerializer {
			t.Errorf("%s: pretty or stream serializer replaced", info.MediaType)
		}
		if wrapped[i].Serializer.Identifier() != info.Serializer.Identifier() {
			t.Errorf("%s: identifier %q, want upstream's %q", info.MediaType, wrapped[i].Serializer.Identifier(), info.Serializer.Identifier())
		}
	}
}

// failAfter fails writes once n bytes were written.
type failAfter struct{ n, written int }

var errClosed = errors.New("connection closed")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.written+len(p) > f.n {
		return 0, errClosed
	}
	f.written += len(p)
	return len(p), nil
}

func TestWriteErrorStopsTheWorkers(t *testing.T) {
	_, parallel, _ := encoders(t)
	before := runtime.NumGoroutine()
	l := configMaps(20 * chunkItems)
	err := parallel.(kruntime.EncoderWithAllocator).EncodeWithAllocator(l, &failAfter{n: 50_000}, &kruntime.Allocator{})
	if !errors.Is(err, errClosed) {
		t.Fatalf("encode into a failing writer: %v, want its error", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines left behind", n-before)
	}
}
