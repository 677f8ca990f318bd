// Package clustercachedresourceendpointslice stores
// ClusterCachedResourceEndpointSlices, which publish the URL of the view of a ClusterCachedResource's copies.
package clustercachedresourceendpointslice

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
)

// Strategy creates, updates and deletes ClusterCachedResourceEndpointSlices, which are
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
	return kcpstrategy.ResetFields(cachev1alpha1.SchemeGroupVersion, "status")
}

// PrepareForCreate clears the status.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	o := obj.(*cachev1alpha1.ClusterCachedResourceEndpointSlice)
	o.Status = cachev1alpha1.ClusterCachedResourceEndpointSliceStatus{}
	o.Generation = 1
}

// PrepareForUpdate keeps the status, which only the status subresource
// changes, and bumps the generation when the spec changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newObj, oldObj := obj.(*cachev1alpha1.ClusterCachedResourceEndpointSlice), old.(*cachev1alpha1.ClusterCachedResourceEndpointSlice)
	newObj.Status = oldObj.Status
	kcpstrategy.BumpGenerationOnSpecChange(&newObj.ObjectMeta, &oldObj.ObjectMeta, newObj.Spec, oldObj.Spec)
}

// Validate validates a new ClusterCachedResourceEndpointSlice.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return cachev1alpha1.ValidateClusterCachedResourceEndpointSlice(obj.(*cachev1alpha1.ClusterCachedResourceEndpointSlice))
}

// ValidateUpdate validates an update of a ClusterCachedResourceEndpointSlice.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return cachev1alpha1.ValidateClusterCachedResourceEndpointSliceUpdate(obj.(*cachev1alpha1.ClusterCachedResourceEndpointSlice), old.(*cachev1alpha1.ClusterCachedResourceEndpointSlice))
}

// StatusStrategy updates the status subresource of ClusterCachedResourceEndpointSlices.
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
	return kcpstrategy.ResetFields(cachev1alpha1.SchemeGroupVersion, "metadata", "spec")
}

// PrepareForUpdate keeps everything but the status.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newObj, oldObj := obj.(*cachev1alpha1.ClusterCachedResourceEndpointSlice), old.(*cachev1alpha1.ClusterCachedResourceEndpointSlice)
	kcpstrategy.KeepOldMetadata(&newObj.ObjectMeta, &oldObj.ObjectMeta)
	newObj.Spec = oldObj.Spec
}

// ValidateUpdate validates a status update of a ClusterCachedResourceEndpointSlice.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return cachev1alpha1.ValidateClusterCachedResourceEndpointSliceStatusUpdate(obj.(*cachev1alpha1.ClusterCachedResourceEndpointSlice), old.(*cachev1alpha1.ClusterCachedResourceEndpointSlice))
}
