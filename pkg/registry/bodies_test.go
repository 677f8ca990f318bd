package registry

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
)

func TestWithDecodableBodiesRefusesProtobufForKindsWithoutIt(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, tenancyv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	h := WithDecodableBodies(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) }),
		scheme, serializer.NewCodecFactory(scheme))
	for _, c := range []struct {
		group, version, verb, contentType string
		want                              int
	}{
		{"tenancy.kcp.io", "v1alpha1", "create", "application/vnd.kubernetes.protobuf", http.StatusUnsupportedMediaType},
		{"tenancy.kcp.io", "v1alpha1", "update", "application/vnd.kubernetes.protobuf", http.StatusUnsupportedMediaType},
		{"tenancy.kcp.io", "v1alpha1", "create", "application/cbor", http.StatusUnsupportedMediaType},
		{"tenancy.kcp.io", "v1alpha1", "create", "application/json", http.StatusCreated},
		{"tenancy.kcp.io", "v1alpha1", "create", "application/yaml", http.StatusCreated},
		{"tenancy.kcp.io", "v1alpha1", "create", "", http.StatusCreated},
		// Patch bodies are patch types, checked by the patch handler.
		{"tenancy.kcp.io", "v1alpha1", "patch", "application/vnd.kubernetes.protobuf", http.StatusCreated},
		// Kubernetes' kinds decode protobuf.
		{"", "v1", "create", "application/vnd.kubernetes.protobuf", http.StatusCreated},
	} {
		req := httptest.NewRequest(http.MethodPost, "/apis/x", strings.NewReader("k8s\x00"))
		if c.contentType != "" {
			req.Header.Set("Content-Type", c.contentType)
		}
		req = req.WithContext(apirequest.WithRequestInfo(req.Context(), &apirequest.RequestInfo{
			IsResourceRequest: true, Verb: c.verb, APIGroup: c.group, APIVersion: c.version, Resource: "things",
		}))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		body, _ := io.ReadAll(w.Body)
		if w.Code != c.want {
			t.Errorf("%s %s/%s with %q: %d, want %d: %s", c.verb, c.group, c.version, c.contentType, w.Code, c.want, body)
		}
		if c.want == http.StatusUnsupportedMediaType && (!strings.Contains(string(body), "application/json, application/yaml") || strings.Contains(string(body), "protobuf")) {
			t.Errorf("%s %s/%s with %q: the answer does not name exactly JSON and YAML: %s", c.verb, c.group, c.version, c.contentType, body)
		}
	}
}
