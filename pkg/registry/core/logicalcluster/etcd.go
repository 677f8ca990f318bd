package logicalcluster

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	corev1alpha1 "github.com/kplane-dev/kplane/pkg/apis/core/v1alpha1"
	"github.com/kplane-dev/kplane/pkg/registry/status"
)

// REST serves logicalclusters.
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

// Categories puts logicalclusters into "kubectl get kcp".
func (*REST) Categories() []string { return []string{"kcp"} }

// TableColumns are the columns of "kubectl get logicalclusters" after NAME.
var TableColumns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "Phase", Type: "string", JSONPath: ".status.phase", Description: "The current phase (e.g. Scheduling, Initializing, Ready, Deleting)"},
	{Name: "URL", Type: "string", JSONPath: ".status.URL", Description: "URL to access the logical cluster"},
	{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp", Description: "Time since the object was created"},
}

// NewTableConvertor prints LogicalClusters with TableColumns.
func NewTableConvertor() (rest.TableConvertor, error) {
	return tableconvertor.New(TableColumns)
}

// NewREST returns the storage of logicalclusters and of their status
// subresource. typer must know the core.kcp.io types.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*REST, *status.REST, error) {
	table, err := NewTableConvertor()
	if err != nil {
		return nil, nil, err
	}
	strategy := NewStrategy(typer)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &corev1alpha1.LogicalCluster{} },
		NewListFunc:               func() runtime.Object { return &corev1alpha1.LogicalClusterList{} },
		PredicateFunc:             Matcher,
		DefaultQualifiedResource:  corev1alpha1.Resource("logicalclusters"),
		SingularQualifiedResource: corev1alpha1.Resource("logicalcluster"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: table,
	}
	if err := store.CompleteWithOptions(&generic.StoreOptions{RESTOptions: optsGetter, AttrFunc: GetAttrs}); err != nil {
		return nil, nil, err
	}
	return &REST{store}, status.NewREST(store, NewStatusStrategy(strategy)), nil
}
