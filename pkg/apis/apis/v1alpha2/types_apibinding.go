package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
)

// Condition types and reasons of an APIBinding (the same as in v1alpha1).
const (
	APIExportValid                  = apisv1alpha1.APIExportValid
	APIExportInvalidReferenceReason = apisv1alpha1.APIExportInvalidReferenceReason
	APIExportNotFoundReason         = apisv1alpha1.APIExportNotFoundReason
	InitialBindingCompleted         = apisv1alpha1.InitialBindingCompleted
	BindingUpToDate                 = apisv1alpha1.BindingUpToDate
	NamingConflictsReason           = apisv1alpha1.NamingConflictsReason
	PermissionClaimsValid           = apisv1alpha1.PermissionClaimsValid
	PermissionClaimsApplied         = apisv1alpha1.PermissionClaimsApplied
	InvalidPermissionClaimsReason   = apisv1alpha1.InvalidPermissionClaimsReason
	InternalErrorReason             = apisv1alpha1.InternalErrorReason
	BindingResourceDeleteSuccess    = apisv1alpha1.BindingResourceDeleteSuccess
)

// APIBindingFinalizer holds a deleted APIBinding until the objects of its
// resources in its workspace are deleted.
const APIBindingFinalizer = "apis.kcp.io/apibinding-finalizer"

// APIBinding binds the API of an APIExport into its workspace.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:storageversion
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
	// +listType=map
	// +listMapKey=group
	// +listMapKey=resource
	// +listMapKey=identityHash
	PermissionClaims []AcceptablePermissionClaim `json:"permissionClaims,omitempty"`
}

// ScopedPermissionClaim is a PermissionClaim limited to selected objects.
type ScopedPermissionClaim struct {
	PermissionClaim `json:",inline"`

	// selector selects the objects the export owner gets access to.
	//
	// +required
	Selector PermissionClaimSelector `json:"selector"`
}

// AcceptablePermissionClaim is a ScopedPermissionClaim with the consumer's
// decision.
type AcceptablePermissionClaim struct {
	ScopedPermissionClaim `json:",inline"`

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

// PermissionClaimSelector selects the objects of a claimed resource: by
// labels, or all of them.
type PermissionClaimSelector struct {
	metav1.LabelSelector `json:",inline"`

	// matchAll selects all objects.
	//
	// +optional
	MatchAll bool `json:"matchAll,omitempty"`
}

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
	// binding.
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
	// +listType=map
	// +listMapKey=group
	// +listMapKey=resource
	// +listMapKey=identityHash
	AppliedPermissionClaims []ScopedPermissionClaim `json:"appliedPermissionClaims,omitempty"`

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

var _ conditionsv1alpha1.Setter = &APIBinding{}

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
