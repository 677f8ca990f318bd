// Package logicalcluster guards what the system owns on LogicalClusters.
// As in kcp, users whom RBAC allows may change a LogicalCluster's labels,
// annotations and finalizers of their own; its spec (owner, initializers,
// terminators, directlyDeletable), its system annotations and finalizers
// (kcp.io and its subdomains: path, type, required-groups, owner, the
// deletion finalizer, ...) are changed only by system:masters and
// system:kcp:logical-cluster-admin. Only they create LogicalClusters, and
// only they delete one that is not spec.directlyDeletable. The status is
// guarded by the systemstatus plugin.
package logicalcluster

import (
	"context"
	"fmt"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	if gr != corev1alpha1.Resource("logicalclusters") || a.GetSubresource() != "" || systemstatus.IsSystem(a.GetUserInfo()) {
		return nil
	}
	forbidden := func(format string, args ...any) error {
		return apierrors.NewForbidden(gr, a.GetName(), fmt.Errorf(format, args...))
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
		if msg := systemFieldChange(old, lc); msg != "" {
			return forbidden("%s", msg)
		}
	}
	return nil
}

// systemFieldChange says what lc changes of old that only the system may
// change, or "" when nothing.
func systemFieldChange(old, lc *corev1alpha1.LogicalCluster) string {
	if !apiequality.Semantic.DeepEqual(old.Spec, lc.Spec) {
		return "spec (owner, initializers, terminators, directlyDeletable) is set by the system"
	}
	if key, changed := changedSystemAnnotation(old.Annotations, lc.Annotations); changed {
		return fmt.Sprintf("annotation %s is set by the system", key)
	}
	if !slices.Equal(systemFinalizers(old.Finalizers), systemFinalizers(lc.Finalizers)) {
		return "finalizers of kcp.io and its subdomains are managed by the system"
	}
	return ""
}

// changedSystemAnnotation returns a system annotation that was added,
// removed or changed. kcp.io/cluster is left out: storage sets it on every
// write whatever the client sent.
func changedSystemAnnotation(old, updated map[string]string) (string, bool) {
	for _, pair := range [][2]map[string]string{{old, updated}, {updated, old}} {
		for k, v := range pair[0] {
			if k == logicalcluster.AnnotationKey || !corev1alpha1.IsSystemMetadataKey(k) {
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
