package apiexportendpointslice

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
	"github.com/shardplane/shardplane/pkg/registry/status"
)

// REST serves apiexportendpointslices, in the category "kcp".
type REST struct {
	*kcpstrategy.REST
}

// TableColumns are the columns of "kubectl get apiexportendpointslices"
// after NAME, kcp's.
var TableColumns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "Export", Type: "string", JSONPath: ".spec.export.name", Description: "The APIExport"},
	{Name: "Partition", Type: "string", JSONPath: ".spec.partition", Description: "The partition filtering the endpoints"},
	{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp", Description: "Time since the object was created"},
}

// NewREST returns the storage of apiexportendpointslices and of their
// status subresource. typer must know the apis.kcp.io types.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*REST, *status.REST, error) {
	strategy := NewStrategy(typer)
	main, statusREST, err := kcpstrategy.NewREST(kcpstrategy.Kind{
		NewFunc:          func() runtime.Object { return &apisv1alpha1.APIExportEndpointSlice{} },
		NewListFunc:      func() runtime.Object { return &apisv1alpha1.APIExportEndpointSliceList{} },
		Resource:         apisv1alpha1.Resource("apiexportendpointslices"),
		SingularResource: apisv1alpha1.Resource("apiexportendpointslice"),
		Strategy:         strategy,
		StatusStrategy:   NewStatusStrategy(strategy),
		TableColumns:     TableColumns,
	}, optsGetter)
	if err != nil {
		return nil, nil, err
	}
	return &REST{main}, statusREST, nil
}
