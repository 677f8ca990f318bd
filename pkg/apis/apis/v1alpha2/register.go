package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
)

// GroupName is the API group of this package.
const GroupName = apisv1alpha1.GroupName

// SchemeGroupVersion is the group and version of this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha2"}

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
	// SchemeBuilder collects the functions that add this package's types,
	// defaulting and conversion functions to a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes, RegisterDefaults, RegisterConversions)
	// AddToScheme registers the v1alpha2 types, metav1's options for the
	// group version, the defaulting functions and the conversions from and
	// to v1alpha1.
	AddToScheme = SchemeBuilder.AddToScheme
)

func knownTypes() []runtime.Object {
	return []runtime.Object{
		&APIExport{},
		&APIExportList{},
		&APIBinding{},
		&APIBindingList{},
	}
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, knownTypes()...)
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}

// AddToSchemeAsInternal registers the internal version of the group: the
// v1alpha2 Go types of APIExport and APIBinding and the v1alpha1 Go types of
// the kinds only v1alpha1 has. A generic registry store works on internal
// objects; converting to the version that shares the Go type is a copy.
func AddToSchemeAsInternal(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(apisv1alpha1.InternalGroupVersion, append(knownTypes(), apisv1alpha1.InternalTypes()...)...)
	return nil
}

// Install registers apis.kcp.io in v1alpha1, v1alpha2 and the internal
// version, with defaults and conversions, preferring v1alpha2.
func Install(scheme *runtime.Scheme) error {
	if err := apisv1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := AddToScheme(scheme); err != nil {
		return err
	}
	if err := AddToSchemeAsInternal(scheme); err != nil {
		return err
	}
	return scheme.SetVersionPriority(SchemeGroupVersion, apisv1alpha1.SchemeGroupVersion)
}
