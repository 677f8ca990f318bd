// Package shard stores Shards, the servers logical clusters are placed on.
package shard

import (
	"context"

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

// Strategy creates, updates and deletes Shards, which are
// cluster-scoped and created with POST.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	kcpstrategy.ClusterScoped
}

// NewStrategy returns the strategy for Shards; typer must know the
// core.kcp.io types.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
}

// GetResetFields returns the fields that a write of the main resource does
// not change: the status.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return kcpstrategy.ResetFields(corev1alpha1.SchemeGroupVersion, "status")
}

// PrepareForCreate clears the status, defaults the URLs to the base URL and
// labels the Shard with its name, so that workspaces can select it by name.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	shard := obj.(*corev1alpha1.Shard)
	shard.Status = corev1alpha1.ShardStatus{}
	shard.Generation = 1
	corev1alpha1.SetDefaults_Shard(shard)
	setNameLabel(shard)
}

// PrepareForUpdate keeps the status, which only the status subresource
// changes, keeps the name label and bumps the generation when the spec
// changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newShard, oldShard := obj.(*corev1alpha1.Shard), old.(*corev1alpha1.Shard)
	newShard.Status = oldShard.Status
	corev1alpha1.SetDefaults_Shard(newShard)
	setNameLabel(newShard)
	kcpstrategy.BumpGenerationOnSpecChange(&newShard.ObjectMeta, &oldShard.ObjectMeta, newShard.Spec, oldShard.Spec)
}

// setNameLabel sets the label name=<shard>. A generated name is not known
// yet when PrepareForCreate runs; such a Shard gets the label on its first
// update.
func setNameLabel(shard *corev1alpha1.Shard) {
	if shard.Name == "" {
		return
	}
	if shard.Labels == nil {
		shard.Labels = map[string]string{}
	}
	shard.Labels[corev1alpha1.ShardNameLabel] = shard.Name
}

// Validate validates a new Shard.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return corev1alpha1.ValidateShardCreate(obj.(*corev1alpha1.Shard))
}

// ValidateUpdate validates an update of a Shard.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return corev1alpha1.ValidateShardUpdate(obj.(*corev1alpha1.Shard), old.(*corev1alpha1.Shard))
}

// StatusStrategy updates the status subresource of Shards.
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
	newShard, oldShard := obj.(*corev1alpha1.Shard), old.(*corev1alpha1.Shard)
	kcpstrategy.KeepOldMetadata(&newShard.ObjectMeta, &oldShard.ObjectMeta)
	newShard.Spec = oldShard.Spec
}

// ValidateUpdate validates a status update of a Shard.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return corev1alpha1.ValidateShardStatusUpdate(obj.(*corev1alpha1.Shard), old.(*corev1alpha1.Shard))
}

// Matcher selects Shards by labels and fields (metadata.name).
func Matcher(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return kcpstrategy.Matcher(label, field)
}
