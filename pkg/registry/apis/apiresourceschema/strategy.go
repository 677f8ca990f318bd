// Package apiresourceschema stores APIResourceSchemas, the immutable
// resource definitions that APIExports publish.
package apiresourceschema

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
)

// Strategy creates, updates and deletes APIResourceSchemas, which are
// cluster-scoped, created with POST and have no status.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	kcpstrategy.ClusterScoped
}

// NewStrategy returns the strategy for APIResourceSchemas; typer must know
// the apis.kcp.io types.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
}

// GetResetFields returns no fields: the kind has no status.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{}
}

// PrepareForCreate starts the generation.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*apisv1alpha1.APIResourceSchema).Generation = 1
}

// PrepareForUpdate keeps the generation: the spec cannot change.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*apisv1alpha1.APIResourceSchema).Generation = old.(*apisv1alpha1.APIResourceSchema).Generation
}

// Validate validates a new APIResourceSchema.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return apisv1alpha1.ValidateAPIResourceSchema(obj.(*apisv1alpha1.APIResourceSchema))
}

// ValidateUpdate refuses any change of the spec.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return apisv1alpha1.ValidateAPIResourceSchemaUpdate(obj.(*apisv1alpha1.APIResourceSchema), old.(*apisv1alpha1.APIResourceSchema))
}
