package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
)

// Condition types and reasons of an APIExport (the same as in v1alpha1).
const (
	APIExportIdentityValid             = apisv1alpha1.APIExportIdentityValid
	IdentityVerificationFailedReason   = apisv1alpha1.IdentityVerificationFailedReason
	IdentityGenerationFailedReason     = apisv1alpha1.IdentityGenerationFailedReason
	APIExportVirtualWorkspaceURLsReady = apisv1alpha1.APIExportVirtualWorkspaceURLsReady
	ErrorGeneratingURLsReason          = apisv1alpha1.ErrorGeneratingURLsReason
)

// APIExportEndpointSliceSkipAnnotation on an APIExport skips the creation
// of its default APIExportEndpointSlice.
const APIExportEndpointSliceSkipAnnotation = "apiexports.apis.kcp.io/skip-endpointslice"

// DefaultIdentitySecretNamespace is the namespace of an APIExport's default
// identity secret, which is named like the export.
const DefaultIdentitySecretNamespace = "kcp-system"

// APIExport publishes an API, made of APIResourceSchemas of its workspace,
// for other workspaces to bind to with APIBindings. Its identity, a secret
// key, tells its API apart from every other export of the same resources.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=kcp
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type APIExport struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the desired state.
	//
	// +optional
	Spec APIExportSpec `json:"spec,omitempty"`

	// status communicates the observed state.
	//
	// +optional
	Status APIExportStatus `json:"status,omitempty"`
}

// APIExportSpec is the desired state of an APIExport.
type APIExportSpec struct {
	// resources are the resources the export publishes, each with its
	// APIResourceSchema.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +listMapKey=group
	Resources []ResourceSchema `json:"resources,omitempty"`

	// identity points to the secret whose "key" is the identity of the API.
	// It defaults to a secret named like the export in namespace kcp-system,
	// created with a random key when absent.
	//
	// +optional
	Identity *Identity `json:"identity,omitempty"`

	// maximalPermissionPolicy bounds what consumers may do with the API.
	//
	// +optional
	MaximalPermissionPolicy *MaximalPermissionPolicy `json:"maximalPermissionPolicy,omitempty"`

	// permissionClaims ask consumers for access to other resources.
	//
	// +optional
	// +listType=map
	// +listMapKey=group
	// +listMapKey=resource
	PermissionClaims []PermissionClaim `json:"permissionClaims,omitempty"`
}

// ResourceSchema is a resource of an APIExport.
type ResourceSchema struct {
	// name is the plural resource name.
	Name string `json:"name"`

	// group is the API group; empty for the core group.
	Group string `json:"group"`

	// schema is the name of the APIResourceSchema,
	// "<prefix>.<name>.<group>".
	Schema string `json:"schema"`

	// storage says how objects are stored; it defaults to {crd: {}}.
	//
	// +optional
	Storage ResourceSchemaStorage `json:"storage"`
}

// ResourceSchemaStorage says how the objects of a resource are stored:
// exactly one of crd or virtual is set.
type ResourceSchemaStorage struct {
	// crd stores the objects like custom resources in the bound workspaces.
	//
	// +optional
	CRD *ResourceSchemaStorageCRD `json:"crd,omitempty"`

	// virtual projects the objects from another endpoint.
	//
	// +optional
	Virtual *ResourceSchemaStorageVirtual `json:"virtual,omitempty"`
}

// ResourceSchemaStorageCRD stores objects like custom resources.
type ResourceSchemaStorageCRD struct{}

// ResourceSchemaStorageVirtual refers to an object whose status.url serves
// the resource.
type ResourceSchemaStorageVirtual struct {
	// reference is the object that has the URL.
	Reference TypedLocalObjectReference `json:"reference"`

	// identityHash is the identity of the virtual resource: for a
	// ClusterCachedResourceEndpointSlice, its ClusterCachedResource's
	// status.identityHash.
	//
	// +optional
	IdentityHash string `json:"identityHash,omitempty"`
}

// Identity refers to the secret holding an APIExport's identity.
type Identity struct {
	// secretRef is the secret whose "key" is the identity.
	//
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// SecretReference names a secret by namespace and name; it is
// corev1.SecretReference on the wire.
type SecretReference struct {
	// name of the secret.
	//
	// +optional
	Name string `json:"name,omitempty"`

	// namespace of the secret.
	//
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// TypedLocalObjectReference refers to an object in the same workspace by
// group, kind and name; it is corev1.TypedLocalObjectReference on the wire.
type TypedLocalObjectReference struct {
	// apiGroup of the object; empty for the core group.
	//
	// +optional
	APIGroup *string `json:"apiGroup"`

	// kind of the object.
	Kind string `json:"kind"`

	// name of the object.
	Name string `json:"name"`
}

// MaximalPermissionPolicy bounds what consumers of an API may do.
type MaximalPermissionPolicy struct {
	// local is a policy made of RBAC in the workspace of the export.
	//
	// +optional
	Local *LocalAPIExportPolicy `json:"local,omitempty"`
}

// LocalAPIExportPolicy checks RBAC in the workspace of the export, for user
// and groups prefixed with "apis.kcp.io:binding:".
type LocalAPIExportPolicy struct{}

// PermissionClaim asks for verbs on a resource, identified by group,
// resource and identity hash.
type PermissionClaim struct {
	GroupResource `json:",inline"`

	// verbs are the claimed verbs; "*" is all.
	//
	// +required
	// +listType=set
	Verbs []string `json:"verbs"`

	// identityHash is the identity of the APIExport that serves the
	// resource; empty for built-in resources.
	//
	// +optional
	IdentityHash string `json:"identityHash,omitempty"`

	// defaultSelector is the selector of bindings created from a
	// WorkspaceType's defaultAPIBindings; matchAll when unset.
	//
	// +optional
	DefaultSelector *PermissionClaimSelector `json:"defaultSelector,omitempty"`
}

// EqualGRI tells whether two claims have the same group, resource and
// identity hash.
func (p PermissionClaim) EqualGRI(o PermissionClaim) bool {
	return p.Group == o.Group && p.Resource == o.Resource && p.IdentityHash == o.IdentityHash
}

// GroupResource identifies a resource.
type GroupResource struct {
	// group is the API group; empty for the core group.
	//
	// +optional
	Group string `json:"group,omitempty"`

	// resource is the plural resource name.
	//
	// +required
	Resource string `json:"resource"`
}

// APIExportStatus is the observed state of an APIExport.
type APIExportStatus struct {
	// identityHash is the hex SHA-256 of the identity key; it never changes
	// once set.
	//
	// +optional
	IdentityHash string `json:"identityHash,omitempty"`

	// conditions are the current state of the export.
	//
	// +optional
	Conditions conditionsv1alpha1.Conditions `json:"conditions,omitempty"`

	// virtualWorkspaces are the URLs of the export's virtual workspaces.
	//
	// Deprecated: use APIExportEndpointSlice.status.endpoints instead.
	//
	// +optional
	// +listType=atomic
	VirtualWorkspaces []VirtualWorkspace `json:"virtualWorkspaces,omitempty"`
}

// VirtualWorkspace is a URL of an APIExport virtual workspace.
type VirtualWorkspace struct {
	// url of the virtual workspace.
	//
	// +required
	URL string `json:"url"`
}

// GetConditions returns the conditions of the export.
func (in *APIExport) GetConditions() conditionsv1alpha1.Conditions { return in.Status.Conditions }

// SetConditions replaces the conditions of the export.
func (in *APIExport) SetConditions(c conditionsv1alpha1.Conditions) { in.Status.Conditions = c }

var _ conditionsv1alpha1.Setter = &APIExport{}

// APIExportList is a list of APIExports.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type APIExportList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the APIExports.
	Items []APIExport `json:"items"`
}
