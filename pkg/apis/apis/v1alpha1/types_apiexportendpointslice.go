package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
)

// Condition types and reasons of an APIExportEndpointSlice, besides
// APIExportValid.
const (
	// PartitionValid says whether the referenced Partition is valid.
	PartitionValid conditionsv1alpha1.ConditionType = "PartitionValid"
	// APIExportEndpointSliceURLsReady says whether the endpoints are known.
	APIExportEndpointSliceURLsReady conditionsv1alpha1.ConditionType = "EndpointURLsReady"
	// PartitionInvalidReferenceReason is the PartitionValid reason of an
	// invalid Partition reference.
	PartitionInvalidReferenceReason = "PartitionInvalidReference"
)

// APIExportEndpointSlice lists the URLs at which the virtual workspaces of an
// APIExport serve it, optionally filtered by a Partition.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=kcp
// +kubebuilder:printcolumn:name="Export",type="string",JSONPath=".spec.export.name"
// +kubebuilder:printcolumn:name="Partition",type="string",JSONPath=".spec.partition"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp"
type APIExportEndpointSlice struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the APIExport and an optional partition.
	Spec APIExportEndpointSliceSpec `json:"spec,omitempty"`

	// status lists the endpoints.
	//
	// +optional
	Status APIExportEndpointSliceStatus `json:"status,omitempty"`
}

// APIExportEndpointSliceSpec names the APIExport of an
// APIExportEndpointSlice.
type APIExportEndpointSliceSpec struct {
	// export is the APIExport; it cannot change.
	//
	// +required
	APIExport ExportBindingReference `json:"export"`

	// partition is the name of a Partition that filters the endpoints.
	//
	// +optional
	Partition string `json:"partition,omitempty"`
}

// APIExportEndpointSliceStatus is the observed state of an
// APIExportEndpointSlice.
type APIExportEndpointSliceStatus struct {
	// conditions are the current state of the slice.
	//
	// +optional
	Conditions conditionsv1alpha1.Conditions `json:"conditions,omitempty"`

	// endpoints are the URLs of the APIExport's virtual workspaces.
	//
	// +optional
	// +listType=map
	// +listMapKey=url
	APIExportEndpoints []APIExportEndpoint `json:"endpoints,omitempty"`

	// shardSelector selects the shards in scope of the partition.
	//
	// +optional
	ShardSelector string `json:"shardSelector,omitempty"`
}

// APIExportEndpoint is the URL of one shard's virtual workspace of an
// APIExport.
type APIExportEndpoint struct {
	// url is the endpoint URL.
	//
	// +required
	URL string `json:"url"`
}

// GetConditions returns the conditions of the slice.
func (in *APIExportEndpointSlice) GetConditions() conditionsv1alpha1.Conditions {
	return in.Status.Conditions
}

// SetConditions replaces the conditions of the slice.
func (in *APIExportEndpointSlice) SetConditions(c conditionsv1alpha1.Conditions) {
	in.Status.Conditions = c
}

// APIExportEndpointSliceList is a list of APIExportEndpointSlices.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type APIExportEndpointSliceList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the APIExportEndpointSlices.
	Items []APIExportEndpointSlice `json:"items"`
}
