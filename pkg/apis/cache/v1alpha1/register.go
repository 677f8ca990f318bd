package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of this package.
const GroupName = "cache.kcp.io"

// SchemeGroupVersion is the group and version of this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// InternalGroupVersion is the internal version of the group, under which the
// same Go types are registered by AddToSchemeAsInternal.
var InternalGroupVersion = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}

// Kind takes an unqualified kind and returns a group-qualified GroupKind.
func Kind(kind string) schema.GroupKind {
	return SchemeGroupVersion.WithKind(kind).GroupKind()
}

// Resource takes an unqualified resource and returns a group-qualified
// GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

var (
	// SchemeBuilder collects the functions that add this package's types and
	// defaulting functions to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes, RegisterDefaults)
	// AddToScheme registers the v1alpha1 types, metav1's options for the
	// group version and the defaulting functions.
	AddToScheme = SchemeBuilder.AddToScheme
)

// knownTypes lists the objects of the group; one list so that the external
// and the internal registration cannot drift apart.
func knownTypes() []runtime.Object {
	return []runtime.Object{
		&ClusterCachedResource{},
		&ClusterCachedResourceList{},
		&ClusterCachedResourceEndpointSlice{},
		&ClusterCachedResourceEndpointSliceList{},
		&CachedObject{},
		&CachedObjectList{},
	}
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, knownTypes()...)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

// AddToSchemeAsInternal registers the same Go types under the internal
// version of the group. A generic registry store works on internal objects;
// since both versions share one Go type, converting between them is a copy.
func AddToSchemeAsInternal(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(InternalGroupVersion, knownTypes()...)
	return nil
}

// Install registers the group as both v1alpha1 and internal version, with
// defaults, and makes v1alpha1 the preferred version.
func Install(scheme *runtime.Scheme) error {
	if err := AddToScheme(scheme); err != nil {
		return err
	}
	if err := AddToSchemeAsInternal(scheme); err != nil {
		return err
	}
	return scheme.SetVersionPriority(SchemeGroupVersion)
}
