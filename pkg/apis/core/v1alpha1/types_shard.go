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
	// it, whatever its value.
	ShardUnschedulableAnnotationKey = "experimental.core.kcp.io/unschedulable"
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
}

// ShardStatus is the observed state of a Shard.
type ShardStatus struct {
	// capacity is the set of integer resources that logical clusters can be
	// scheduled into.
	//
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`

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
