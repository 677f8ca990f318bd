// Package workspacetype stores WorkspaceTypes, which say how workspaces of
// a kind are initialized, nested and terminated.
package workspacetype

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	tenancyv1alpha1 "github.com/kplane-dev/kplane/pkg/apis/tenancy/v1alpha1"
)

// Strategy creates, updates and deletes WorkspaceTypes.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

// NewStrategy returns the strategy for WorkspaceTypes; typer must know the
// tenancy.kcp.io types.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{typer, names.SimpleNameGenerator}
}

// NamespaceScoped is false: a WorkspaceType is cluster-scoped.
func (Strategy) NamespaceScoped() bool { return false }

// GetResetFields returns the fields that a write of the main resource does
// not change: the status.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(tenancyv1alpha1.SchemeGroupVersion.String()): fieldpath.NewSet(fieldpath.MakePathOrDie("status")),
	}
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
	if !apiequality.Semantic.DeepEqual(newWT.Spec, oldWT.Spec) {
		newWT.Generation = oldWT.Generation + 1
	}
}

// Validate validates a new WorkspaceType; the names "any" and "system" are
// reserved.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return tenancyv1alpha1.ValidateWorkspaceTypeCreate(obj.(*tenancyv1alpha1.WorkspaceType))
}

// WarningsOnCreate returns no warnings.
func (Strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// Canonicalize does nothing.
func (Strategy) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate is false: WorkspaceTypes are created with POST.
func (Strategy) AllowCreateOnUpdate(context.Context) bool { return false }

// AllowUnconditionalUpdate is true: an update without resourceVersion is
// accepted.
func (Strategy) AllowUnconditionalUpdate(context.Context) bool { return true }

// ValidateUpdate validates an update of a WorkspaceType.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return tenancyv1alpha1.ValidateWorkspaceTypeUpdate(obj.(*tenancyv1alpha1.WorkspaceType), old.(*tenancyv1alpha1.WorkspaceType))
}

// WarningsOnUpdate returns no warnings.
func (Strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
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
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(tenancyv1alpha1.SchemeGroupVersion.String()): fieldpath.NewSet(
			fieldpath.MakePathOrDie("metadata"),
			fieldpath.MakePathOrDie("spec"),
		),
	}
}

// PrepareForUpdate keeps everything but the status. The managed fields of
// the new object stay, because they record the status update.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newWT, oldWT := obj.(*tenancyv1alpha1.WorkspaceType), old.(*tenancyv1alpha1.WorkspaceType)
	managedFields := newWT.ManagedFields
	newWT.ObjectMeta = *oldWT.ObjectMeta.DeepCopy()
	newWT.ManagedFields = managedFields
	newWT.Spec = oldWT.Spec
}

// ValidateUpdate validates a status update of a WorkspaceType.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return tenancyv1alpha1.ValidateWorkspaceTypeStatusUpdate(obj.(*tenancyv1alpha1.WorkspaceType), old.(*tenancyv1alpha1.WorkspaceType))
}

// WarningsOnUpdate returns no warnings.
func (StatusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// GetAttrs returns the labels and the selectable fields of a
// WorkspaceType.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	wt, ok := obj.(*tenancyv1alpha1.WorkspaceType)
	if !ok {
		return nil, nil, fmt.Errorf("expected a WorkspaceType, got %T", obj)
	}
	return labels.Set(wt.Labels), generic.ObjectMetaFieldsSet(&wt.ObjectMeta, false), nil
}

// Matcher selects WorkspaceTypes by labels and fields (metadata.name).
func Matcher(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: GetAttrs}
}
