package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
)

const (
	// RootShard is the name of the shard that hosts the root logical
	// cluster.
	RootShard = "root"

	// ShardNameLabel carries the name of a Shard on the Shard itself, so that
	// workspaces can select a shard by name.
	ShardNameLabel = "name"

	// RegionLabel is the region of a Shard; it is copied to the workspaces
	// scheduled onto it.
	RegionLabel = "region"

	// ShardUnschedulableAnnotationKey on a Shard keeps new workspaces off
	// it, whatever its value (cordoning).
	ShardUnschedulableAnnotationKey = "experimental.core.kcp.io/unschedulable"

	// ShardDrainAnnotationKey on a cordoned Shard asks the root shard to
	// move every workspace off it (ours; kcp has no drain). Its value is
	// "true"; removing it stops the drain, moves under way finish.
	ShardDrainAnnotationKey = "drain.shardplane.io/requested"
	// ShardDrainMaxMovesAnnotationKey on a Shard bounds the moves a drain
	// runs at once (a positive integer; unset: the controller's default).
	ShardDrainMaxMovesAnnotationKey = "drain.shardplane.io/max-moves"

	// ResourceWorkspaces is the resource of spec.resourceLimits and
	// status.used: the logical clusters a shard hosts.
	ResourceWorkspaces corev1.ResourceName = "workspaces"
)

// Conditions and reasons of a Shard.
const (
	// ShardSchedulable is True when new workspaces may be placed on the
	// shard, False with reason ShardReasonCordoned when the shard saw the
	// unschedulable annotation. The shard sets it itself: the condition
	// acknowledges a cordon.
	ShardSchedulable conditionsv1alpha1.ConditionType = "Schedulable"
	// ShardReasonCordoned: the Shard carries ShardUnschedulableAnnotationKey.
	ShardReasonCordoned = "Cordoned"

	// ShardResourceLimitsApplied reports the limits the shard enforces, in
	// its message ("soft/hard: workspaces=10/20", "no limits configured").
	ShardResourceLimitsApplied conditionsv1alpha1.ConditionType = "ResourceLimitsApplied"
	// ShardReasonInvalidResourceLimits: a soft limit is not below its hard
	// limit, so it never takes effect.
	ShardReasonInvalidResourceLimits = "InvalidResourceLimits"

	// ShardReady is True while the shard reports its status every heartbeat
	// interval, False with reason ShardReasonHeartbeatMissed once the root
	// shard saw no report for longer than its heartbeat timeout. kcp has no
	// such condition.
	ShardReady conditionsv1alpha1.ConditionType = "Ready"
	// ShardReasonHeartbeatMissed: status.lastHeartbeatTime is too old.
	ShardReasonHeartbeatMissed = "HeartbeatMissed"

	// ShardDrained reports a drain (ShardDrainAnnotationKey): False while
	// logical clusters are left on the shard, its reason saying what holds
	// the drain, True once none is left and the Shard may be deleted.
	ShardDrained conditionsv1alpha1.ConditionType = "Drained"
	// ShardReasonDraining: moves are under way; the message counts them.
	ShardReasonDraining = "Draining"
	// ShardReasonDrainNotCordoned: a drain needs the shard cordoned first.
	ShardReasonDrainNotCordoned = "NotCordoned"
	// ShardReasonDrainBlocked: no other shard takes a workspace, or moves
	// failed; the message says which.
	ShardReasonDrainBlocked = "DrainBlocked"
)

// Shard describes a server on which logical clusters live. Shards are
// registered in the root logical cluster.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=kcp
// +kubebuilder:printcolumn:name="Region",type=string,JSONPath=`.metadata.labels['region']`,description="The region this shard is in"
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.baseURL`,description="URL to connect to the shard directly"
// +kubebuilder:printcolumn:name="External URL",type=string,JSONPath=`.spec.externalURL`,description="URL written into the workspaces of the shard"
// +kubebuilder:printcolumn:name="Schedulable",type=string,JSONPath=`.status.conditions[?(@.type=="Schedulable")].status`,description="Whether new workspaces are scheduled onto this shard"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Whether the shard reports its status"
// +kubebuilder:printcolumn:name="Workspaces",type=string,JSONPath=`.status.used.workspaces`,description="Logical clusters on the shard"
// +kubebuilder:printcolumn:name="Soft",type=string,JSONPath=`.spec.resourceLimits.soft.workspaces`,description="Soft limit of logical clusters"
// +kubebuilder:printcolumn:name="Hard",type=string,JSONPath=`.spec.resourceLimits.hard.workspaces`,description="Hard limit of logical clusters"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type Shard struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec ShardSpec `json:"spec,omitempty"`

	// +optional
	Status ShardStatus `json:"status,omitempty"`
}

// ShardSpec is the desired state of a Shard.
type ShardSpec struct {
	// baseURL is the address under which other components (the front-proxy,
	// other shards) reach the shard directly.
	//
	// +required
	// +kubebuilder:validation:Format=uri
	BaseURL string `json:"baseURL"`

	// externalURL is the address written into the URLs of the workspaces on
	// this shard, usually the front-proxy's. Defaults to baseURL.
	//
	// +optional
	// +kubebuilder:validation:Format=uri
	ExternalURL string `json:"externalURL,omitempty"`

	// virtualWorkspaceURL is the address of the virtual workspace server that
	// belongs to this shard. Defaults to baseURL.
	//
	// +optional
	// +kubebuilder:validation:Format=uri
	VirtualWorkspaceURL string `json:"virtualWorkspaceURL,omitempty"`

	// resourceLimits caps what the workspace scheduler places on the shard;
	// unset or 0 means unlimited.
	//
	// +optional
	ResourceLimits *ShardResourceLimits `json:"resourceLimits,omitempty"`
}

// ShardResourceLimits are the soft and hard limits of a shard, by resource
// (ResourceWorkspaces): at its soft limit the scheduler prefers other
// shards, at its hard limit it places nothing more there.
type ShardResourceLimits struct {
	// soft limits: shards at or over them are picked only when every
	// candidate is.
	//
	// +optional
	Soft corev1.ResourceList `json:"soft,omitempty"`

	// hard limits: shards at or over them receive no new workspaces.
	//
	// +optional
	Hard corev1.ResourceList `json:"hard,omitempty"`
}

// ShardStatus is the observed state of a Shard.
type ShardStatus struct {
	// capacity is the set of integer resources that logical clusters can be
	// scheduled into.
	//
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`

	// used is what the shard hosts, by resource (ResourceWorkspaces: its
	// logical clusters, system ones included), as the shard last reported.
	//
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`

	// lastHeartbeatTime is when the shard last reported its status; the
	// root shard marks it not Ready when this grows too old.
	//
	// +optional
	LastHeartbeatTime *metav1.Time `json:"lastHeartbeatTime,omitempty"`

	// conditions are the current processing state of the Shard.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions conditionsv1alpha1.Conditions `json:"conditions,omitempty"`
}

// GetConditions returns the conditions of the Shard.
func (in *Shard) GetConditions() conditionsv1alpha1.Conditions {
	return in.Status.Conditions
}

// SetConditions replaces the conditions of the Shard.
func (in *Shard) SetConditions(c conditionsv1alpha1.Conditions) {
	in.Status.Conditions = c
}

var _ conditionsv1alpha1.Setter = &Shard{}

// WorkspaceLimits returns the soft and hard limits of logical clusters on
// the shard; 0 for a limit that is unset, zero or negative (unlimited).
func (in *Shard) WorkspaceLimits() (soft, hard int64) {
	if in.Spec.ResourceLimits == nil {
		return 0, 0
	}
	return positive(in.Spec.ResourceLimits.Soft, ResourceWorkspaces), positive(in.Spec.ResourceLimits.Hard, ResourceWorkspaces)
}

// UsedWorkspaces returns the number of logical clusters the shard last
// reported hosting.
func (in *Shard) UsedWorkspaces() int64 {
	return positive(in.Status.Used, ResourceWorkspaces)
}

func positive(list corev1.ResourceList, name corev1.ResourceName) int64 {
	q, ok := list[name]
	if !ok || q.Sign() <= 0 {
		return 0
	}
	return q.Value()
}

// ShardList is a list of Shards.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ShardList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the Shards.
	Items []Shard `json:"items"`
}
