package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
)

// ClusterCachedResourceFinalizer holds a ClusterCachedResource until its
// copies are gone from the cache server.
const ClusterCachedResourceFinalizer = "cache.kcp.io/clustercachedresource"

// ClusterCachedResource replicates the objects of one cluster-scoped
// resource of its workspace (from a CRD or an APIBinding) into the cache
// server, under an identity of its own.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ClusterCachedResource struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the desired state.
	//
	// +required
	Spec ClusterCachedResourceSpec `json:"spec"`

	// status holds the observed state.
	//
	// +optional
	Status ClusterCachedResourceStatus `json:"status,omitempty"`
}

// ClusterCachedResourceSpec defines the desired state of a
// ClusterCachedResource.
type ClusterCachedResourceSpec struct {
	// GroupVersionResource is the fully qualified name of the resource to
	// be published.
	GroupVersionResource `json:",inline"`

	// identity points to a secret that contains the identity in its "key"
	// data item. A secret named after the ClusterCachedResource is created
	// in kcp-system when none is given.
	//
	// +optional
	Identity *Identity `json:"identity,omitempty"`

	// labelSelector selects the objects to publish; all when unset.
	//
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// Identity names the secret holding the identity of a
// ClusterCachedResource.
type Identity struct {
	// secretRef is a reference to a secret that contains the identity in
	// its "key" data item.
	//
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// SecretReference names a secret in the workspace.
type SecretReference struct {
	// name is the name of the secret.
	//
	// +optional
	Name string `json:"name,omitempty"`
	// namespace is the namespace of the secret.
	//
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// GroupVersionResource identifies a resource.
type GroupVersionResource struct {
	// group is the name of an API group; empty for the core group.
	//
	// +optional
	Group string `json:"group,omitempty"`

	// version is the version of the resource.
	//
	// +optional
	Version string `json:"version,omitempty"`

	// resource is the plural name of the resource.
	//
	// +required
	Resource string `json:"resource"`
}

// ClusterCachedResourcePhaseType is the phase of a ClusterCachedResource.
type ClusterCachedResourcePhaseType string

// Phases of a ClusterCachedResource.
const (
	ClusterCachedResourcePhaseInitializing ClusterCachedResourcePhaseType = "Initializing"
	ClusterCachedResourcePhaseReady        ClusterCachedResourcePhaseType = "Ready"
	ClusterCachedResourcePhaseDeleting     ClusterCachedResourcePhaseType = "Deleting"
	ClusterCachedResourcePhaseDeleted      ClusterCachedResourcePhaseType = "Deleted"
)

// Conditions and reasons of ClusterCachedResources, as kcp names them.
const (
	// ClusterCachedResourceValid says whether the resource can be
	// published: it is served in the workspace and cluster-scoped.
	ClusterCachedResourceValid conditionsv1alpha1.ConditionType = "ResourceValid"
	// ReplicationStarted says whether the objects are being replicated.
	ReplicationStarted conditionsv1alpha1.ConditionType = "ReplicationStarted"
	// ClusterCachedResourceIdentityValid says whether the identity secret
	// could be read or generated.
	ClusterCachedResourceIdentityValid conditionsv1alpha1.ConditionType = "IdentityValid"

	IdentityGenerationFailedReason   = "IdentityGenerationFailed"
	IdentityVerificationFailedReason = "IdentityVerificationFailed"

	// ClusterCachedResourceInvalidReferenceReason: a reference to a
	// ClusterCachedResource is invalid.
	ClusterCachedResourceInvalidReferenceReason = "ClusterCachedResourceInvalidReference"
	// ClusterCachedResourceNotFoundReason: a referenced
	// ClusterCachedResource does not exist.
	ClusterCachedResourceNotFoundReason = "ClusterCachedResourceNotFound"
	// ResourceNotClusterScoped: the resource is namespaced.
	ResourceNotClusterScoped = "ResourceNotClusterScoped"
	// InternalErrorReason: something went wrong.
	InternalErrorReason = "InternalError"

	ClusterCachedResourceValidNoResources   = "NoResources"
	ClusterCachedResourceValidDeleting      = "Deleting"
	ClusterCachedResourceReplicationStarted = "Started"
)

// ClusterCachedResourceStatus defines the observed state of a
// ClusterCachedResource.
type ClusterCachedResourceStatus struct {
	// identityHash is the hex SHA-256 of the identity key.
	//
	// +optional
	IdentityHash string `json:"identityHash,omitempty"`

	// resourceCounts counts the selected objects in the workspace and
	// their copies in the cache server.
	//
	// +optional
	ResourceCounts *ResourceCount `json:"resourceCounts,omitempty"`

	// phase is Initializing, Ready, Deleting or Deleted.
	//
	// +optional
	Phase ClusterCachedResourcePhaseType `json:"phase,omitempty"`

	// conditions is the current processing state.
	//
	// +optional
	Conditions conditionsv1alpha1.Conditions `json:"conditions,omitempty"`
}

// ResourceCount is the number of objects that match the label selector, in
// the workspace and in the cache server.
type ResourceCount struct {
	// cache counts the copies in the cache server.
	Cache int `json:"cache"`
	// local counts the selected objects in the workspace.
	Local int `json:"local"`
}

// ClusterCachedResourceReference is a reference to a ClusterCachedResource.
type ClusterCachedResourceReference struct {
	// path is the logical cluster path of the ClusterCachedResource; empty
	// for the workspace of the referencing object.
	//
	// +optional
	Path string `json:"path,omitempty"`

	// name is the name of the ClusterCachedResource.
	//
	// +required
	Name string `json:"name"`
}

// ClusterCachedResourceList is a list of ClusterCachedResources.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ClusterCachedResourceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ClusterCachedResource `json:"items"`
}

// GetConditions returns the conditions of the ClusterCachedResource.
func (in *ClusterCachedResource) GetConditions() conditionsv1alpha1.Conditions {
	return in.Status.Conditions
}

// SetConditions sets the conditions of the ClusterCachedResource.
func (in *ClusterCachedResource) SetConditions(c conditionsv1alpha1.Conditions) {
	in.Status.Conditions = c
}

// ClusterCachedResourceEndpointSlice publishes the URLs of the read-only
// view of a ClusterCachedResource's copies, for an APIExport.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ClusterCachedResourceEndpointSlice struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec names the ClusterCachedResource and the APIExport.
	//
	// +optional
	Spec ClusterCachedResourceEndpointSliceSpec `json:"spec,omitempty"`

	// status holds the endpoints.
	//
	// +optional
	Status ClusterCachedResourceEndpointSliceStatus `json:"status,omitempty"`
}

// ClusterCachedResourceEndpointSliceSpec defines the desired state of a
// ClusterCachedResourceEndpointSlice.
type ClusterCachedResourceEndpointSliceSpec struct {
	// clusterCachedResource points to the ClusterCachedResource the slice
	// is for; it does not change.
	//
	// +required
	ClusterCachedResource ClusterCachedResourceReference `json:"clusterCachedResource"`

	// export points to the APIExport that exports this slice; it does not
	// change.
	//
	// +required
	APIExport ExportBindingReference `json:"export"`

	// partition names a Partition that filters the endpoints.
	//
	// +optional
	Partition string `json:"partition,omitempty"`
}

// ExportBindingReference is a reference to an APIExport by cluster path and
// name.
type ExportBindingReference struct {
	// path is the logical cluster path of the APIExport; empty for the
	// workspace of the referencing object.
	//
	// +optional
	Path string `json:"path,omitempty"`

	// name is the name of the APIExport.
	//
	// +required
	Name string `json:"name"`
}

// ClusterCachedResourceEndpointSliceStatus defines the observed state of a
// ClusterCachedResourceEndpointSlice.
type ClusterCachedResourceEndpointSliceStatus struct {
	// conditions apply to the slice.
	//
	// +optional
	Conditions conditionsv1alpha1.Conditions `json:"conditions,omitempty"`

	// endpoints are the URLs of the view of the copies.
	//
	// +optional
	// +listType=map
	// +listMapKey=url
	ClusterCachedResourceEndpoints []ClusterCachedResourceEndpoint `json:"endpoints,omitempty"`

	// shardSelector selects the shards of the partition.
	//
	// +optional
	ShardSelector string `json:"shardSelector,omitempty"`
}

// ClusterCachedResourceEndpoint is the URL of one view of the copies.
type ClusterCachedResourceEndpoint struct {
	// url is the URL of the view.
	//
	// +required
	URL string `json:"url"`
}

// GetConditions returns the conditions of the slice.
func (in *ClusterCachedResourceEndpointSlice) GetConditions() conditionsv1alpha1.Conditions {
	return in.Status.Conditions
}

// SetConditions sets the conditions of the slice.
func (in *ClusterCachedResourceEndpointSlice) SetConditions(c conditionsv1alpha1.Conditions) {
	in.Status.Conditions = c
}

// Conditions and reasons of ClusterCachedResourceEndpointSlices, as kcp
// names them.
const (
	// PartitionValid reflects the validity of the referenced Partition.
	PartitionValid conditionsv1alpha1.ConditionType = "PartitionValid"
	// APIExportValid reflects whether the referenced APIExport exists.
	APIExportValid conditionsv1alpha1.ConditionType = "APIExportValid"
	// ClusterCachedResourceEndpointSliceURLsReady reflects the readiness
	// of the URLs.
	ClusterCachedResourceEndpointSliceURLsReady conditionsv1alpha1.ConditionType = "EndpointURLsReady"

	PartitionInvalidReferenceReason = "PartitionInvalidReference"
	APIExportInvalidReferenceReason = "APIExportInvalidReference"
)

// ClusterCachedResourceEndpointSliceList is a list of
// ClusterCachedResourceEndpointSlices.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type ClusterCachedResourceEndpointSliceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []ClusterCachedResourceEndpointSlice `json:"items"`
}

// CachedObject is the envelope in which the cache server keeps the copy of
// one object a ClusterCachedResource publishes.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type CachedObject struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec holds the copy.
	Spec CachedObjectSpec `json:"spec"`
}

// CachedObjectSpec holds the copy of an object.
type CachedObjectSpec struct {
	// raw is the object as its workspace serves it.
	Raw runtime.RawExtension `json:"raw"`
}

// CachedObjectList is a list of CachedObjects.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type CachedObjectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []CachedObject `json:"items"`
}
