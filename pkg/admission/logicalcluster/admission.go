// Package logicalcluster guards what the system owns on LogicalClusters.
// As in kcp, users whom RBAC allows may change a LogicalCluster's labels,
// annotations and finalizers of their own; its spec (owner, initializers,
// terminators, directlyDeletable), its system annotations and finalizers
// (kcp.io and its subdomains: path, type, required-groups, owner, the
// deletion finalizer, ...) are changed only by system:masters and
// system:kcp:logical-cluster-admin. Only they create LogicalClusters, and
// only they delete one that is not spec.directlyDeletable. The status is
// guarded by the systemstatus plugin; what kcp-admin may write of it is
// kcp's rule: initializers only ever shrink, once set, and the phase never
// goes back.
package logicalcluster

import (
	"context"
	"fmt"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"

	"github.com/shardplane/shardplane/pkg/admission/systemstatus"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Plugin guards the system-owned parts of LogicalClusters.
type Plugin struct{ *admission.Handler }

var _ admission.ValidationInterface = &Plugin{}

// New returns the plugin.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete)}
}

// Validate refuses creation, deletion and changes of system-owned fields by
// users outside the system.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	gr := a.GetResource().GroupResource()
	if gr != corev1alpha1.Resource("logicalclusters") || systemstatus.IsSystem(a.GetUserInfo()) {
		return nil
	}
	forbidden := func(format string, args ...any) error {
		return apierrors.NewForbidden(gr, a.GetName(), fmt.Errorf(format, args...))
	}
	if a.GetSubresource() == "status" {
		// Others than kcp-admin are refused by the systemstatus plugin.
		if !systemstatus.IsKCPAdmin(a.GetUserInfo()) {
			return nil
		}
		lc, ok := a.GetObject().(*corev1alpha1.LogicalCluster)
		old, oldOK := a.GetOldObject().(*corev1alpha1.LogicalCluster)
		if ok && oldOK && a.GetOperation() == admission.Update {
			if msg := statusChange(old, lc); msg != "" {
				return forbidden("%s", msg)
			}
		}
		return nil
	}
	if a.GetSubresource() != "" {
		return nil
	}
	switch a.GetOperation() {
	case admission.Create:
		return forbidden("LogicalClusters are created by the system")
	case admission.Delete:
		old, ok := a.GetOldObject().(*corev1alpha1.LogicalCluster)
		if !ok || !old.Spec.DirectlyDeletable {
			return forbidden("this LogicalCluster is not directly deletable; delete its Workspace instead")
		}
		return nil
	case admission.Update:
		lc, ok := a.GetObject().(*corev1alpha1.LogicalCluster)
		old, oldOK := a.GetOldObject().(*corev1alpha1.LogicalCluster)
		if !ok || !oldOK {
			return nil
		}
		if msg := systemFieldChange(old, lc, systemstatus.IsKCPAdmin(a.GetUserInfo())); msg != "" {
			return forbidden("%s", msg)
		}
	}
	return nil
}

// adminAnnotations are the limits of a LogicalCluster: kcp-admin may set
// them too (kcp's admin-reserved metadata of its ReservedMetadata plugin),
// a workspace's own users may not (they would raise their own limit).
var adminAnnotations = sets.New(corev1alpha1.MaxTotalObjectsAnnotationKey,
	corev1alpha1.MaxWatchesPerUserAnnotationKey, corev1alpha1.MaxRequestBodyBytesAnnotationKey,
	corev1alpha1.MaxRequestsInFlightAnnotationKey, corev1alpha1.MaxRequestTimeShareAnnotationKey)

// systemFieldChange says what lc changes of old that only the system (or,
// for adminAnnotations, kcp-admin) may change, or "" when nothing.
func systemFieldChange(old, lc *corev1alpha1.LogicalCluster, kcpAdmin bool) string {
	if !apiequality.Semantic.DeepEqual(old.Spec, lc.Spec) {
		return "spec (owner, initializers, terminators, directlyDeletable) is set by the system"
	}
	if key, changed := changedSystemAnnotation(old.Annotations, lc.Annotations, kcpAdmin); changed {
		return fmt.Sprintf("annotation %s is set by the system", key)
	}
	if !slices.Equal(systemFinalizers(old.Finalizers), systemFinalizers(lc.Finalizers)) {
		return "finalizers of kcp.io and its subdomains are managed by the system"
	}
	return ""
}

// phaseOrder is kcp's order of the phases a status write may only advance
// through; phases outside it rank lowest, as in kcp.
var phaseOrder = map[corev1alpha1.LogicalClusterPhaseType]int{
	"": 1, corev1alpha1.LogicalClusterPhaseScheduling: 2, corev1alpha1.LogicalClusterPhaseInitializing: 3, corev1alpha1.LogicalClusterPhaseReady: 4,
}

// statusChange says why a status write from old to lc breaks kcp's rules
// for LogicalClusters, or "" when it keeps them.
func statusChange(old, lc *corev1alpha1.LogicalCluster) string {
	oldInit, newInit := initializerSet(old.Status.Initializers), initializerSet(lc.Status.Initializers)
	toInitializing := old.Status.Phase != corev1alpha1.LogicalClusterPhaseInitializing && lc.Status.Phase == corev1alpha1.LogicalClusterPhaseInitializing
	switch {
	case toInitializing && !initializerSet(lc.Spec.Initializers).Equal(newInit):
		return "status.initializers do not equal spec.initializers"
	case !toInitializing && lc.Status.Phase == corev1alpha1.LogicalClusterPhaseInitializing && !oldInit.IsSuperset(newInit):
		return "status.initializers must not grow"
	case lc.Status.Phase != corev1alpha1.LogicalClusterPhaseInitializing && !oldInit.Equal(newInit):
		return "status.initializers is immutable after initialization"
	case old.Status.Phase == corev1alpha1.LogicalClusterPhaseInitializing && lc.Status.Phase != corev1alpha1.LogicalClusterPhaseInitializing && len(lc.Status.Initializers) > 0:
		return "status.initializers is not empty"
	case phaseOrder[old.Status.Phase] > phaseOrder[lc.Status.Phase]:
		return fmt.Sprintf("cannot transition from %q to %q", old.Status.Phase, lc.Status.Phase)
	}
	return ""
}

func initializerSet(list []corev1alpha1.LogicalClusterInitializer) sets.Set[corev1alpha1.LogicalClusterInitializer] {
	return sets.New(list...)
}

// changedSystemAnnotation returns a system annotation that was added,
// removed or changed. kcp.io/cluster is left out: storage sets it on every
// write whatever the client sent.
func changedSystemAnnotation(old, updated map[string]string, kcpAdmin bool) (string, bool) {
	for _, pair := range [][2]map[string]string{{old, updated}, {updated, old}} {
		for k, v := range pair[0] {
			if k == logicalcluster.AnnotationKey || !corev1alpha1.IsSystemMetadataKey(k) || (kcpAdmin && adminAnnotations.Has(k)) {
				continue
			}
			if w, ok := pair[1][k]; !ok || w != v {
				return k, true
			}
		}
	}
	return "", false
}

// systemFinalizers returns the sorted system finalizers of a list.
func systemFinalizers(finalizers []string) []string {
	var out []string
	for _, f := range finalizers {
		if corev1alpha1.IsSystemMetadataKey(f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
