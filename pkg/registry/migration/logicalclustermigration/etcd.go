package logicalclustermigration

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
	"github.com/shardplane/shardplane/pkg/registry/status"
)

// REST serves logicalclustermigrations, in the category "kcp".
type REST struct {
	*kcpstrategy.REST
}

// TableColumns are the columns of "kubectl get logicalclustermigrations"
// after NAME: kcp's printer columns (kcp's schema has no Age column).
var TableColumns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "Logical Cluster", Type: "string", JSONPath: ".spec.logicalCluster", Description: "The logical cluster to move"},
	{Name: "Phase", Type: "string", JSONPath: ".status.phase", Description: "How far the move has come"},
	{Name: "Destination", Type: "string", JSONPath: ".spec.destinationShard", Description: "The shard the logical cluster moves to"},
	{Name: "Entries Copied", Type: "integer", JSONPath: ".status.entriesCopied", Description: "Stored objects copied to the destination so far"},
}

// NewREST returns the storage of logicalclustermigrations and of their
// status subresource. typer must know the migration.kcp.io types.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*REST, *status.REST, error) {
	strategy := NewStrategy(typer)
	main, statusREST, err := kcpstrategy.NewREST(kcpstrategy.Kind{
		NewFunc:          func() runtime.Object { return &migrationv1alpha1.LogicalClusterMigration{} },
		NewListFunc:      func() runtime.Object { return &migrationv1alpha1.LogicalClusterMigrationList{} },
		Resource:         migrationv1alpha1.Resource("logicalclustermigrations"),
		SingularResource: migrationv1alpha1.Resource("logicalclustermigration"),
		Strategy:         strategy,
		StatusStrategy:   NewStatusStrategy(strategy),
		TableColumns:     TableColumns,
	}, optsGetter)
	if err != nil {
		return nil, nil, err
	}
	return &REST{main}, statusREST, nil
}
