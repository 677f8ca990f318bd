package workspacetype

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

// REST serves workspacetypes, in the category "kcp".
type REST struct {
	*kcpstrategy.REST
}

// TableColumns are the columns of "kubectl get workspacetypes" after NAME.
var TableColumns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp", Description: "Time since the object was created"},
}

// NewTableConvertor prints WorkspaceTypes with TableColumns.
func NewTableConvertor() (rest.TableConvertor, error) {
	return tableconvertor.New(TableColumns)
}

// NewREST returns the storage of workspacetypes and of their status
// subresource. typer must know the tenancy.kcp.io types.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*REST, *status.REST, error) {
	strategy := NewStrategy(typer)
	main, statusREST, err := kcpstrategy.NewREST(kcpstrategy.Kind{
		NewFunc:          func() runtime.Object { return &tenancyv1alpha1.WorkspaceType{} },
		NewListFunc:      func() runtime.Object { return &tenancyv1alpha1.WorkspaceTypeList{} },
		Resource:         tenancyv1alpha1.Resource("workspacetypes"),
		SingularResource: tenancyv1alpha1.Resource("workspacetype"),
		Strategy:         strategy,
		StatusStrategy:   NewStatusStrategy(strategy),
		TableColumns:     TableColumns,
	}, optsGetter)
	if err != nil {
		return nil, nil, err
	}
	return &REST{main}, statusREST, nil
}
