package garbagecollector

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/klog/v2"
)

// attemptToOrphan finishes an orphaning deletion: it removes the owner from
// the ownerReferences of its dependents in the owner's cluster, then the
// orphan finalizer from the owner.
func (c *Controller) attemptToOrphan(ctx context.Context, key string) error {
	k, ok := parseKey(key)
	if !ok {
		return nil
	}
	owner := c.graph.get(k)
	if owner == nil || !owner.orphan {
		return nil
	}
	client, err := c.clusterMetadata(k.cluster)
	if err != nil {
		return err
	}
	var errs []error
	for _, dep := range c.graph.dependentsOf(k) {
		latest, err := client.Resource(c.resourceIn(k.cluster, dep.resource)).Namespace(dep.namespace).Get(ctx, dep.name, metav1.GetOptions{})
		if err != nil || latest.UID != dep.key.uid {
			if err = ignoreGone(err); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		var keep []metav1.OwnerReference
		found := false
		for _, ref := range latest.OwnerReferences {
			if ref.UID == k.uid {
				found = true
				continue
			}
			keep = append(keep, ref)
		}
		if !found {
			continue
		}
		klog.FromContext(ctx).V(2).Info("Orphaning dependent", "cluster", k.cluster, "owner", owner.name, "resource", dep.resource, "namespace", dep.namespace, "name", dep.name)
		if err := c.patchOwners(ctx, client, dep, latest, keep); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return utilerrors.NewAggregate(errs)
	}
	return c.removeFinalizer(ctx, owner, metav1.FinalizerOrphanDependents)
}
