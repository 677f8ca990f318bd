package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
)

// Condition types and reasons of an APIExport.
const (
	// APIExportIdentityValid says whether the identity secret is valid and
	// status.identityHash is its hash.
	APIExportIdentityValid conditionsv1alpha1.ConditionType = "IdentityValid"
	// IdentityVerificationFailedReason is the IdentityValid reason when the
	// referenced secret is missing or holds no usable key.
	IdentityVerificationFailedReason = "IdentityVerificationFailed"
	// IdentityGenerationFailedReason is the IdentityValid reason when the
	// default identity secret could not be created.
	IdentityGenerationFailedReason = "IdentityGenerationFailed"
	// APIExportVirtualWorkspaceURLsReady says whether the virtual workspace
	// URLs are up to date.
	APIExportVirtualWorkspaceURLsReady conditionsv1alpha1.ConditionType = "VirtualWorkspaceURLsReady"
	// ErrorGeneratingURLsReason is the APIExportVirtualWorkspaceURLsReady
	// reason when the URLs could not be computed.
	ErrorGeneratingURLsReason = "ErrorGeneratingURLs"
)

const (
	// SecretKeyAPIExportIdentity is the key of an identity secret that holds
	// the identity of an APIExport.
	SecretKeyAPIExportIdentity = "key"
	// MaximalPermissionPolicyRBACUserGroupPrefix prefixes the user and group
	// names checked against an APIExport's maximal permission policy.
	MaximalPermissionPolicyRBACUserGroupPrefix = "apis.kcp.io:binding:"
	// APIExportPermissionClaimLabelPrefix prefixes the labels of claimed
	// objects.
	APIExportPermissionClaimLabelPrefix = "claimed.internal.apis.kcp.io/"
	// AnnotationAPIExportExtraKeyPrefix prefixes annotations of an
	// APIExport that are copied to its APIBindings.
	AnnotationAPIExportExtraKeyPrefix = "extra.apis.kcp.io/"
)

// APIExport publishes an API, made of APIResourceSchemas of its workspace,
// for other workspaces to bind to with APIBindings. This version lists the
// schemas by name (latestResourceSchemas); v1alpha2 is stored.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=kcp
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
	// latestResourceSchemas are the names of the APIResourceSchemas the
	// export publishes, each "<prefix>.<resource>.<group>".
	//
	// +optional
	// +listType=set
	LatestResourceSchemas []string `json:"latestResourceSchemas,omitempty"`

	// identity points to the secret whose "key" is the identity of the API.
	// It defaults to a secret named like the export in namespace kcp-system.
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

// PermissionClaim asks for access to a resource, identified by group,
// resource and identity hash.
type PermissionClaim struct {
	GroupResource `json:",inline"`

	// all claims all objects of the resource; exclusive with
	// resourceSelector.
	//
	// +optional
	All bool `json:"all,omitempty"`

	// resourceSelector claims the selected objects only.
	//
	// +optional
	// +listType=atomic
	ResourceSelector []ResourceSelector `json:"resourceSelector,omitempty"`

	// identityHash is the identity of the APIExport that serves the
	// resource; empty for built-in resources.
	//
	// +optional
	IdentityHash string `json:"identityHash,omitempty"`
}

// EqualGRI tells whether two claims have the same group, resource and
// identity hash.
func (p PermissionClaim) EqualGRI(o PermissionClaim) bool {
	return p.Group == o.Group && p.Resource == o.Resource && p.IdentityHash == o.IdentityHash
}

// ResourceSelector selects claimed objects by name and namespace.
type ResourceSelector struct {
	// name of the object.
	//
	// +optional
	Name string `json:"name,omitempty"`

	// namespace of the object.
	//
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// GroupResource identifies a resource.
type GroupResource struct {
	// group is the API group; empty for the core group.
	//
	// +optional
	Group string `json:"group,omitempty"`

	// resource is the resource, or "resource/subresource".
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
