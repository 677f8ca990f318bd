// Package apiexport stores APIExports, which publish an API of their
// workspace under an identity of their own.
package apiexport

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
)

// Strategy creates, updates and deletes APIExports, which are
// cluster-scoped and created with POST.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	kcpstrategy.ClusterScoped
}

// NewStrategy returns the strategy for APIExports; typer must know the
// apis.kcp.io types.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
}

// resetFields are the same top-level fields in both served versions.
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

// PrepareForCreate clears the status and points an export without an
// identity at its default identity secret, as kcp does.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	export := obj.(*apisv1alpha2.APIExport)
	export.Status = apisv1alpha2.APIExportStatus{}
	export.Generation = 1
	apisv1alpha2.SetDefaultIdentity(export)
}

// PrepareForUpdate keeps the status, which only the status subresource
// changes, keeps the identity when the update leaves it out (a v1alpha1
// client may not know it), and bumps the generation when the spec changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newExport, oldExport := obj.(*apisv1alpha2.APIExport), old.(*apisv1alpha2.APIExport)
	newExport.Status = oldExport.Status
	if newExport.Spec.Identity == nil || newExport.Spec.Identity.SecretRef == nil {
		newExport.Spec.Identity = oldExport.Spec.Identity.DeepCopy()
	}
	apisv1alpha2.SetDefaultIdentity(newExport)
	kcpstrategy.BumpGenerationOnSpecChange(&newExport.ObjectMeta, &oldExport.ObjectMeta, newExport.Spec, oldExport.Spec)
}

// Validate validates a new APIExport.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return apisv1alpha2.ValidateAPIExport(obj.(*apisv1alpha2.APIExport))
}

// ValidateUpdate validates an update of an APIExport.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return apisv1alpha2.ValidateAPIExportUpdate(obj.(*apisv1alpha2.APIExport), old.(*apisv1alpha2.APIExport))
}

// StatusStrategy updates the status subresource of APIExports.
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
	newExport, oldExport := obj.(*apisv1alpha2.APIExport), old.(*apisv1alpha2.APIExport)
	kcpstrategy.KeepOldMetadata(&newExport.ObjectMeta, &oldExport.ObjectMeta)
	newExport.Spec = oldExport.Spec
}

// ValidateUpdate validates a status update; the identity hash never
// changes once set.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return apisv1alpha2.ValidateAPIExportStatusUpdate(obj.(*apisv1alpha2.APIExport), old.(*apisv1alpha2.APIExport))
}
