package framework

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// AdmissionWebhook is kcp's test webhook server: it allows every review and
// records how often it was called and the kcp.io/cluster of the last
// object it saw.
type AdmissionWebhook struct {
	url      string
	caBundle []byte

	mu          sync.Mutex
	calls       int
	lastCluster string
}

// NewAdmissionWebhook starts the server; it stops with the test.
func NewAdmissionWebhook(t testing.TB) *AdmissionWebhook {
	t.Helper()
	h := &AdmissionWebhook{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		var obj metav1.PartialObjectMetadata
		_ = json.Unmarshal(in.Request.Object.Raw, &obj)
		h.mu.Lock()
		h.calls++
		h.lastCluster = obj.Annotations[logicalcluster.AnnotationKey]
		h.mu.Unlock()
		out := admissionv1.AdmissionReview{TypeMeta: in.TypeMeta, Response: &admissionv1.AdmissionResponse{UID: in.Request.UID, Allowed: true}}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	h.url, h.caBundle = srv.URL, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return h
}

// Seen returns how often the webhook was called and the logical cluster
// of the last object it saw.
func (h *AdmissionWebhook) Seen() (int, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls, h.lastCluster
}

// Register creates kcp's test-webhook configuration (validating or
// mutating) for creates of group/version resource in the workspace of kc,
// and deletes it when the test ends: the server goes with the test.
func (h *AdmissionWebhook) Register(ctx context.Context, t testing.TB, kc kubernetes.Interface, group, version, resource string, mutating bool) {
	t.Helper()
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource}},
	}}
	client := admissionregistrationv1.WebhookClientConfig{URL: &h.url, CABundle: h.caBundle}
	none := admissionregistrationv1.SideEffectClassNone
	api := kc.AdmissionregistrationV1()
	var err error
	if mutating {
		_, err = api.MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "test-webhook"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{
				Name: "test-webhook.cowboy.io", ClientConfig: client, Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			}},
		}, metav1.CreateOptions{})
		t.Cleanup(func() {
			_ = api.MutatingWebhookConfigurations().Delete(context.Background(), "test-webhook", metav1.DeleteOptions{})
		})
	} else {
		_, err = api.ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "test-webhook"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{
				Name: "test-webhook.cowboy.io", ClientConfig: client, Rules: rules, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			}},
		}, metav1.CreateOptions{})
		t.Cleanup(func() {
			_ = api.ValidatingWebhookConfigurations().Delete(context.Background(), "test-webhook", metav1.DeleteOptions{})
		})
	}
	if err != nil {
		t.Fatalf("create webhook configuration: %v", err)
	}
}
