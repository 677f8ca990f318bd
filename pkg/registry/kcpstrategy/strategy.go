// Package kcpstrategy holds what the registries of kcp's own cluster-scoped
// resources share: the strategy methods that are the same for all of them,
// their reset fields, status-update and generation rules, attribute
// selection, and the assembly of a generic registry store with its status
// subresource.
package kcpstrategy

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// ClusterScoped provides the strategy methods that are the same for every
// cluster-scoped kcp resource. Embed it in a strategy.
type ClusterScoped struct{}

// NamespaceScoped is false: the resource is cluster-scoped.
func (ClusterScoped) NamespaceScoped() bool { return false }

// Canonicalize does nothing.
func (ClusterScoped) Canonicalize(runtime.Object) {}

// AllowCreateOnUpdate is false: objects are created with POST.
func (ClusterScoped) AllowCreateOnUpdate(context.Context) bool { return false }

// AllowUnconditionalUpdate is true: an update without resourceVersion is
// accepted.
func (ClusterScoped) AllowUnconditionalUpdate(context.Context) bool { return true }

// WarningsOnCreate returns no warnings.
func (ClusterScoped) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

// WarningsOnUpdate returns no warnings.
func (ClusterScoped) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// ResetFields returns, for a GetResetFields method, the given top-level
// field paths (such as "status", or "metadata" and "spec") of the objects of
// gv.
func ResetFields(gv schema.GroupVersion, paths ...string) map[fieldpath.APIVersion]*fieldpath.Set {
	set := fieldpath.NewSet()
	for _, path := range paths {
		set.Insert(fieldpath.MakePathOrDie(path))
	}
	return map[fieldpath.APIVersion]*fieldpath.Set{fieldpath.APIVersion(gv.String()): set}
}

// KeepOldMetadata makes obj's metadata a copy of old's, except for the
// managed fields of obj, which stay because they record the status update
// that obj is.
func KeepOldMetadata(obj, old *metav1.ObjectMeta) {
	managedFields := obj.ManagedFields
	*obj = *old.DeepCopy()
	obj.ManagedFields = managedFields
}

// BumpGenerationOnSpecChange sets obj's generation to one more than old's
// when newSpec and oldSpec differ semantically.
func BumpGenerationOnSpecChange(obj, old *metav1.ObjectMeta, newSpec, oldSpec any) {
	if !apiequality.Semantic.DeepEqual(newSpec, oldSpec) {
		obj.Generation = old.Generation + 1
	}
}
