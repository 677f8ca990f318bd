// Package workspaceauthenticationconfiguration stores
// WorkspaceAuthenticationConfigurations, the JWT issuers that WorkspaceTypes
// add to the authentication of their workspaces.
package workspaceauthenticationconfiguration

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
)

// Strategy creates, updates and deletes
// WorkspaceAuthenticationConfigurations, which are cluster-scoped and have
// no status.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	kcpstrategy.ClusterScoped
}

// NewStrategy returns the strategy; typer must know the tenancy.kcp.io
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
	obj.(*tenancyv1alpha1.WorkspaceAuthenticationConfiguration).Generation = 1
}

// PrepareForUpdate bumps the generation when the spec changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newWAC, oldWAC := obj.(*tenancyv1alpha1.WorkspaceAuthenticationConfiguration), old.(*tenancyv1alpha1.WorkspaceAuthenticationConfiguration)
	kcpstrategy.BumpGenerationOnSpecChange(&newWAC.ObjectMeta, &oldWAC.ObjectMeta, newWAC.Spec, oldWAC.Spec)
}

// Validate validates a new WorkspaceAuthenticationConfiguration.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return tenancyv1alpha1.ValidateWorkspaceAuthenticationConfiguration(obj.(*tenancyv1alpha1.WorkspaceAuthenticationConfiguration))
}

// ValidateUpdate validates an update.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return tenancyv1alpha1.ValidateWorkspaceAuthenticationConfigurationUpdate(obj.(*tenancyv1alpha1.WorkspaceAuthenticationConfiguration), old.(*tenancyv1alpha1.WorkspaceAuthenticationConfiguration))
}
