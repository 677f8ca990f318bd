package webhook

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
	"k8s.io/utils/ptr"
)

func TestWebhookConfigurationsAddressedByServiceAreInvalid(t *testing.T) {
	byURL := admissionregistration.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:8443/validate")}
	byService := admissionregistration.WebhookClientConfig{Service: &admissionregistration.ServiceReference{Namespace: "default", Name: "hook"}}
	for _, tc := range []struct {
		name    string
		obj     runtime.Object
		invalid bool
	}{
		{"validating by url", &admissionregistration.ValidatingWebhookConfiguration{Webhooks: []admissionregistration.ValidatingWebhook{{ClientConfig: byURL}}}, false},
		{"validating by service", &admissionregistration.ValidatingWebhookConfiguration{Webhooks: []admissionregistration.ValidatingWebhook{{ClientConfig: byURL}, {ClientConfig: byService}}}, true},
		{"mutating by service", &admissionregistration.MutatingWebhookConfiguration{Webhooks: []admissionregistration.MutatingWebhook{{ClientConfig: byService}}}, true},
		{"other kinds", &admissionregistration.ValidatingAdmissionPolicy{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := admission.NewAttributesRecord(tc.obj, nil, schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"},
				"", "hook", schema.GroupVersionResource{}, "", admission.Create, nil, false, nil)
			err := NewServiceReferences().Validate(context.Background(), a, nil)
			if got := apierrors.IsInvalid(err); got != tc.invalid {
				t.Fatalf("Validate: %v, want invalid=%v", err, tc.invalid)
			}
		})
	}
}
