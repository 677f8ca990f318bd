package cacheclient

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kind is one kind the cache server stores replicas of, in the one version
// shards replicate it in.
type Kind struct {
	// Resource is the group, version and plural resource name.
	Resource schema.GroupVersionResource
	// Kind and Singular name one object.
	Kind     string
	Singular string
	// Namespaced kinds live in namespaces of their logical cluster.
	Namespaced bool
}

// GroupVersionKind returns the kind's group, version and kind.
func (k Kind) GroupVersionKind() schema.GroupVersionKind {
	return k.Resource.GroupVersion().WithKind(k.Kind)
}

// ListGroupVersionKind returns the kind of a list of k.
func (k Kind) ListGroupVersionKind() schema.GroupVersionKind {
	return k.Resource.GroupVersion().WithKind(k.Kind + "List")
}

// Kinds are what shards replicate: what a workspace on one shard needs from
// a workspace on another. The admission configuration (webhook
// configurations, admission policies and their bindings) is that of
// workspaces holding an APIExport: it judges the bound resources of
// consumers on other shards. apis.kcp.io APIExports are served as v1alpha2,
// the version shards store and read them in; a schema-less copy cannot be
// converted to another version.
var Kinds = []Kind{
	{Resource: schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha2", Resource: "apiexports"}, Kind: "APIExport", Singular: "apiexport"},
	{Resource: schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha1", Resource: "apiresourceschemas"}, Kind: "APIResourceSchema", Singular: "apiresourceschema"},
	{Resource: schema.GroupVersionResource{Group: "apis.kcp.io", Version: "v1alpha1", Resource: "apiexportendpointslices"}, Kind: "APIExportEndpointSlice", Singular: "apiexportendpointslice"},
	{Resource: schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspacetypes"}, Kind: "WorkspaceType", Singular: "workspacetype"},
	{Resource: schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspaceauthenticationconfigurations"}, Kind: "WorkspaceAuthenticationConfiguration", Singular: "workspaceauthenticationconfiguration"},
	{Resource: schema.GroupVersionResource{Group: "core.kcp.io", Version: "v1alpha1", Resource: "shards"}, Kind: "Shard", Singular: "shard"},
	{Resource: schema.GroupVersionResource{Group: "core.kcp.io", Version: "v1alpha1", Resource: "logicalclusters"}, Kind: "LogicalCluster", Singular: "logicalcluster"},
	{Resource: schema.GroupVersionResource{Group: "migration.kcp.io", Version: "v1alpha1", Resource: "logicalclustermigrations"}, Kind: "LogicalClusterMigration", Singular: "logicalclustermigration"},
	{Resource: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, Kind: "ClusterRole", Singular: "clusterrole"},
	{Resource: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}, Kind: "ClusterRoleBinding", Singular: "clusterrolebinding"},
	{Resource: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, Kind: "Role", Singular: "role", Namespaced: true},
	{Resource: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, Kind: "RoleBinding", Singular: "rolebinding", Namespaced: true},
	{Resource: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}, Kind: "ValidatingWebhookConfiguration", Singular: "validatingwebhookconfiguration"},
	{Resource: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}, Kind: "MutatingWebhookConfiguration", Singular: "mutatingwebhookconfiguration"},
	{Resource: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}, Kind: "ValidatingAdmissionPolicy", Singular: "validatingadmissionpolicy"},
	{Resource: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}, Kind: "ValidatingAdmissionPolicyBinding", Singular: "validatingadmissionpolicybinding"},
	{Resource: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"}, Kind: "MutatingAdmissionPolicy", Singular: "mutatingadmissionpolicy"},
	{Resource: schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicybindings"}, Kind: "MutatingAdmissionPolicyBinding", Singular: "mutatingadmissionpolicybinding"},
	// ClusterCachedResources and their endpoint slices: the replication
	// view of any shard serves the copies a workspace on another publishes.
	{Resource: schema.GroupVersionResource{Group: "cache.kcp.io", Version: "v1alpha1", Resource: "clustercachedresources"}, Kind: "ClusterCachedResource", Singular: "clustercachedresource"},
	{Resource: schema.GroupVersionResource{Group: "cache.kcp.io", Version: "v1alpha1", Resource: "clustercachedresourceendpointslices"}, Kind: "ClusterCachedResourceEndpointSlice", Singular: "clustercachedresourceendpointslice"},
	CachedObjects,
}

// CachedObjects are the copies of the objects ClusterCachedResources
// publish, each wrapped in a cache.kcp.io CachedObject: the cache server
// serves kinds it knows, and the published resources are anybody's.
var CachedObjects = Kind{Resource: schema.GroupVersionResource{Group: "cache.kcp.io", Version: "v1alpha1", Resource: "cachedobjects"}, Kind: "CachedObject", Singular: "cachedobject"}

// Labels and annotations of a CachedObject.
const (
	// CachedResourceLabel names the ClusterCachedResource a copy belongs
	// to, in the copy's logical cluster.
	CachedResourceLabel = "cache.kcp.io/cached-resource"
	// IdentityHashAnnotation is the identity hash of that
	// ClusterCachedResource.
	IdentityHashAnnotation = "cache.kcp.io/identity-hash"
	// ResourceAnnotation is the copied object's resource as
	// <resource>.<version>.<group>.
	ResourceAnnotation = "cache.kcp.io/resource"
)

// CachedObjectName is the name of the copy of object name published by the
// ClusterCachedResource cachedResource.
func CachedObjectName(cachedResource, name string) string {
	return cachedResource + "." + name
}

// KindOf returns the kind of Kinds with gvr's group and resource.
func KindOf(gvr schema.GroupVersionResource) (Kind, bool) {
	for _, k := range Kinds {
		if k.Resource.GroupResource() == gvr.GroupResource() {
			return k, true
		}
	}
	return Kind{}, false
}
