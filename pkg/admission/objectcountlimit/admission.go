// Package objectcountlimit is kcp's core.kcp.io/LogicalClusterObjectCountLimit:
// creates in a logical cluster at its total object count limit are refused
// with 403; deletes, updates and subresources always pass. The counts are
// pkg/objectcount's.
package objectcountlimit

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/admission"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/objectcount"
)

// Plugin enforces the limits of a shard's registry.
type Plugin struct {
	*admission.Handler
	registry *objectcount.Registry
	// logicalCluster returns the LogicalCluster of a cluster, nil if unknown.
	logicalCluster func(logicalcluster.Name) *corev1alpha1.LogicalCluster
	// ownerBinding is the ClusterRoleBinding the system writes into every
	// new workspace for its owner: never refused.
	ownerBinding string
}

var _ admission.ValidationInterface = &Plugin{}

// New returns the plugin.
func New(registry *objectcount.Registry, logicalCluster func(logicalcluster.Name) *corev1alpha1.LogicalCluster, ownerBinding string) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Delete), registry: registry, logicalCluster: logicalCluster, ownerBinding: ownerBinding}
}

// Validate counts creates and deletes and refuses a create at the limit, as
// kcp's plugin does (same exemptions, same message).
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !p.registry.Active() || a.GetSubresource() != "" {
		return nil
	}
	// Bootstrapping content and events (needed to debug a full workspace)
	// are never counted.
	switch gr := a.GetResource().GroupResource(); gr {
	case corev1alpha1.Resource("logicalclusters"), corev1.Resource("events"), eventsv1.Resource("events"):
		return nil
	case rbacv1.Resource("clusterrolebindings"):
		if a.GetName() == p.ownerBinding {
			return nil
		}
	}
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok || cluster.IsWildcard() {
		return nil
	}
	if a.GetOperation() == admission.Delete {
		p.registry.Add(cluster, -1)
		return nil
	}
	// Counted optimistically: the next scan corrects a create that fails
	// after admission.
	lc := p.logicalCluster(cluster)
	if lc == nil || lc.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
		p.registry.Add(cluster, 1)
		return nil
	}
	limit := p.registry.LimitFor(cluster, lc.Annotations)
	if limit <= 0 {
		p.registry.Add(cluster, 1)
		return nil
	}
	if count := p.registry.Count(cluster); count >= limit {
		return admission.NewForbidden(a, fmt.Errorf(
			"logical cluster %q has reached its total object count limit (%d/%d objects); delete objects to free up capacity", cluster, count, limit))
	}
	p.registry.Add(cluster, 1)
	return nil
}
