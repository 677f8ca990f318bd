// Package namespacelifecycle is Kubernetes' NamespaceLifecycle admission per
// logical cluster: content may only be created in namespaces that exist in
// the request's own cluster and are not terminating, and immortal namespaces
// cannot be deleted.
package namespacelifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// PluginName is the name of this admission plugin.
const PluginName = "shardplane.io/NamespaceLifecycle"

var namespaces = corev1.Resource("namespaces")

// NamespaceGetter finds a namespace of a cluster: from an informer first,
// live from storage when the informer has not seen it yet.
type NamespaceGetter func(ctx context.Context, cluster logicalcluster.Name, name string) (*corev1.Namespace, error)

// Plugin enforces the namespace lifecycle.
type Plugin struct {
	*admission.Handler
	getNamespace NamespaceGetter
	// clusterDeleting tells whether a logical cluster is being deleted, when
	// even its immortal namespaces go.
	clusterDeleting func(cluster logicalcluster.Name) bool
}

var _ admission.ValidationInterface = &Plugin{}

// New returns the plugin.
func New(getNamespace NamespaceGetter, clusterDeleting func(logicalcluster.Name) bool) *Plugin {
	return &Plugin{
		Handler:         admission.NewHandler(admission.Create, admission.Update, admission.Delete),
		getNamespace:    getNamespace,
		clusterDeleting: clusterDeleting,
	}
}

// immortal namespaces cannot be deleted in any logical cluster.
func immortal(cluster logicalcluster.Name, name string) bool {
	if name == metav1.NamespaceDefault {
		return true
	}
	return cluster.IsSystem() && (name == metav1.NamespaceSystem || name == metav1.NamespacePublic)
}

// Validate refuses content in missing or terminating namespaces.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok || cluster.IsWildcard() {
		return nil
	}
	if a.GetKind().GroupKind() == (schema.GroupKind{Kind: "Namespace"}) {
		if a.GetOperation() == admission.Delete && immortal(cluster, a.GetName()) && !p.clusterDeleting(cluster) {
			return apierrors.NewForbidden(a.GetResource().GroupResource(), a.GetName(), fmt.Errorf("this namespace may not be deleted"))
		}
		return nil
	}
	if a.GetOperation() == admission.Create && p.clusterDeleting(cluster) {
		return apierrors.NewForbidden(a.GetResource().GroupResource(), a.GetName(),
			fmt.Errorf("unable to create new content in logical cluster %s because it is being deleted", cluster))
	}
	if a.GetNamespace() == "" || a.GetOperation() != admission.Create {
		return nil
	}
	// Subresources of existing objects (e.g. serviceaccounts/token) are
	// checked like their parent only on create.
	ns, err := p.getNamespace(ctx, cluster, a.GetNamespace())
	if apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(namespaces, a.GetNamespace())
	}
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if ns.Status.Phase == corev1.NamespaceTerminating {
		e := admission.NewForbidden(a, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.GetNamespace()))
		if se, ok := e.(*apierrors.StatusError); ok {
			se.ErrStatus.Details.Causes = append(se.ErrStatus.Details.Causes, metav1.StatusCause{
				Type:    corev1.NamespaceTerminatingCause,
				Message: fmt.Sprintf("namespace %s is being terminated", a.GetNamespace()),
				Field:   "metadata.namespace",
			})
		}
		return e
	}
	return nil
}
