// Package logicalclustermigration stores LogicalClusterMigrations, the
// requests to move a logical cluster to another shard.
package logicalclustermigration

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/registry/kcpstrategy"
)

// Strategy creates, updates and deletes LogicalClusterMigrations, which are
// cluster-scoped.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	kcpstrategy.ClusterScoped
}

// NewStrategy returns the strategy for LogicalClusterMigrations; typer must
// know the migration.kcp.io types.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
}

// GetResetFields returns the fields that a write of the main resource does
// not change: the status.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return kcpstrategy.ResetFields(migrationv1alpha1.SchemeGroupVersion, "status")
}

// PrepareForCreate clears the status: only the shards' controllers write it.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	m := obj.(*migrationv1alpha1.LogicalClusterMigration)
	m.Status = migrationv1alpha1.LogicalClusterMigrationStatus{}
	m.Generation = 1
}

// PrepareForUpdate keeps the status, which only the status subresource
// changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newM, oldM := obj.(*migrationv1alpha1.LogicalClusterMigration), old.(*migrationv1alpha1.LogicalClusterMigration)
	newM.Status = oldM.Status
	kcpstrategy.BumpGenerationOnSpecChange(&newM.ObjectMeta, &oldM.ObjectMeta, newM.Spec, oldM.Spec)
}

// Validate validates a new LogicalClusterMigration.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return migrationv1alpha1.ValidateLogicalClusterMigrationCreate(obj.(*migrationv1alpha1.LogicalClusterMigration))
}

// ValidateUpdate validates an update of a LogicalClusterMigration.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return migrationv1alpha1.ValidateLogicalClusterMigrationUpdate(obj.(*migrationv1alpha1.LogicalClusterMigration), old.(*migrationv1alpha1.LogicalClusterMigration))
}

// StatusStrategy updates the status subresource of LogicalClusterMigrations.
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
	return kcpstrategy.ResetFields(migrationv1alpha1.SchemeGroupVersion, "metadata", "spec")
}

// PrepareForUpdate keeps everything but the status.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newM, oldM := obj.(*migrationv1alpha1.LogicalClusterMigration), old.(*migrationv1alpha1.LogicalClusterMigration)
	kcpstrategy.KeepOldMetadata(&newM.ObjectMeta, &oldM.ObjectMeta)
	newM.Spec = oldM.Spec
}

// ValidateUpdate validates a status update of a LogicalClusterMigration.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return migrationv1alpha1.ValidateLogicalClusterMigrationStatusUpdate(obj.(*migrationv1alpha1.LogicalClusterMigration), old.(*migrationv1alpha1.LogicalClusterMigration))
}
