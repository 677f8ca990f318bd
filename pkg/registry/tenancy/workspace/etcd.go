package workspace

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
	"github.com/shardplane/shardplane/pkg/registry/status"
)

// REST serves workspaces, in the category "kcp".
type REST struct {
	*kcpstrategy.REST
}

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
	strategy := NewStrategy(typer)
	main, statusREST, err := kcpstrategy.NewREST(kcpstrategy.Kind{
		NewFunc:          func() runtime.Object { return &tenancyv1alpha1.Workspace{} },
		NewListFunc:      func() runtime.Object { return &tenancyv1alpha1.WorkspaceList{} },
		Resource:         tenancyv1alpha1.Resource("workspaces"),
		SingularResource: tenancyv1alpha1.Resource("workspace"),
		Strategy:         strategy,
		StatusStrategy:   NewStatusStrategy(strategy),
		TableColumns:     TableColumns,
	}, optsGetter)
	if err != nil {
		return nil, nil, err
	}
	return &REST{main}, statusREST, nil
}
