package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LogicalClusterDump asks the shard that serves a logical cluster for a
// page of its stored objects, as stored; the destination of a move creates
// one in the cluster it copies and reads the page from the response.
// Nothing is persisted.
//
// +genclient
// +genclient:nonNamespaced
// +genclient:onlyVerbs=create
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type LogicalClusterDump struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec LogicalClusterDumpSpec `json:"spec,omitempty"`
	// +optional
	Status LogicalClusterDumpStatus `json:"status,omitempty"`
}

// LogicalClusterDumpSpec says which page to return; the cluster is the one
// the request is made in.
type LogicalClusterDumpSpec struct {
	// continue is the status.continue of the previous page; empty for the
	// first. All pages of one dump read the same snapshot.
	//
	// +optional
	Continue string `json:"continue,omitempty"`

	// limit bounds the stored keys a page scans; 0 for the server's default.
	//
	// +optional
	Limit int64 `json:"limit,omitempty"`

	// maxBytes bounds the bytes of the values a page returns; 0 for no bound.
	//
	// +optional
	MaxBytes int64 `json:"maxBytes,omitempty"`
}

// LogicalClusterDumpStatus is one page of the dump.
type LogicalClusterDumpStatus struct {
	// entries are the cluster's stored objects of this page, in key order.
	//
	// +optional
	// +listType=atomic
	Entries []EtcdEntry `json:"entries,omitempty"`

	// continue is the spec.continue of the next page; empty on the last.
	//
	// +optional
	Continue string `json:"continue,omitempty"`
}

// EtcdEntry is one stored object.
type EtcdEntry struct {
	// key is the storage key without the shard's etcd prefix.
	Key string `json:"key"`

	// value is the object as stored (base64 in JSON).
	Value []byte `json:"value"`
}
