package partitionset

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
	"github.com/shardplane/shardplane/pkg/registry/status"
)

// REST serves partitionsets, in the category "kcp".
type REST struct {
	*kcpstrategy.REST
}

// TableColumns are the columns of "kubectl get partitionsets" after NAME,
// kcp's.
var TableColumns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "Count", Type: "string", JSONPath: ".status.count", Description: "Count of the partitions belonging the PartitionSet"},
	{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
}

// NewREST returns the storage of partitionsets and of their status
// subresource. typer must know the topology.kcp.io types.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*REST, *status.REST, error) {
	strategy := NewStrategy(typer)
	main, statusREST, err := kcpstrategy.NewREST(kcpstrategy.Kind{
		NewFunc:          func() runtime.Object { return &topologyv1alpha1.PartitionSet{} },
		NewListFunc:      func() runtime.Object { return &topologyv1alpha1.PartitionSetList{} },
		Resource:         topologyv1alpha1.Resource("partitionsets"),
		SingularResource: topologyv1alpha1.Resource("partitionset"),
		Strategy:         strategy,
		StatusStrategy:   NewStatusStrategy(strategy),
		TableColumns:     TableColumns,
	}, optsGetter)
	if err != nil {
		return nil, nil, err
	}
	return &REST{main}, statusREST, nil
}
