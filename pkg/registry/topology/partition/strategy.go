// Package partition stores Partitions, selections of shards by their
// labels.
package partition

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
)

// Strategy creates, updates and deletes Partitions, which are
// cluster-scoped and have no status.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	kcpstrategy.ClusterScoped
}

// NewStrategy returns the strategy; typer must know the topology.kcp.io
// types.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
}

// GetResetFields returns nothing: the kind has no status.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return nil
}

// PrepareForCreate starts the generation at 1.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*topologyv1alpha1.Partition).Generation = 1
}

// PrepareForUpdate bumps the generation when the spec changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newP, oldP := obj.(*topologyv1alpha1.Partition), old.(*topologyv1alpha1.Partition)
	kcpstrategy.BumpGenerationOnSpecChange(&newP.ObjectMeta, &oldP.ObjectMeta, newP.Spec, oldP.Spec)
}

// Validate validates a new Partition.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return topologyv1alpha1.ValidatePartition(obj.(*topologyv1alpha1.Partition))
}

// ValidateUpdate validates an update of a Partition.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return topologyv1alpha1.ValidatePartitionUpdate(obj.(*topologyv1alpha1.Partition), old.(*topologyv1alpha1.Partition))
}
