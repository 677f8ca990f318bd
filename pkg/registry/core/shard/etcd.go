package shard

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
	"github.com/shardplane/shardplane/pkg/registry/status"
)

// REST serves shards, in the category "kcp".
type REST struct {
	*kcpstrategy.REST
}

// TableColumns are the columns of "kubectl get shards" after NAME.
var TableColumns = []apiextensionsv1.CustomResourceColumnDefinition{
	{Name: "Region", Type: "string", JSONPath: ".metadata.labels.region", Description: "The region this shard is in"},
	{Name: "URL", Type: "string", JSONPath: ".spec.baseURL", Description: "URL to connect to the shard directly"},
	{Name: "External URL", Type: "string", JSONPath: ".spec.externalURL", Description: "URL written into the workspaces of the shard"},
	{Name: "Schedulable", Type: "string", JSONPath: `.status.conditions[?(@.type=="Schedulable")].status`, Description: "Whether new workspaces are scheduled onto this shard"},
	{Name: "Ready", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].status`, Description: "Whether the shard reports its status"},
	{Name: "Workspaces", Type: "string", JSONPath: ".status.used.workspaces", Description: "Logical clusters on the shard"},
	{Name: "Soft", Type: "string", JSONPath: ".spec.resourceLimits.soft.workspaces", Description: "Soft limit of logical clusters"},
	{Name: "Hard", Type: "string", JSONPath: ".spec.resourceLimits.hard.workspaces", Description: "Hard limit of logical clusters"},
	{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp", Description: "Time since the object was created"},
}

// NewTableConvertor prints Shards with TableColumns.
func NewTableConvertor() (rest.TableConvertor, error) {
	return tableconvertor.New(TableColumns)
}

// NewREST returns the storage of shards and of their status subresource.
// typer must know the core.kcp.io types.
func NewREST(typer runtime.ObjectTyper, optsGetter generic.RESTOptionsGetter) (*REST, *status.REST, error) {
	strategy := NewStrategy(typer)
	main, statusREST, err := kcpstrategy.NewREST(kcpstrategy.Kind{
		NewFunc:          func() runtime.Object { return &corev1alpha1.Shard{} },
		NewListFunc:      func() runtime.Object { return &corev1alpha1.ShardList{} },
		Resource:         corev1alpha1.Resource("shards"),
		SingularResource: corev1alpha1.Resource("shard"),
		Strategy:         strategy,
		StatusStrategy:   NewStatusStrategy(strategy),
		TableColumns:     TableColumns,
	}, optsGetter)
	if err != nil {
		return nil, nil, err
	}
	return &REST{main}, statusREST, nil
}
