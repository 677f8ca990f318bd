package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// APIResourceSchema describes a resource, identified by group, version,
// resource and schema: the shape of a CustomResourceDefinition that an
// APIExport publishes. Its spec is immutable.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:resource:scope=Cluster,categories=kcp
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type APIResourceSchema struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the desired state.
	//
	// +optional
	Spec APIResourceSchemaSpec `json:"spec,omitempty"`
}

// Name validation strategies of APIResourceSchemaSpec.NameValidation.
const (
	// NameValidationDNS1123Subdomain validates names as CRDs do.
	NameValidationDNS1123Subdomain = "DNS1123Subdomain"
	// NameValidationPathSegmentName accepts any name that is a valid path
	// segment.
	NameValidationPathSegmentName = "PathSegmentName"
)

// APIResourceSchemaSpec defines the resource.
type APIResourceSchemaSpec struct {
	// group is the API group of the resource; empty is the core group.
	//
	// +required
	Group string `json:"group"`

	// names are the resource and kind names of the resource.
	//
	// +required
	Names apiextensionsv1.CustomResourceDefinitionNames `json:"names"`

	// scope is Cluster or Namespaced.
	//
	// +required
	Scope apiextensionsv1.ResourceScope `json:"scope"`

	// versions are the API versions of the resource; exactly one is the
	// storage version.
	//
	// +required
	// +listType=map
	// +listMapKey=name
	Versions []APIResourceVersion `json:"versions"`

	// nameValidation is DNS1123Subdomain (the default, as for CRDs) or
	// PathSegmentName.
	//
	// +optional
	NameValidation string `json:"nameValidation,omitempty"`

	// conversion says how objects are converted between versions.
	//
	// +optional
	Conversion *CustomResourceConversion `json:"conversion,omitempty"`
}

// APIResourceVersion describes one API version of a resource.
type APIResourceVersion struct {
	// name is the version name, e.g. v1 or v2beta1.
	//
	// +required
	Name string `json:"name"`

	// served enables the version in the REST API.
	//
	// +required
	Served bool `json:"served"`

	// storage says that objects are persisted in this version.
	//
	// +required
	Storage bool `json:"storage"`

	// deprecated makes requests of this version receive a warning.
	//
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`

	// deprecationWarning overrides the default deprecation warning.
	//
	// +optional
	DeprecationWarning *string `json:"deprecationWarning,omitempty"`

	// schema is the OpenAPI v3 structural schema of the version.
	//
	// +required
	// +structType=atomic
	Schema runtime.RawExtension `json:"schema"`

	// subresources are the subresources of this version.
	//
	// +optional
	Subresources apiextensionsv1.CustomResourceSubresources `json:"subresources,omitempty"`

	// additionalPrinterColumns are the columns of Table output.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	AdditionalPrinterColumns []apiextensionsv1.CustomResourceColumnDefinition `json:"additionalPrinterColumns,omitempty"`

	// selectableFields are the fields usable as field selectors.
	//
	// +optional
	// +listType=atomic
	SelectableFields []apiextensionsv1.SelectableField `json:"selectableFields,omitempty"`
}

// CustomResourceConversion describes how objects are converted between the
// versions of a resource.
type CustomResourceConversion struct {
	// strategy is None or Webhook.
	//
	// +required
	Strategy ConversionStrategyType `json:"strategy"`

	// webhook is how to call the conversion webhook; required for Webhook.
	//
	// +optional
	Webhook *WebhookConversion `json:"webhook,omitempty"`
}

// ConversionStrategyType is how objects are converted between versions.
type ConversionStrategyType string

// Conversion strategies.
const (
	// NoneConverter only changes the apiVersion.
	NoneConverter ConversionStrategyType = "None"
	// WebhookConverter calls a webhook.
	WebhookConverter ConversionStrategyType = "Webhook"
)

// WebhookConversion describes how to call a conversion webhook.
type WebhookConversion struct {
	// clientConfig is how to reach the webhook.
	//
	// +optional
	ClientConfig *WebhookClientConfig `json:"clientConfig,omitempty"`

	// conversionReviewVersions are the ConversionReview versions the
	// webhook accepts, preferred first.
	//
	// +listType=atomic
	ConversionReviewVersions []string `json:"conversionReviewVersions"`
}

// WebhookClientConfig contains what is needed to make a TLS connection to
// a webhook.
type WebhookClientConfig struct {
	// url is the https URL of the webhook.
	//
	// +optional
	URL string `json:"url,omitempty"`

	// caBundle is a PEM bundle to verify the webhook's serving certificate.
	//
	// +optional
	CABundle []byte `json:"caBundle,omitempty"`
}

// APIResourceSchemaList is a list of APIResourceSchemas.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type APIResourceSchemaList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the APIResourceSchemas.
	Items []APIResourceSchema `json:"items"`
}
