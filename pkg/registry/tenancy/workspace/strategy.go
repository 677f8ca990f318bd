// Package workspace stores Workspaces, the entries of child logical
// clusters in their parent.
package workspace

import (
	"context"
	"slices"

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

// Strategy creates, updates and deletes Workspaces, which are
// cluster-scoped and created with POST.
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	kcpstrategy.ClusterScoped
}

// NewStrategy returns the strategy for Workspaces; typer must know the
// tenancy.kcp.io types.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
}

// GetResetFields returns the fields that a write of the main resource does
// not change: the status.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return kcpstrategy.ResetFields(tenancyv1alpha1.SchemeGroupVersion, "status")
}

// PrepareForCreate starts a Workspace in the Scheduling phase with a fresh
// status. The finalizer keeps the Workspace until its logical cluster is
// gone; a mounted workspace has none.
func (Strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	ws := obj.(*tenancyv1alpha1.Workspace)
	ws.Status = tenancyv1alpha1.WorkspaceStatus{}
	ws.Generation = 1
	tenancyv1alpha1.SetDefaults_Workspace(ws)
	if ws.Spec.Mount == nil && !slices.Contains(ws.Finalizers, tenancyv1alpha1.LogicalClusterFinalizer) {
		ws.Finalizers = append(ws.Finalizers, tenancyv1alpha1.LogicalClusterFinalizer)
	}
	setPhaseLabel(ws)
}

// PrepareForUpdate keeps the status, which only the status subresource
// changes, and with it the phase label; it bumps the generation when the
// spec changes.
func (Strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newWS, oldWS := obj.(*tenancyv1alpha1.Workspace), old.(*tenancyv1alpha1.Workspace)
	newWS.Status = oldWS.Status
	setPhaseLabel(newWS)
	kcpstrategy.BumpGenerationOnSpecChange(&newWS.ObjectMeta, &oldWS.ObjectMeta, newWS.Spec, oldWS.Spec)
}

// setPhaseLabel makes the label tenancy.kcp.io/phase mirror status.phase.
func setPhaseLabel(ws *tenancyv1alpha1.Workspace) {
	if ws.Status.Phase == "" {
		delete(ws.Labels, tenancyv1alpha1.WorkspacePhaseLabel)
		return
	}
	if ws.Labels == nil {
		ws.Labels = map[string]string{}
	}
	ws.Labels[tenancyv1alpha1.WorkspacePhaseLabel] = string(ws.Status.Phase)
}

// Validate validates a new Workspace.
func (Strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return tenancyv1alpha1.ValidateWorkspaceCreate(obj.(*tenancyv1alpha1.Workspace))
}

// ValidateUpdate validates an update of a Workspace.
func (Strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return tenancyv1alpha1.ValidateWorkspaceUpdate(obj.(*tenancyv1alpha1.Workspace), old.(*tenancyv1alpha1.Workspace))
}

// StatusStrategy updates the status subresource of Workspaces.
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

// PrepareForUpdate keeps everything but the status, except that the phase
// label follows the new phase. The managed fields of the new object stay,
// because they record the status update.
func (StatusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	newWS, oldWS := obj.(*tenancyv1alpha1.Workspace), old.(*tenancyv1alpha1.Workspace)
	kcpstrategy.KeepOldMetadata(&newWS.ObjectMeta, &oldWS.ObjectMeta)
	newWS.Spec = oldWS.Spec
	setPhaseLabel(newWS)
}

// ValidateUpdate validates a status update of a Workspace.
func (StatusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return tenancyv1alpha1.ValidateWorkspaceStatusUpdate(obj.(*tenancyv1alpha1.Workspace), old.(*tenancyv1alpha1.Workspace))
}

// Matcher selects Workspaces by labels and fields (metadata.name).
func Matcher(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return kcpstrategy.Matcher(label, field)
}
