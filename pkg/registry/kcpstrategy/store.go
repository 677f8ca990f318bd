package kcpstrategy

import (
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"

	"github.com/shardplane/shardplane/pkg/registry/status"
)

// Strategy is what the main resource needs from a kind's strategy: how
// objects are created, updated and deleted, and which fields a write of the
// main resource resets.
type Strategy interface {
	rest.RESTCreateStrategy
	rest.RESTUpdateStrategy
	rest.RESTDeleteStrategy
	rest.ResetFieldsStrategy
}

// Kind describes a cluster-scoped kcp resource for NewREST.
type Kind struct {
	// NewFunc returns an empty object of the kind.
	NewFunc func() runtime.Object
	// NewListFunc returns an empty list of the kind.
	NewListFunc func() runtime.Object
	// Resource is the plural resource, e.g. shards.core.kcp.io.
	Resource schema.GroupResource
	// SingularResource is the singular resource, e.g. shard.core.kcp.io.
	SingularResource schema.GroupResource
	// Strategy creates, updates and deletes objects of the main resource.
	Strategy Strategy
	// StatusStrategy updates the status subresource.
	StatusStrategy status.Strategy
	// TableColumns are the columns printed after NAME.
	TableColumns []apiextensionsv1.CustomResourceColumnDefinition
}

// REST serves a cluster-scoped kcp resource; the resource is in the
// category "kcp".
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.CategoriesProvider   = &REST{}
	_ rest.SingularNameProvider = &REST{}
	_ rest.StandardStorage      = &REST{}
	_ rest.ResetFieldsStrategy  = &REST{}
	_ rest.TableConvertor       = &REST{}
	_ rest.Scoper               = &REST{}
)

// Categories puts the resource into "kubectl get kcp".
func (*REST) Categories() []string { return []string{"kcp"} }

// NewREST returns the storage of kind and of its status subresource,
// selectable by labels and metadata.name.
func NewREST(kind Kind, optsGetter generic.RESTOptionsGetter) (*REST, *status.REST, error) {
	table, err := tableconvertor.New(kind.TableColumns)
	if err != nil {
		return nil, nil, err
	}
	store := &genericregistry.Store{
		NewFunc:                   kind.NewFunc,
		NewListFunc:               kind.NewListFunc,
		PredicateFunc:             Matcher,
		DefaultQualifiedResource:  kind.Resource,
		SingularQualifiedResource: kind.SingularResource,

		CreateStrategy:      kind.Strategy,
		UpdateStrategy:      kind.Strategy,
		DeleteStrategy:      kind.Strategy,
		ResetFieldsStrategy: kind.Strategy,

		TableConvertor: table,
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, nil, err
	}
	return &REST{store}, status.NewREST(store, kind.StatusStrategy), nil
}

// GetAttrs returns the labels and the selectable fields (metadata.name) of
// a cluster-scoped object.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("expected an object with metadata, got %T: %w", obj, err)
	}
	objectMeta := &metav1.ObjectMeta{Name: accessor.GetName(), Namespace: accessor.GetNamespace()}
	return labels.Set(accessor.GetLabels()), generic.ObjectMetaFieldsSet(objectMeta, false), nil
}

// Matcher selects cluster-scoped objects by labels and fields
// (metadata.name).
func Matcher(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
