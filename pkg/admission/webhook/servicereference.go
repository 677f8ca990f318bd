package webhook

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/kubernetes/pkg/apis/admissionregistration"
)

// ServiceReferences refuses webhook configurations that address their
// webhook by clientConfig.service: a logical cluster has no service network,
// so the shard could not call such a webhook in the cluster's sense and
// would deny or (failurePolicy Ignore) silently skip it. clientConfig.url
// works.
type ServiceReferences struct{ *admission.Handler }

var _ admission.ValidationInterface = &ServiceReferences{}

// NewServiceReferences returns the plugin.
func NewServiceReferences() *ServiceReferences {
	return &ServiceReferences{Handler: admission.NewHandler(admission.Create, admission.Update)}
}

// Validate refuses service references.
func (p *ServiceReferences) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" {
		return nil
	}
	var services []bool
	switch obj := a.GetObject().(type) {
	case *admissionregistration.ValidatingWebhookConfiguration:
		for _, w := range obj.Webhooks {
			services = append(services, w.ClientConfig.Service != nil)
		}
	case *admissionregistration.MutatingWebhookConfiguration:
		for _, w := range obj.Webhooks {
			services = append(services, w.ClientConfig.Service != nil)
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for _, w := range obj.Webhooks {
			services = append(services, w.ClientConfig.Service != nil)
		}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for _, w := range obj.Webhooks {
			services = append(services, w.ClientConfig.Service != nil)
		}
	default:
		return nil
	}
	var errs field.ErrorList
	for i, isService := range services {
		if isService {
			errs = append(errs, field.Forbidden(field.NewPath("webhooks").Index(i).Child("clientConfig", "service"),
				"logical clusters have no service network; address the webhook by clientConfig.url"))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(a.GetKind().GroupKind(), a.GetName(), errs)
}
