package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of this package.
const GroupName = "apis.kcp.io"

// SchemeGroupVersion is the group and version of this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// InternalGroupVersion is the internal version of the group.
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

// InternalTypes are the objects of this package that are also the internal
// version of their kind: the kinds that exist only in v1alpha1.
func InternalTypes() []runtime.Object {
	return []runtime.Object{
		&APIResourceSchema{},
		&APIResourceSchemaList{},
		&APIExportEndpointSlice{},
		&APIExportEndpointSliceList{},
	}
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, append(InternalTypes(),
		&APIExport{},
		&APIExportList{},
		&APIBinding{},
		&APIBindingList{},
	)...)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
