package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
)

const (
	// LogicalClusterFinalizer is put on a Workspace and kept until its
	// logical cluster is gone.
	LogicalClusterFinalizer = "core.kcp.io/logicalcluster"

	// WorkspacePhaseLabel mirrors status.phase of a Workspace, so that
	// clients can select workspaces by phase.
	WorkspacePhaseLabel = "tenancy.kcp.io/phase"

	// WorkspaceShardHashAnnotationKey records the shard of a scheduled
	// Workspace in kcp's internal form, ShardHash of its name.
	WorkspaceShardHashAnnotationKey = "internal.tenancy.kcp.io/shard"

	// WorkspaceClusterAnnotationKey records the logical cluster chosen for a
	// Workspace while it is being scheduled.
	WorkspaceClusterAnnotationKey = "internal.tenancy.kcp.io/cluster"
)

// Condition types and reasons of a Workspace.
const (
	// WorkspaceScheduled says whether the workspace was placed on a shard.
	WorkspaceScheduled conditionsv1alpha1.ConditionType = "WorkspaceScheduled"
	// WorkspaceReasonUnschedulable is the WorkspaceScheduled reason when no
	// shard can take the workspace at the moment.
	WorkspaceReasonUnschedulable = "Unschedulable"
	// WorkspaceReasonUnknown is the WorkspaceScheduled reason when
	// scheduling failed for an unexpected reason.
	WorkspaceReasonUnknown = "Unknown"

	// WorkspaceInitialized says whether all initializers have finished.
	WorkspaceInitialized conditionsv1alpha1.ConditionType = "WorkspaceInitialized"
	// WorkspaceInitializedInitializerExists is the WorkspaceInitialized
	// reason while at least one initializer is left.
	WorkspaceInitializedInitializerExists = "InitializerExists"
	// WorkspaceInitializedWorkspaceDisappeared is the WorkspaceInitialized
	// reason when the LogicalCluster of the workspace is gone.
	WorkspaceInitializedWorkspaceDisappeared = "WorkspaceDisappeared"

	// WorkspaceAPIBindingsInitialized says whether the default APIBindings of
	// the workspace's type are bound.
	WorkspaceAPIBindingsInitialized conditionsv1alpha1.ConditionType = "APIBindingsInitialized"
	// WorkspaceInitializedWaitingOnAPIBindings is the APIBindingsInitialized
	// reason while an APIBinding is not bound yet.
	WorkspaceInitializedWaitingOnAPIBindings = "WaitingOnAPIBindings"
	// WorkspaceInitializedWorkspaceTypeInvalid is the APIBindingsInitialized
	// reason when the workspace types cannot be resolved (e.g. a cycle).
	WorkspaceInitializedWorkspaceTypeInvalid = "WorkspaceTypesInvalid"
	// WorkspaceInitializedAPIBindingErrors is the APIBindingsInitialized
	// reason when creating APIBindings failed.
	WorkspaceInitializedAPIBindingErrors = "APIBindingErrors"

	// WorkspaceDeletionContentSuccess says whether deleting the content of
	// the workspace is making progress without errors.
	WorkspaceDeletionContentSuccess conditionsv1alpha1.ConditionType = "WorkspaceDeletionContentSuccess"
	// WorkspaceContentDeleted says whether all content of the workspace is
	// deleted.
	WorkspaceContentDeleted conditionsv1alpha1.ConditionType = "WorkspaceContentDeleted"
	// WorkspaceContentDeletedSomeResourcesRemain is the
	// WorkspaceContentDeleted reason while finalizers hold content; the
	// message names the resources and the finalizers.
	WorkspaceContentDeletedSomeResourcesRemain = "SomeResourcesRemain"
)

// Workspace is a Kubernetes-cluster-like endpoint, with the standard
// discovery, OpenAPI and resource endpoints, as seen from its parent. It is
// backed by a logical cluster, or, with a mount, by another endpoint.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=kcp,shortName=ws
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type.name`,description="Type of the workspace"
// +kubebuilder:printcolumn:name="Region",type=string,JSONPath=`.metadata.labels['region']`,description="The region this workspace is in"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="The current phase (e.g. Scheduling, Initializing, Ready, Deleting)"
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.URL`,description="URL to access the workspace"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type Workspace struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec WorkspaceSpec `json:"spec"`

	// +optional
	Status WorkspaceStatus `json:"status,omitempty"`
}

// WorkspaceSpec is the desired state of a Workspace.
type WorkspaceSpec struct {
	// type of the workspace, which decides how it is initialized, which
	// workspaces it may contain, and how it is terminated. When unset, the
	// default child type of the parent's type is used. Immutable once set.
	// Using a type needs verb "use" on the WorkspaceType.
	//
	// +optional
	Type *WorkspaceTypeReference `json:"type,omitempty"`

	// location constrains the shards the workspace can be scheduled to. When
	// unset, any shard may be chosen.
	//
	// +optional
	Location *WorkspaceLocation `json:"location,omitempty"`

	// cluster is the name of the logical cluster behind this workspace. Set
	// by the system; immutable once set.
	//
	// +optional
	Cluster string `json:"cluster,omitempty"`

	// URL is the address under which the workspace is served: the shard's
	// external URL followed by /clusters/<canonical path>. Set by the system.
	//
	// +optional
	URL string `json:"URL,omitempty"`

	// mount points the workspace at an object that serves it instead of a
	// logical cluster. Immutable once set.
	//
	// +optional
	Mount *Mount `json:"mount,omitempty"`
}

// WorkspaceLocation constrains where a workspace can be scheduled.
type WorkspaceLocation struct {
	// selector selects the shards the workspace can be scheduled to by their
	// labels.
	//
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// Mount points a workspace at an object implementing the mount feature;
// requests for the workspace are sent to the URL that object publishes.
type Mount struct {
	// ref is the object that serves the workspace.
	//
	// +required
	Reference ObjectReference `json:"ref"`
}

// ObjectReference identifies an object by kind and name.
type ObjectReference struct {
	// apiVersion is the group and version of the object.
	//
	// +required
	APIVersion string `json:"apiVersion"`

	// kind is the kind of the object.
	//
	// +required
	Kind string `json:"kind"`

	// name is the name of the object.
	//
	// +required
	Name string `json:"name"`

	// namespace is the namespace of the object, if it is namespaced.
	//
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// WorkspaceStatus is the observed state of a Workspace.
type WorkspaceStatus struct {
	// phase of the workspace, mirroring its logical cluster's.
	//
	// +optional
	// +kubebuilder:default=Scheduling
	Phase corev1alpha1.LogicalClusterPhaseType `json:"phase,omitempty"`

	// conditions are the current processing state of the Workspace.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions conditionsv1alpha1.Conditions `json:"conditions,omitempty"`

	// initializers must all be removed before the workspace is Ready.
	//
	// +optional
	// +listType=set
	Initializers []corev1alpha1.LogicalClusterInitializer `json:"initializers,omitempty"`

	// terminators must all be removed before the content of a deleted
	// workspace is removed.
	//
	// +optional
	// +listType=set
	Terminators []corev1alpha1.LogicalClusterTerminator `json:"terminators,omitempty"`
}

// GetConditions returns the conditions of the Workspace.
func (in *Workspace) GetConditions() conditionsv1alpha1.Conditions {
	return in.Status.Conditions
}

// SetConditions replaces the conditions of the Workspace.
func (in *Workspace) SetConditions(c conditionsv1alpha1.Conditions) {
	in.Status.Conditions = c
}

var _ conditionsv1alpha1.Setter = &Workspace{}

// WorkspaceList is a list of Workspaces.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type WorkspaceList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the Workspaces.
	Items []Workspace `json:"items"`
}
