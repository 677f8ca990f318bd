package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
)

// Names of the WorkspaceTypes that exist in the root logical cluster.
const (
	// RootWorkspaceTypeName is the type of the root logical cluster, which
	// has no parent.
	RootWorkspaceTypeName WorkspaceTypeName = "root"
	// UniversalWorkspaceTypeName is a type without restrictions.
	UniversalWorkspaceTypeName WorkspaceTypeName = "universal"
	// OrganizationWorkspaceTypeName is the type of workspaces directly under
	// root.
	OrganizationWorkspaceTypeName WorkspaceTypeName = "organization"
	// TeamWorkspaceTypeName is the type of workspaces inside organizations
	// and teams.
	TeamWorkspaceTypeName WorkspaceTypeName = "team"
	// HomeWorkspaceTypeName is the type of the users' home workspaces.
	HomeWorkspaceTypeName WorkspaceTypeName = "home"
)

// WorkspaceAPIBindingsInitializer is the system initializer that waits for
// the default APIBindings of a WorkspaceType to be bound.
const WorkspaceAPIBindingsInitializer corev1alpha1.LogicalClusterInitializer = "system:apibindings"

// Condition types and reasons of a WorkspaceType.
const (
	// WorkspaceTypeVirtualWorkspaceURLsReady says whether the virtual
	// workspace URLs in the status are up to date.
	WorkspaceTypeVirtualWorkspaceURLsReady conditionsv1alpha1.ConditionType = "VirtualWorkspaceURLsReady"
	// ErrorGeneratingURLsReason is the WorkspaceTypeVirtualWorkspaceURLsReady
	// reason when the URLs could not be computed.
	ErrorGeneratingURLsReason = "ErrorGeneratingURLs"
)

// WorkspaceTypeName is the name of a WorkspaceType: a lower-case DNS-1123
// label that starts with a letter.
type WorkspaceTypeName string

// WorkspaceTypeReference refers to a WorkspaceType by name and by the path
// of the workspace that holds it.
type WorkspaceTypeReference struct {
	// name of the WorkspaceType.
	//
	// +required
	Name WorkspaceTypeName `json:"name"`

	// path of the workspace that holds the WorkspaceType, e.g. root:org. When
	// empty, the workspace of the referring object is meant.
	//
	// +optional
	Path string `json:"path,omitempty"`
}

// WorkspaceType says how workspaces of a kind are initialized, where they
// may be nested, and how they are terminated.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=kcp
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type WorkspaceType struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec WorkspaceTypeSpec `json:"spec,omitempty"`

	// +optional
	Status WorkspaceTypeStatus `json:"status,omitempty"`
}

// WorkspaceTypeSpec is the desired state of a WorkspaceType.
type WorkspaceTypeSpec struct {
	// initializer says that the type has an initializing controller. Its
	// name is "<workspace of the type>:<type name>" (see InitializerForType);
	// workspaces of this type stay Initializing until it has finished.
	//
	// +optional
	Initializer bool `json:"initializer,omitempty"`

	// terminator says that the type has a terminating controller, named like
	// the initializer; the content of deleted workspaces of this type is kept
	// until it has finished.
	//
	// +optional
	Terminator bool `json:"terminator,omitempty"`

	// extend lists types whose initializers, terminators and child and
	// parent constraints this type inherits; the type then also counts as
	// each of them.
	//
	// +optional
	Extend WorkspaceTypeExtension `json:"extend,omitempty"`

	// additionalWorkspaceLabels are added to every Workspace of this type on
	// creation.
	//
	// +optional
	AdditionalWorkspaceLabels map[string]string `json:"additionalWorkspaceLabels,omitempty"`

	// defaultChildWorkspaceType is the type of child workspaces created
	// without a type. When unset, children must name their type. It is not
	// inherited through extend.
	//
	// +optional
	DefaultChildWorkspaceType *WorkspaceTypeReference `json:"defaultChildWorkspaceType,omitempty"`

	// limitAllowedChildren constrains the types of child workspaces, in
	// addition to the constraints of the extended types.
	//
	// +optional
	LimitAllowedChildren *WorkspaceTypeSelector `json:"limitAllowedChildren,omitempty"`

	// limitAllowedParents constrains the types of the parent workspace, in
	// addition to the constraints of the extended types.
	//
	// +optional
	LimitAllowedParents *WorkspaceTypeSelector `json:"limitAllowedParents,omitempty"`

	// defaultAPIBindings are bound in every new workspace of this type
	// during initialization.
	//
	// +optional
	// +listType=atomic
	DefaultAPIBindings []APIExportReference `json:"defaultAPIBindings,omitempty"`

	// authenticationConfigurations name WorkspaceAuthenticationConfigurations
	// in the workspace of this type; workspaces of this type accept the
	// tokens of their issuers in addition to the system's authentication.
	//
	// +optional
	// +listType=atomic
	AuthenticationConfigurations []AuthenticationConfigurationReference `json:"authenticationConfigurations,omitempty"`
}

// AuthenticationConfigurationReference refers to a
// WorkspaceAuthenticationConfiguration in the workspace of the referring
// WorkspaceType.
type AuthenticationConfigurationReference struct {
	// name of the WorkspaceAuthenticationConfiguration.
	//
	// +required
	Name string `json:"name"`
}

// WorkspaceTypeExtension lists the types a WorkspaceType extends.
type WorkspaceTypeExtension struct {
	// with are the extended types.
	//
	// +optional
	// +listType=atomic
	With []WorkspaceTypeReference `json:"with,omitempty"`
}

// WorkspaceTypeSelector describes a set of WorkspaceTypes.
type WorkspaceTypeSelector struct {
	// none says that no type matches. It excludes types.
	//
	// +optional
	None bool `json:"none,omitempty"`

	// types are the matching types; a type extending one of them matches
	// too. An empty list matches all types.
	//
	// +optional
	// +listType=atomic
	Types []WorkspaceTypeReference `json:"types,omitempty"`
}

// APIExportReference refers to an APIExport.
type APIExportReference struct {
	// path of the workspace that holds the APIExport. When empty, the
	// workspace of the referring object is meant.
	//
	// +optional
	Path string `json:"path,omitempty"`

	// export is the name of the APIExport.
	//
	// +required
	Export string `json:"export"`
}

// VirtualWorkspaceType tells what a virtual workspace URL of a
// WorkspaceType serves.
type VirtualWorkspaceType string

const (
	// VirtualWorkspaceTypeInitializing serves the logical clusters of the
	// type that are still being initialized.
	VirtualWorkspaceTypeInitializing VirtualWorkspaceType = "initializing"
	// VirtualWorkspaceTypeTerminating serves the logical clusters of the type
	// that are being terminated.
	VirtualWorkspaceTypeTerminating VirtualWorkspaceType = "terminating"
)

// VirtualWorkspace is a URL of a virtual workspace that serves the
// initializer or terminator of a WorkspaceType.
type VirtualWorkspace struct {
	// url of the virtual workspace.
	//
	// +required
	URL string `json:"url"`

	// type tells whether the URL serves the initializer or the terminator.
	//
	// +optional
	Type VirtualWorkspaceType `json:"type,omitempty"`
}

// WorkspaceTypeStatus is the observed state of a WorkspaceType.
type WorkspaceTypeStatus struct {
	// conditions are the current processing state of the WorkspaceType.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions conditionsv1alpha1.Conditions `json:"conditions,omitempty"`

	// virtualWorkspaces are the URLs of the virtual workspaces that serve the
	// type's initializer and terminator, one per shard.
	//
	// +optional
	// +listType=atomic
	VirtualWorkspaces []VirtualWorkspace `json:"virtualWorkspaces,omitempty"`
}

// GetConditions returns the conditions of the WorkspaceType.
func (in *WorkspaceType) GetConditions() conditionsv1alpha1.Conditions {
	return in.Status.Conditions
}

// SetConditions replaces the conditions of the WorkspaceType.
func (in *WorkspaceType) SetConditions(c conditionsv1alpha1.Conditions) {
	in.Status.Conditions = c
}

var _ conditionsv1alpha1.Setter = &WorkspaceType{}

// WorkspaceTypeList is a list of WorkspaceTypes.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type WorkspaceTypeList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the WorkspaceTypes.
	Items []WorkspaceType `json:"items"`
}
