package apiresourceschema

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
)

// REST serves apiresourceschemas, in the category "kcp".
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.CategoriesProvider   = &REST{}
	_ rest.SingularNameProvider = &REST{}
	_ rest.StandardStorage      = &REST{}
)

// Categories puts the resource into "kubectl get kcp".
func (*REST) Categories() []string { return []string{"kcp"} }

// TableColumns are the columns of "kubectl get apiresourceschemas" after
// NAME, kcp's.
var TableColumns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp", Description: "Time since the object was created"},
}

// NewREST returns the storage of apiresourceschemas. typer must know the
// apis.kcp.io types.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*REST, error) {
	table, err := tableconvertor.New(TableColumns)
	if err != nil {
		return nil, err
	}
	strategy := NewStrategy(typer)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &apisv1alpha1.APIResourceSchema{} },
		NewListFunc:               func() runtime.Object { return &apisv1alpha1.APIResourceSchemaList{} },
		PredicateFunc:             kcpstrategy.Matcher,
		DefaultQualifiedResource:  apisv1alpha1.Resource("apiresourceschemas"),
		SingularQualifiedResource: apisv1alpha1.Resource("apiresourceschema"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: table,
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: kcpstrategy.GetAttrs}); err != nil {
		return nil, err
	}
	return &REST{store}, nil
}
