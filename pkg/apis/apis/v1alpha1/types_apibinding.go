package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
)

// Condition types and reasons of an APIBinding.
const (
	// APIExportValid says whether the referenced APIExport is valid.
	APIExportValid conditionsv1alpha1.ConditionType = "APIExportValid"
	// APIExportInvalidReferenceReason: the reference is invalid.
	APIExportInvalidReferenceReason = "APIExportInvalidReference"
	// APIExportNotFoundReason: the APIExport does not exist.
	APIExportNotFoundReason = "APIExportNotFound"
	// APIResourceSchemaInvalidReason: a schema of the export is invalid.
	APIResourceSchemaInvalidReason = "APIResourceSchemaInvalid"
	// InternalErrorReason: something went wrong.
	InternalErrorReason = "InternalError"
	// InitialBindingCompleted says that the binding was bound once.
	InitialBindingCompleted conditionsv1alpha1.ConditionType = "InitialBindingCompleted"
	// WaitingForEstablishedReason: the bound resources are not served yet.
	WaitingForEstablishedReason = "WaitingForEstablished"
	// BindingUpToDate says whether the bound APIs match the export.
	BindingUpToDate conditionsv1alpha1.ConditionType = "BindingUpToDate"
	// NamingConflictsReason: a resource of the binding collides with
	// another API of the workspace.
	NamingConflictsReason = "NamingConflicts"
	// BindingResourceDeleteSuccess says whether the bound objects were
	// deleted with the binding.
	BindingResourceDeleteSuccess conditionsv1alpha1.ConditionType = "BindingResourceDeleteSuccess"
	// PermissionClaimsValid says whether the permission claims are valid.
	PermissionClaimsValid conditionsv1alpha1.ConditionType = "PermissionClaimsValid"
	// InvalidPermissionClaimsReason: unexpected or invalid claims.
	InvalidPermissionClaimsReason = "InvalidPermissionClaims"
	// PermissionClaimsApplied says whether the accepted claims are applied.
	PermissionClaimsApplied conditionsv1alpha1.ConditionType = "PermissionClaimsApplied"
)

// InternalAPIBindingExportLabelKey labels an APIBinding with a hash of the
// cluster and name of its export, to select bindings by export.
const InternalAPIBindingExportLabelKey = "internal.apis.kcp.io/export"

// APIBinding binds the API of an APIExport into its workspace. v1alpha2 is
// stored.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=kcp
type APIBinding struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the desired state.
	//
	// +required
	Spec APIBindingSpec `json:"spec,omitempty"`

	// status communicates the observed state.
	//
	// +optional
	Status APIBindingStatus `json:"status,omitempty"`
}

// APIBindingSpec names the API to bind and the decisions on its claims.
type APIBindingSpec struct {
	// reference is the APIExport to bind; it cannot change.
	//
	// +required
	Reference BindingReference `json:"reference"`

	// permissionClaims accept or reject the claims of the export.
	//
	// +optional
	// +listType=atomic
	PermissionClaims []AcceptablePermissionClaim `json:"permissionClaims,omitempty"`
}

// AcceptablePermissionClaim is a PermissionClaim with the consumer's
// decision.
type AcceptablePermissionClaim struct {
	PermissionClaim `json:",inline"`

	// state is Accepted or Rejected.
	//
	// +required
	State AcceptablePermissionClaimState `json:"state"`
}

// AcceptablePermissionClaimState is the decision on a permission claim.
type AcceptablePermissionClaimState string

// Decisions on permission claims.
const (
	ClaimAccepted AcceptablePermissionClaimState = "Accepted"
	ClaimRejected AcceptablePermissionClaimState = "Rejected"
)

// BindingReference refers to an APIExport.
type BindingReference struct {
	// export refers to an APIExport by workspace path and name.
	//
	// +optional
	Export *ExportBindingReference `json:"export,omitempty"`
}

// ExportBindingReference refers to an APIExport by path and name.
type ExportBindingReference struct {
	// path of the workspace of the APIExport; empty for the workspace of the
	// referring object.
	//
	// +optional
	Path string `json:"path,omitempty"`

	// name of the APIExport.
	//
	// +required
	Name string `json:"name"`
}

// APIBindingPhaseType is the phase of an APIBinding.
type APIBindingPhaseType string

// Phases of an APIBinding.
const (
	APIBindingPhaseBinding APIBindingPhaseType = "Binding"
	APIBindingPhaseBound   APIBindingPhaseType = "Bound"
)

// APIBindingStatus records what is bound.
type APIBindingStatus struct {
	// apiExportClusterName is the logical cluster (not path) of the export.
	//
	// +optional
	APIExportClusterName string `json:"apiExportClusterName,omitempty"`

	// boundResources are the bound resources.
	//
	// +optional
	// +listType=map
	// +listMapKey=group
	// +listMapKey=resource
	BoundResources []BoundAPIResource `json:"boundResources,omitempty"`

	// phase is "", Binding or Bound.
	//
	// +optional
	Phase APIBindingPhaseType `json:"phase,omitempty"`

	// conditions are the current state of the binding.
	//
	// +optional
	Conditions conditionsv1alpha1.Conditions `json:"conditions,omitempty"`

	// appliedPermissionClaims are the claims in effect.
	//
	// +optional
	// +listType=atomic
	AppliedPermissionClaims []PermissionClaim `json:"appliedPermissionClaims,omitempty"`

	// exportPermissionClaims are the claims the export asks for.
	//
	// +optional
	// +listType=atomic
	ExportPermissionClaims []PermissionClaim `json:"exportPermissionClaims,omitempty"`
}

// BoundAPIResource is a resource bound through an APIResourceSchema of an
// APIExport.
type BoundAPIResource struct {
	// group of the resource; empty for the core group.
	//
	// +required
	Group string `json:"group"`

	// resource is the plural resource name.
	//
	// +required
	Resource string `json:"resource"`

	// schema is the bound APIResourceSchema.
	//
	// +required
	Schema BoundAPIResourceSchema `json:"schema"`

	// storageVersions are all versions ever persisted.
	//
	// +optional
	// +listType=set
	StorageVersions []string `json:"storageVersions,omitempty"`
}

// BoundAPIResourceSchema refers to a bound APIResourceSchema.
type BoundAPIResourceSchema struct {
	// name of the APIResourceSchema.
	//
	// +required
	Name string `json:"name"`

	// UID of the APIResourceSchema.
	//
	// +required
	UID string `json:"UID"`

	// identityHash is the identity of the API the schema is bound with.
	//
	// +required
	IdentityHash string `json:"identityHash"`
}

// GetConditions returns the conditions of the binding.
func (in *APIBinding) GetConditions() conditionsv1alpha1.Conditions { return in.Status.Conditions }

// SetConditions replaces the conditions of the binding.
func (in *APIBinding) SetConditions(c conditionsv1alpha1.Conditions) { in.Status.Conditions = c }

// APIBindingList is a list of APIBindings.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type APIBindingList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the APIBindings.
	Items []APIBinding `json:"items"`
}
