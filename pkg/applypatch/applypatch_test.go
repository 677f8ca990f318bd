package applypatch

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
)

func TestApplyPatchesTheSchemaCannotTypeAre400(t *testing.T) {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	codecs := serializer.NewCodecFactory(scheme)
	answer := func(err error) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if err == nil {
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write([]byte(`{"kind":"ConfigMap"}`))
				return
			}
			responsewriters.ErrorNegotiated(err, codecs, schema.GroupVersion{Version: "v1"}, w, req)
		})
	}
	schemaErr := errors.New("failed to create typed patch object (/x; /v1, Kind=ConfigMap): .metadata: expected map, got &{x}")
	for _, c := range []struct {
		what, contentType, accept string
		err                       error
		want                      int
	}{
		{"apply, schema error", "application/apply-patch+yaml", "application/json", schemaErr, http.StatusBadRequest},
		{"apply, schema error, protobuf answer", "application/apply-patch+yaml", "application/vnd.kubernetes.protobuf", schemaErr, http.StatusBadRequest},
		{"apply as CBOR, schema error", "application/apply-patch+cbor", "application/json", schemaErr, http.StatusBadRequest},
		{"apply, other internal error", "application/apply-patch+yaml", "application/json", errors.New("etcd is gone"), http.StatusInternalServerError},
		{"apply, conflict", "application/apply-patch+yaml", "application/json", apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("again")), http.StatusConflict},
		{"apply, served", "application/apply-patch+yaml", "application/json", nil, http.StatusOK},
		{"merge patch, schema error", "application/merge-patch+json", "application/json", schemaErr, http.StatusInternalServerError},
	} {
		h := WithSchemaErrorsAsBadRequest(answer(c.err), codecs.UniversalDeserializer(), codecs)
		req := httptest.NewRequest(http.MethodPatch, "/api/v1/namespaces/default/configmaps/x", strings.NewReader("metadata: x"))
		req.Header.Set("Content-Type", c.contentType)
		req.Header.Set("Accept", c.accept)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != c.want {
			t.Errorf("%s: %d, want %d: %s", c.what, w.Code, c.want, w.Body)
		}
		if c.err != nil && !strings.Contains(w.Body.String(), c.err.Error()[:10]) {
			t.Errorf("%s: the answer lost the message: %s", c.what, w.Body)
		}
	}
}
