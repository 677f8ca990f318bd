// Package logicalcluster stores LogicalClusters, the singleton inside every
// logical cluster that describes it.
package logicalcluster

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
)

// Strategy creates, updates and deletes LogicalClusters, which are
// cluster-scoped and created with POST.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	kcpstrategy.ClusterScoped
}

// NewStrategy returns the strategy for LogicalClusters; typer must know the
// core.kcp.io types.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
}

// GetResetFields returns the fields that a write of the main resource does
// not change: the status.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return kcpstrategy.ResetFields(corev1alpha1.SchemeGroupVersion, "status")
}

// PrepareForCreate keeps the status, because the system creates
// LogicalClusters with their initial state: the phase defaults to
// Scheduling and the initializers of the status to those of the spec. The
// deletion finalizer keeps the LogicalCluster until its content is gone.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	lc := obj.(*corev1alpha1.LogicalCluster)
	lc.Generation = 1
	corev1alpha1.SetDefaults_LogicalCluster(lc)
	if len(lc.Status.Initializers) == 0 && len(lc.Spec.Initializers) > 0 {
		lc.Status.Initializers = slices.Clone(lc.Spec.Initializers)
	}
	if !slices.Contains(lc.Finalizers, corev1alpha1.LogicalClusterDeletionFinalizer) {
		lc.Finalizers = append(lc.Finalizers, corev1alpha1.LogicalClusterDeletionFinalizer)
	}
}

// PrepareForUpdate keeps the status, which only the status subresource
// changes, and bumps the generation when the spec changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newLC, oldLC := obj.(*corev1alpha1.LogicalCluster), old.(*corev1alpha1.LogicalCluster)
	newLC.Status = oldLC.Status
	kcpstrategy.BumpGenerationOnSpecChange(&newLC.ObjectMeta, &oldLC.ObjectMeta, newLC.Spec, oldLC.Spec)
}

// Validate validates a new LogicalCluster; its name must be "cluster".
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return corev1alpha1.ValidateLogicalClusterCreate(obj.(*corev1alpha1.LogicalCluster))
}

// ValidateUpdate validates an update of a LogicalCluster.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return corev1alpha1.ValidateLogicalClusterUpdate(obj.(*corev1alpha1.LogicalCluster), old.(*corev1alpha1.LogicalCluster))
}

// StatusStrategy updates the status subresource of LogicalClusters.
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
	return kcpstrategy.ResetFields(corev1alpha1.SchemeGroupVersion, "metadata", "spec")
}

// PrepareForUpdate keeps everything but the status. The managed fields of
// the new object stay, because they record the status update.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newLC, oldLC := obj.(*corev1alpha1.LogicalCluster), old.(*corev1alpha1.LogicalCluster)
	kcpstrategy.KeepOldMetadata(&newLC.ObjectMeta, &oldLC.ObjectMeta)
	newLC.Spec = oldLC.Spec
}

// ValidateUpdate validates a status update of a LogicalCluster.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return corev1alpha1.ValidateLogicalClusterStatusUpdate(obj.(*corev1alpha1.LogicalCluster), old.(*corev1alpha1.LogicalCluster))
}

// Matcher selects LogicalClusters by labels and fields (metadata.name).
func Matcher(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return kcpstrategy.Matcher(label, field)
}
