// Package partitionset stores PartitionSets, which generate Partitions.
package partitionset

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
)

// Strategy creates, updates and deletes PartitionSets, which are
// cluster-scoped.
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

// GetResetFields returns the fields that a write of the main resource does
// not change: the status.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return kcpstrategy.ResetFields(topologyv1alpha1.SchemeGroupVersion, "status")
}

// PrepareForCreate clears the status.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	ps := obj.(*topologyv1alpha1.PartitionSet)
	ps.Status = topologyv1alpha1.PartitionSetStatus{}
	ps.Generation = 1
}

// PrepareForUpdate keeps the status, which only the status subresource
// changes, and bumps the generation when the spec changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newPS, oldPS := obj.(*topologyv1alpha1.PartitionSet), old.(*topologyv1alpha1.PartitionSet)
	newPS.Status = oldPS.Status
	kcpstrategy.BumpGenerationOnSpecChange(&newPS.ObjectMeta, &oldPS.ObjectMeta, newPS.Spec, oldPS.Spec)
}

// Validate validates a new PartitionSet.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return topologyv1alpha1.ValidatePartitionSet(obj.(*topologyv1alpha1.PartitionSet))
}

// ValidateUpdate validates an update of a PartitionSet.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return topologyv1alpha1.ValidatePartitionSetUpdate(obj.(*topologyv1alpha1.PartitionSet), old.(*topologyv1alpha1.PartitionSet))
}

// StatusStrategy updates the status subresource of PartitionSets.
type StatusStrategy struct {
	Strategy
}

// NewStatusStrategy returns the status strategy belonging to s.
func NewStatusStrategy(s Strategy) StatusStrategy {
	return StatusStrategy{s}
}

// GetResetFields returns the fields that a status update does not change:
// metadata and spec.
func (StatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return kcpstrategy.ResetFields(topologyv1alpha1.SchemeGroupVersion, "metadata", "spec")
}

// PrepareForUpdate keeps everything but the status.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newPS, oldPS := obj.(*topologyv1alpha1.PartitionSet), old.(*topologyv1alpha1.PartitionSet)
	kcpstrategy.KeepOldMetadata(&newPS.ObjectMeta, &oldPS.ObjectMeta)
	newPS.Spec = oldPS.Spec
}

// ValidateUpdate validates a status update of a PartitionSet.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return topologyv1alpha1.ValidatePartitionSetStatusUpdate(obj.(*topologyv1alpha1.PartitionSet), old.(*topologyv1alpha1.PartitionSet))
}
