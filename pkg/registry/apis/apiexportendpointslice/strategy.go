// Package apiexportendpointslice stores APIExportEndpointSlices, which list
// the URLs that serve an APIExport.
package apiexportendpointslice

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
)

// Strategy creates, updates and deletes APIExportEndpointSlices, which are
// cluster-scoped and created with POST.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	kcpstrategy.ClusterScoped
}

// NewStrategy returns the strategy for APIExportEndpointSlices; typer must
// know the apis.kcp.io types.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
}

// GetResetFields returns the fields that a write of the main resource does
// not change: the status.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return kcpstrategy.ResetFields(apisv1alpha1.SchemeGroupVersion, "status")
}

// PrepareForCreate clears the status.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	s := obj.(*apisv1alpha1.APIExportEndpointSlice)
	s.Status = apisv1alpha1.APIExportEndpointSliceStatus{}
	s.Generation = 1
}

// PrepareForUpdate keeps the status and bumps the generation when the spec
// changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newS, oldS := obj.(*apisv1alpha1.APIExportEndpointSlice), old.(*apisv1alpha1.APIExportEndpointSlice)
	newS.Status = oldS.Status
	kcpstrategy.BumpGenerationOnSpecChange(&newS.ObjectMeta, &oldS.ObjectMeta, newS.Spec, oldS.Spec)
}

// Validate validates a new APIExportEndpointSlice.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return apisv1alpha1.ValidateAPIExportEndpointSlice(obj.(*apisv1alpha1.APIExportEndpointSlice))
}

// ValidateUpdate validates an update; the export cannot change.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return apisv1alpha1.ValidateAPIExportEndpointSliceUpdate(obj.(*apisv1alpha1.APIExportEndpointSlice), old.(*apisv1alpha1.APIExportEndpointSlice))
}

// StatusStrategy updates the status subresource of APIExportEndpointSlices.
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
	return kcpstrategy.ResetFields(apisv1alpha1.SchemeGroupVersion, "metadata", "spec")
}

// PrepareForUpdate keeps everything but the status.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newS, oldS := obj.(*apisv1alpha1.APIExportEndpointSlice), old.(*apisv1alpha1.APIExportEndpointSlice)
	kcpstrategy.KeepOldMetadata(&newS.ObjectMeta, &oldS.ObjectMeta)
	newS.Spec = oldS.Spec
}

// ValidateUpdate validates a status update.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return apisv1alpha1.ValidateAPIExportEndpointSliceStatusUpdate(obj.(*apisv1alpha1.APIExportEndpointSlice), old.(*apisv1alpha1.APIExportEndpointSlice))
}
