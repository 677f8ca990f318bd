// Package apibinding stores APIBindings, which bind the API of an APIExport
// into their workspace. Binding them is a later controller's work.
package apibinding

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
)

// Strategy creates, updates and deletes APIBindings, which are
// cluster-scoped and created with POST.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	kcpstrategy.ClusterScoped
}

// NewStrategy returns the strategy for APIBindings; typer must know the
// apis.kcp.io types.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
}

func resetFields(paths ...string) map[fieldpath.APIVersion]*fieldpath.Set {
	fields := kcpstrategy.ResetFields(apisv1alpha2.SchemeGroupVersion, paths...)
	for v, s := range kcpstrategy.ResetFields(apisv1alpha1.SchemeGroupVersion, paths...) {
		fields[v] = s
	}
	return fields
}

// GetResetFields returns the fields that a write of the main resource does
// not change: the status.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields("status")
}

// PrepareForCreate clears the status and adds the finalizer that deletes
// the binding's objects with it.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	b := obj.(*apisv1alpha2.APIBinding)
	b.Status = apisv1alpha2.APIBindingStatus{}
	b.Generation = 1
	if !slices.Contains(b.Finalizers, apisv1alpha2.APIBindingFinalizer) {
		b.Finalizers = append(b.Finalizers, apisv1alpha2.APIBindingFinalizer)
	}
}

// PrepareForUpdate keeps the status and bumps the generation when the spec
// changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newB, oldB := obj.(*apisv1alpha2.APIBinding), old.(*apisv1alpha2.APIBinding)
	newB.Status = oldB.Status
	kcpstrategy.BumpGenerationOnSpecChange(&newB.ObjectMeta, &oldB.ObjectMeta, newB.Spec, oldB.Spec)
}

// Validate validates a new APIBinding.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return apisv1alpha2.ValidateAPIBinding(obj.(*apisv1alpha2.APIBinding))
}

// ValidateUpdate validates an update of an APIBinding; its export
// reference cannot change.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return apisv1alpha2.ValidateAPIBindingUpdate(obj.(*apisv1alpha2.APIBinding), old.(*apisv1alpha2.APIBinding))
}

// StatusStrategy updates the status subresource of APIBindings.
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
	return resetFields("metadata", "spec")
}

// PrepareForUpdate keeps everything but the status.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newB, oldB := obj.(*apisv1alpha2.APIBinding), old.(*apisv1alpha2.APIBinding)
	kcpstrategy.KeepOldMetadata(&newB.ObjectMeta, &oldB.ObjectMeta)
	newB.Spec = oldB.Spec
}

// ValidateUpdate validates a status update of an APIBinding.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return apisv1alpha2.ValidateAPIBindingStatusUpdate(obj.(*apisv1alpha2.APIBinding), old.(*apisv1alpha2.APIBinding))
}
