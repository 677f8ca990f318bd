package partition

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
)

// REST serves partitions, in the category "kcp".
type REST struct {
	*kcpstrategy.REST
}

// TableColumns are the columns of "kubectl get partitions" after NAME,
// kcp's.
var TableColumns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "Owner", Type: "string", JSONPath: ".metadata.ownerReferences[*].name"},
	{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
}

// NewREST returns the storage of partitions. typer must know the
// topology.kcp.io types.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*REST, error) {
	main, _, err := kcpstrategy.NewREST(kcpstrategy.Kind{
		NewFunc:          func() runtime.Object { return &topologyv1alpha1.Partition{} },
		NewListFunc:      func() runtime.Object { return &topologyv1alpha1.PartitionList{} },
		Resource:         topologyv1alpha1.Resource("partitions"),
		SingularResource: topologyv1alpha1.Resource("partition"),
		Strategy:         NewStrategy(typer),
		TableColumns:     TableColumns,
	}, optsGetter)
	if err != nil {
		return nil, err
	}
	return &REST{main}, nil
}
