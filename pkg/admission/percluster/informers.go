package percluster

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Informers hold the admission configuration (webhook configurations,
// admission policies and their bindings) of all logical clusters, one
// wildcard watch per resource. They tell which clusters have configuration,
// so that only those get plugin instances.
type Informers struct {
	ValidatingWebhooks       *wildcardinformer.Informer
	MutatingWebhooks         *wildcardinformer.Informer
	ValidatingPolicies       *wildcardinformer.Informer
	ValidatingPolicyBindings *wildcardinformer.Informer
	MutatingPolicies         *wildcardinformer.Informer
	MutatingPolicyBindings   *wildcardinformer.Informer
}

// NewInformers returns the informers; client is an admissionregistration.k8s.io/v1
// REST client whose host ends in /clusters/*.
func NewInformers(client rest.Interface) Informers {
	inf := func(resource string, example runtime.Object) *wildcardinformer.Informer {
		lw := cache.NewListWatchFromClient(client, resource, metav1.NamespaceAll, fields.Everything())
		return wildcardinformer.New(lw, example, "wildcard-"+resource)
	}
	return Informers{
		ValidatingWebhooks:       inf("validatingwebhookconfigurations", &admissionregistrationv1.ValidatingWebhookConfiguration{}),
		MutatingWebhooks:         inf("mutatingwebhookconfigurations", &admissionregistrationv1.MutatingWebhookConfiguration{}),
		ValidatingPolicies:       inf("validatingadmissionpolicies", &admissionregistrationv1.ValidatingAdmissionPolicy{}),
		ValidatingPolicyBindings: inf("validatingadmissionpolicybindings", &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}),
		MutatingPolicies:         inf("mutatingadmissionpolicies", &admissionregistrationv1.MutatingAdmissionPolicy{}),
		MutatingPolicyBindings:   inf("mutatingadmissionpolicybindings", &admissionregistrationv1.MutatingAdmissionPolicyBinding{}),
	}
}

// All returns every informer, to run and wait for.
func (i Informers) All() []*wildcardinformer.Informer {
	return []*wildcardinformer.Informer{
		i.ValidatingWebhooks, i.MutatingWebhooks,
		i.ValidatingPolicies, i.ValidatingPolicyBindings,
		i.MutatingPolicies, i.MutatingPolicyBindings,
	}
}

// Resources returns the admissionregistration.k8s.io/v1 resources of All,
// in its order.
func Resources() []string {
	return []string{
		"validatingwebhookconfigurations", "mutatingwebhookconfigurations",
		"validatingadmissionpolicies", "validatingadmissionpolicybindings",
		"mutatingadmissionpolicies", "mutatingadmissionpolicybindings",
	}
}

// HasAll tells whether cluster has at least one object in each of the
// informers: a webhook configuration, or a policy and a binding.
func HasAll(cluster logicalcluster.Name, informers ...*wildcardinformer.Informer) bool {
	for _, inf := range informers {
		objs, err := inf.List(cluster, "")
		if err != nil || len(objs) == 0 {
			return false
		}
	}
	return true
}
