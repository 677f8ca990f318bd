// Package workspacetype stores WorkspaceTypes, which say how workspaces of
// a kind are initialized, nested and terminated.
package workspacetype

import (
	"context"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
)

// Strategy creates, updates and deletes WorkspaceTypes, which are
// cluster-scoped and created with POST.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	kcpstrategy.ClusterScoped
}

// NewStrategy returns the strategy for WorkspaceTypes; typer must know the
// tenancy.kcp.io types.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
}

// GetResetFields returns the fields that a write of the main resource does
// not change: the status.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return kcpstrategy.ResetFields(tenancyv1alpha1.SchemeGroupVersion, "status")
}

// PrepareForCreate clears the status.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	wt := obj.(*tenancyv1alpha1.WorkspaceType)
	wt.Status = tenancyv1alpha1.WorkspaceTypeStatus{}
	wt.Generation = 1
}

// PrepareForUpdate keeps the status, which only the status subresource
// changes, and bumps the generation when the spec changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newWT, oldWT := obj.(*tenancyv1alpha1.WorkspaceType), old.(*tenancyv1alpha1.WorkspaceType)
	newWT.Status = oldWT.Status
	kcpstrategy.BumpGenerationOnSpecChange(&newWT.ObjectMeta, &oldWT.ObjectMeta, newWT.Spec, oldWT.Spec)
}

// Validate validates a new WorkspaceType; the names "any" and "system" are
// reserved.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return tenancyv1alpha1.ValidateWorkspaceTypeCreate(obj.(*tenancyv1alpha1.WorkspaceType))
}

// ValidateUpdate validates an update of a WorkspaceType.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return tenancyv1alpha1.ValidateWorkspaceTypeUpdate(obj.(*tenancyv1alpha1.WorkspaceType), old.(*tenancyv1alpha1.WorkspaceType))
}

// StatusStrategy updates the status subresource of WorkspaceTypes.
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
	return kcpstrategy.ResetFields(tenancyv1alpha1.SchemeGroupVersion, "metadata", "spec")
}

// PrepareForUpdate keeps everything but the status. The managed fields of
// the new object stay, because they record the status update.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newWT, oldWT := obj.(*tenancyv1alpha1.WorkspaceType), old.(*tenancyv1alpha1.WorkspaceType)
	kcpstrategy.KeepOldMetadata(&newWT.ObjectMeta, &oldWT.ObjectMeta)
	newWT.Spec = oldWT.Spec
}

// ValidateUpdate validates a status update of a WorkspaceType.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return tenancyv1alpha1.ValidateWorkspaceTypeStatusUpdate(obj.(*tenancyv1alpha1.WorkspaceType), old.(*tenancyv1alpha1.WorkspaceType))
}

// Matcher selects WorkspaceTypes by labels and fields (metadata.name).
func Matcher(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return kcpstrategy.Matcher(label, field)
}
