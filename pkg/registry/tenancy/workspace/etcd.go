package workspace

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	tenancyv1alpha1 "github.com/kplane-dev/kplane/pkg/apis/tenancy/v1alpha1"
	"github.com/kplane-dev/kplane/pkg/registry/status"
)

// REST serves workspaces.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.CategoriesProvider   = &REST{}
	_ rest.ShortNamesProvider   = &REST{}
	_ rest.SingularNameProvider = &REST{}
	_ rest.StandardStorage      = &REST{}
	_ rest.ResetFieldsStrategy  = &REST{}
	_ rest.TableConvertor       = &REST{}
	_ rest.Scoper               = &REST{}
)

// Categories puts workspaces into "kubectl get kcp".
func (*REST) Categories() []string { return []string{"kcp"} }

// ShortNames lets users type "kubectl get ws".
func (*REST) ShortNames() []string { return []string{"ws"} }

// TableColumns are the columns of "kubectl get workspaces" after NAME.
var TableColumns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "Type", Type: "string", JSONPath: ".spec.type.name", Description: "Type of the workspace"},
	{Name: "Region", Type: "string", JSONPath: ".metadata.labels.region", Description: "The region this workspace is in"},
	{Name: "Phase", Type: "string", JSONPath: ".status.phase", Description: "The current phase (e.g. Scheduling, Initializing, Ready, Deleting)"},
	{Name: "URL", Type: "string", JSONPath: ".spec.URL", Description: "URL to access the workspace"},
	{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp", Description: "Time since the object was created"},
}

// NewTableConvertor prints Workspaces with TableColumns.
func NewTableConvertor() (rest.TableConvertor, error) {
	return tableconvertor.New(TableColumns)
}

// NewREST returns the storage of workspaces and of their status
// subresource. typer must know the tenancy.kcp.io types.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*REST, *status.REST, error) {
	table, err := NewTableConvertor()
	if err != nil {
		return nil, nil, err
	}
	strategy := NewStrategy(typer)
	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &tenancyv1alpha1.Workspace{} },
		NewListFunc:               func() runtime.Object { return &tenancyv1alpha1.WorkspaceList{} },
		PredicateFunc:             Matcher,
		DefaultQualifiedResource:  tenancyv1alpha1.Resource("workspaces"),
		SingularQualifiedResource: tenancyv1alpha1.Resource("workspace"),

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
