package clustercachedresource

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
	"github.com/shardplane/shardplane/pkg/registry/status"
)

// REST serves clustercachedresources, in the category "kcp".
type REST struct {
	*kcpstrategy.REST
}

// TableColumns are the columns of "kubectl get clustercachedresources" after NAME,
// kcp's.
var TableColumns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "Resource", Type: "string", JSONPath: ".spec.resource", Description: "Resource type being published"},
	{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
}

// NewREST returns the storage of clustercachedresources and of their status
// subresource. typer must know the topology.kcp.io types.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*REST, *status.REST, error) {
	strategy := NewStrategy(typer)
	main, statusREST, err := kcpstrategy.NewREST(kcpstrategy.Kind{
		NewFunc:          func() runtime.Object { return &cachev1alpha1.ClusterCachedResource{} },
		NewListFunc:      func() runtime.Object { return &cachev1alpha1.ClusterCachedResourceList{} },
		Resource:         cachev1alpha1.Resource("clustercachedresources"),
		SingularResource: cachev1alpha1.Resource("clustercachedresource"),
		Strategy:         strategy,
		StatusStrategy:   NewStatusStrategy(strategy),
		TableColumns:     TableColumns,
	}, optsGetter)
	if err != nil {
		return nil, nil, err
	}
	return &REST{main}, statusREST, nil
}
