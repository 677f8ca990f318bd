package apiexport

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
	"github.com/shardplane/shardplane/pkg/registry/status"
)

// REST serves apiexports, in the category "kcp".
type REST struct {
	*kcpstrategy.REST
}

// TableColumns are the columns of "kubectl get apiexports" after NAME:
// kcp's, and the identity hash that tells exports apart.
var TableColumns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "Identity", Type: "string", JSONPath: ".status.identityHash", Description: "Hash of the identity of the exported API", Priority: 1},
	{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp", Description: "Time since the object was created"},
}

// NewREST returns the storage of apiexports and of their status
// subresource. typer must know the apis.kcp.io types.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*REST, *status.REST, error) {
	strategy := NewStrategy(typer)
	main, statusREST, err := kcpstrategy.NewREST(kcpstrategy.Kind{
		NewFunc:          func() runtime.Object { return &apisv1alpha2.APIExport{} },
		NewListFunc:      func() runtime.Object { return &apisv1alpha2.APIExportList{} },
		Resource:         apisv1alpha2.Resource("apiexports"),
		SingularResource: apisv1alpha2.Resource("apiexport"),
		Strategy:         strategy,
		StatusStrategy:   NewStatusStrategy(strategy),
		TableColumns:     TableColumns,
	}, optsGetter)
	if err != nil {
		return nil, nil, err
	}
	return &REST{main}, statusREST, nil
}
