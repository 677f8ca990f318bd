package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
)

const (
	// LogicalClusterName is the name of the LogicalCluster singleton inside
	// every logical cluster.
	LogicalClusterName = "cluster"

	// LogicalClusterDeletionFinalizer is put on the LogicalCluster and kept
	// until the content of the logical cluster is deleted (RBAC last).
	LogicalClusterDeletionFinalizer = "core.kcp.io/logicalcluster-deletion"

	// LogicalClusterHasTerminatorsFinalizer is put on a LogicalCluster as long
	// as its status lists terminators.
	LogicalClusterHasTerminatorsFinalizer = "kcp.io/has-terminators"

	// LogicalClusterTypeAnnotationKey records the WorkspaceType of a logical
	// cluster on its LogicalCluster, as "<type's workspace path>:<type name>".
	LogicalClusterTypeAnnotationKey = "internal.tenancy.kcp.io/type"

	// RequiredGroupsAnnotationKey lists the groups a user needs to access a
	// logical cluster: ";" separates alternatives, "," separates groups that
	// are all required.
	RequiredGroupsAnnotationKey = "authorization.kcp.io/required-groups"

	// MaxTotalObjectsAnnotationKey limits the number of objects a logical
	// cluster may hold.
	MaxTotalObjectsAnnotationKey = "core.kcp.io/max-total-objects"

	// MaxWatchesPerUserAnnotationKey, MaxRequestBodyBytesAnnotationKey,
	// MaxRequestsInFlightAnnotationKey and MaxRequestTimeShareAnnotationKey
	// bound the watches one user of a logical cluster holds open, the body
	// of a request to it, the requests to it running at once on its shard
	// and the seconds of request time per second they take there on
	// average (pkg/fairness); shardplane's, not kcp's.
	MaxWatchesPerUserAnnotationKey   = "limits.shardplane.io/max-watches-per-user"
	MaxRequestBodyBytesAnnotationKey = "limits.shardplane.io/max-request-body-bytes"
	MaxRequestsInFlightAnnotationKey = "limits.shardplane.io/max-requests-in-flight"
	MaxRequestTimeShareAnnotationKey = "limits.shardplane.io/max-request-time-share"

	// ShardAnnotationKey names the shard a Workspace was scheduled to; kcp's
	// client libraries read it.
	ShardAnnotationKey = "core.kcp.io/shard"

	// ExperimentalWorkspaceOwnerAnnotationKey holds the user info of the
	// creator of a workspace, as JSON.
	ExperimentalWorkspaceOwnerAnnotationKey = "experimental.tenancy.kcp.io/owner"
)

// LogicalClusterPhaseType is the phase of a logical cluster (and of its
// Workspace).
//
// +kubebuilder:validation:Enum=Scheduling;Initializing;Ready;Unavailable;Terminating;Deleting
type LogicalClusterPhaseType string

const (
	// LogicalClusterPhaseScheduling means that the logical cluster has not
	// been placed on a shard yet. It is the default phase.
	LogicalClusterPhaseScheduling LogicalClusterPhaseType = "Scheduling"
	// LogicalClusterPhaseInitializing means that initializers are still
	// listed in the status.
	LogicalClusterPhaseInitializing LogicalClusterPhaseType = "Initializing"
	// LogicalClusterPhaseReady means that the logical cluster can be used.
	LogicalClusterPhaseReady LogicalClusterPhaseType = "Ready"
	// LogicalClusterPhaseUnavailable means that the logical cluster exists
	// but cannot be served at the moment.
	LogicalClusterPhaseUnavailable LogicalClusterPhaseType = "Unavailable"
	// LogicalClusterPhaseTerminating means that the logical cluster is being
	// deleted and terminators are still listed in the status.
	LogicalClusterPhaseTerminating LogicalClusterPhaseType = "Terminating"
	// LogicalClusterPhaseDeleting means that the content of the logical
	// cluster is being deleted.
	LogicalClusterPhaseDeleting LogicalClusterPhaseType = "Deleting"
)

// LogicalClusterInitializer names a controller that must finish its work on
// a new logical cluster before the cluster becomes Ready. Initializers of a
// WorkspaceType are spelled "<type's cluster>:<type name>"; the system's own
// start with "system:".
type LogicalClusterInitializer string

// LogicalClusterTerminator names a controller that must finish its work on a
// logical cluster being deleted before its content is removed. It is spelled
// like an initializer.
type LogicalClusterTerminator string

// LogicalCluster describes a logical cluster from inside it. It is used to
// authorize requests to the logical cluster and to track its state. It is a
// singleton, always named "cluster".
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=kcp
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="The current phase (e.g. Scheduling, Initializing, Ready, Deleting)"
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.URL`,description="URL to access the logical cluster"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type LogicalCluster struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec LogicalClusterSpec `json:"spec,omitempty"`

	// +optional
	Status LogicalClusterStatus `json:"status,omitempty"`
}

// LogicalClusterSpec is the desired state of a LogicalCluster.
type LogicalClusterSpec struct {
	// directlyDeletable says that the logical cluster may be deleted from
	// inside, by deleting its LogicalCluster object.
	//
	// +optional
	DirectlyDeletable bool `json:"directlyDeletable,omitempty"`

	// owner is the object that controls the life-cycle of this logical
	// cluster, usually the Workspace in the parent. When the LogicalCluster is
	// deleted, the finalizer core.kcp.io/logicalcluster is removed from the
	// owner.
	//
	// +optional
	Owner *LogicalClusterOwner `json:"owner,omitempty"`

	// initializers are set on creation by the system and copied to the status
	// when initialization starts.
	//
	// +optional
	// +listType=set
	Initializers []LogicalClusterInitializer `json:"initializers,omitempty"`

	// terminators are set on creation by the system and copied to the status
	// when termination starts.
	//
	// +optional
	// +listType=set
	Terminators []LogicalClusterTerminator `json:"terminators,omitempty"`
}

// LogicalClusterOwner refers to the object that controls the life-cycle of a
// LogicalCluster.
type LogicalClusterOwner struct {
	// apiVersion is the group and version of the owner.
	//
	// +required
	APIVersion string `json:"apiVersion"`

	// resource is the API resource of the owner.
	//
	// +required
	Resource string `json:"resource"`

	// name is the name of the owner.
	//
	// +required
	Name string `json:"name"`

	// namespace is the namespace of the owner, if it is namespaced.
	//
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// cluster is the logical cluster the owner lives in.
	//
	// +required
	Cluster string `json:"cluster"`

	// uid is the UID of the owner.
	//
	// +required
	UID types.UID `json:"uid"`
}

// LogicalClusterStatus is the observed state of a LogicalCluster.
type LogicalClusterStatus struct {
	// URL is the address under which the logical cluster is served, usable
	// with standard Kubernetes clients.
	//
	// +optional
	URL string `json:"URL,omitempty"`

	// phase of the logical cluster.
	//
	// +optional
	// +kubebuilder:default=Scheduling
	Phase LogicalClusterPhaseType `json:"phase,omitempty"`

	// conditions are the current processing state of the LogicalCluster.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions conditionsv1alpha1.Conditions `json:"conditions,omitempty"`

	// initializers must all be removed, each by its controller, before the
	// logical cluster leaves the Initializing phase.
	//
	// +optional
	// +listType=set
	Initializers []LogicalClusterInitializer `json:"initializers,omitempty"`

	// terminators must all be removed, each by its controller, before the
	// content of a deleted logical cluster is removed.
	//
	// +optional
	// +listType=set
	Terminators []LogicalClusterTerminator `json:"terminators,omitempty"`
}

// GetConditions returns the conditions of the LogicalCluster.
func (in *LogicalCluster) GetConditions() conditionsv1alpha1.Conditions {
	return in.Status.Conditions
}

// SetConditions replaces the conditions of the LogicalCluster.
func (in *LogicalCluster) SetConditions(c conditionsv1alpha1.Conditions) {
	in.Status.Conditions = c
}

var _ conditionsv1alpha1.Setter = &LogicalCluster{}

// LogicalClusterList is a list of LogicalClusters.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type LogicalClusterList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the LogicalClusters.
	Items []LogicalCluster `json:"items"`
}
