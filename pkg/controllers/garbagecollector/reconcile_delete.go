package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/klog/v2"
)

// ownerState is what an ownerReference resolves to, in the dependent's own
// logical cluster.
type ownerState int

const (
	// solid: the owner exists and is not waiting for its dependents.
	solid ownerState = iota
	// dangling: no object of that UID exists in the cluster.
	dangling
	// waiting: the owner is being deleted in the foreground.
	waiting
)

// attemptToDelete decides about one object as Kubernetes' attemptToDeleteItem
// does: remove references to absent or foreground-deleting owners while a
// solid owner remains, otherwise delete the object.
func (c *Controller) attemptToDelete(ctx context.Context, key string) error {
	k, ok := parseKey(key)
	if !ok {
		return nil
	}
	n := c.graph.get(k)
	if n == nil {
		return nil
	}
	if n.foreground {
		return c.processDeletingDependents(ctx, n)
	}
	if n.deleting || c.ownersSolidInGraph(n) {
		return nil
	}
	client, err := c.clusterMetadata(k.cluster)
	if err != nil {
		return err
	}
	latest, err := client.Resource(c.resourceIn(n.key.cluster, n.resource)).Namespace(n.namespace).Get(ctx, n.name, metav1.GetOptions{})
	if err != nil || latest.UID != k.uid || latest.DeletionTimestamp != nil || len(latest.OwnerReferences) == 0 {
		// Gone, replaced or already being deleted: the watch tells the rest.
		return ignoreGone(err)
	}

	states := make(map[types.UID]ownerState, len(latest.OwnerReferences))
	var nSolid, nDangling, nWaiting int
	for _, ref := range latest.OwnerReferences {
		s, err := c.classify(ctx, n, client, ref)
		if errors.Is(err, errNamespacedOwnerOfClusterScoped) {
			// Retrying cannot fix the reference; as upstream, the object stays.
			klog.FromContext(ctx).V(2).Info("Cluster-scoped object refers to a namespaced owner, leaving it alone",
				"cluster", k.cluster, "resource", n.resource, "name", n.name, "owner", ref)
			return nil
		}
		if err != nil {
			return err
		}
		states[ref.UID] = s
		switch s {
		case solid:
			nSolid++
		case dangling:
			nDangling++
		case waiting:
			nWaiting++
		}
	}
	logger := klog.FromContext(ctx).WithValues("cluster", k.cluster, "resource", n.resource, "namespace", n.namespace, "name", n.name)

	switch {
	case nSolid > 0:
		if nDangling+nWaiting == 0 {
			return nil
		}
		// Keep the object for its solid owners; forget the others.
		var keep []metav1.OwnerReference
		for _, ref := range latest.OwnerReferences {
			if states[ref.UID] == solid {
				keep = append(keep, ref)
			}
		}
		logger.V(2).Info("Removing references to absent or deleting owners")
		return c.patchOwners(ctx, client, n, latest, keep)
	case nWaiting > 0 && len(c.graph.dependentsOf(k)) > 0:
		// An owner waits for this object, which has dependents itself: delete
		// it in the foreground too. If one of its dependents waits for it in
		// turn (a cycle), stop blocking the owners so the cycle can end.
		for _, dep := range c.graph.dependentsOf(k) {
			if dep.foreground {
				refs := make([]metav1.OwnerReference, len(latest.OwnerReferences))
				copy(refs, latest.OwnerReferences)
				unblock := false
				for i := range refs {
					if states[refs[i].UID] == waiting {
						refs[i].BlockOwnerDeletion = &unblock
					}
				}
				if err := c.patchOwners(ctx, client, n, latest, refs); err != nil {
					return err
				}
				break
			}
		}
		logger.V(2).Info("Deleting object in the foreground, its owner waits for it")
		return c.delete(ctx, client, n, metav1.DeletePropagationForeground)
	default:
		policy := metav1.DeletePropagationBackground
		for _, f := range latest.Finalizers {
			switch f {
			case metav1.FinalizerOrphanDependents:
				policy = metav1.DeletePropagationOrphan
			case metav1.FinalizerDeleteDependents:
				policy = metav1.DeletePropagationForeground
			}
		}
		logger.V(2).Info("Deleting object, its owners are gone", "propagationPolicy", policy)
		return c.delete(ctx, client, n, policy)
	}
}

// ownersSolidInGraph tells whether every owner of n was observed and none
// is being deleted in the foreground: nothing to do, no need to read.
func (c *Controller) ownersSolidInGraph(n *node) bool {
	for _, ref := range n.owners {
		o := c.graph.get(nodeKey{cluster: n.key.cluster, uid: ref.UID})
		if o == nil || o.foreground || !matchesOwner(o, ref, n.namespace) {
			return false
		}
	}
	return true
}

// classify resolves one ownerReference of dependent n: from the graph when
// an owner of that UID was observed where the reference can point (the
// dependent's namespace, or cluster-scoped), else by reading the owner in
// the dependent's cluster and namespace, as upstream's isDangling does. A
// reference from a cluster-scoped object to a namespaced owner is invalid:
// errNamespacedOwnerOfClusterScoped.
func (c *Controller) classify(ctx context.Context, n *node, client metadata.Interface, ref metav1.OwnerReference) (ownerState, error) {
	cluster, ns := n.key.cluster, n.namespace
	o := c.graph.get(nodeKey{cluster: cluster, uid: ref.UID})
	if o != nil {
		if o.namespace != "" && o.namespace != ns {
			// The owner of that UID lives in another namespace: the
			// reference cannot reach it.
			c.recordInvalidNamespaceOwnerRef(ctx, n, ref)
			if ns == "" {
				return solid, errNamespacedOwnerOfClusterScoped
			}
		} else if matchesOwner(o, ref, ns) {
			if o.foreground {
				return waiting, nil
			}
			return solid, nil
		}
		// Otherwise the reference's coordinates disagree with the observed
		// owner: read what the reference names.
	}
	gvr, namespaced, err := c.mapping(cluster, ref.APIVersion, ref.Kind)
	if err != nil {
		return solid, err
	}
	// An owner without a node (graph) that lives in another namespace gets
	// the warning an observed one gets above.
	elsewhere := func() {
		if o == nil && namespaced && c.ownerInAnotherNamespace(ctx, client, gvr, ns, ref) {
			c.recordInvalidNamespaceOwnerRef(ctx, n, ref)
		}
	}
	if !namespaced {
		ns = ""
	} else if ns == "" {
		// A cluster-scoped object naming a namespaced kind is warned about
		// whether such an owner exists anywhere or not, as upstream
		// documents it.
		c.recordInvalidNamespaceOwnerRef(ctx, n, ref)
		return solid, errNamespacedOwnerOfClusterScoped
	}
	owner, err := client.Resource(gvr).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		elsewhere()
		return dangling, nil
	case err != nil:
		return solid, err
	case owner.UID != ref.UID:
		elsewhere()
		return dangling, nil
	case owner.DeletionTimestamp != nil && hasFinalizer(owner.Finalizers, metav1.FinalizerDeleteDependents):
		return waiting, nil
	}
	return solid, nil
}

// ownerInAnotherNamespace tells whether the object ref names, by name and
// UID, exists in a namespace of the dependent's cluster other than ns. It
// lists by name: an owner the graph keeps no node of is found only so.
func (c *Controller) ownerInAnotherNamespace(ctx context.Context, client metadata.Interface, gvr schema.GroupVersionResource, ns string, ref metav1.OwnerReference) bool {
	list, err := client.Resource(gvr).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", ref.Name).String()})
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Looking for an owner in other namespaces failed", "resource", gvr, "name", ref.Name, "err", err)
		return false
	}
	for _, item := range list.Items {
		if item.UID == ref.UID && item.Name == ref.Name && item.Namespace != ns {
			return true
		}
	}
	return false
}

// processDeletingDependents finishes a foreground deletion once no
// dependent blocks it, and otherwise makes sure the blocking ones go.
func (c *Controller) processDeletingDependents(ctx context.Context, owner *node) error {
	var blocking []*node
	for _, dep := range c.graph.dependentsOf(owner.key) {
		if dep.blocks(owner.key.uid) {
			blocking = append(blocking, dep)
		}
	}
	if len(blocking) == 0 {
		return c.removeFinalizer(ctx, owner, metav1.FinalizerDeleteDependents)
	}
	for _, dep := range blocking {
		if !dep.foreground {
			c.deletes.Enqueue(keyString(dep.key))
		}
	}
	return nil
}

func (c *Controller) delete(ctx context.Context, client metadata.Interface, n *node, policy metav1.DeletionPropagation) error {
	err := client.Resource(c.resourceIn(n.key.cluster, n.resource)).Namespace(n.namespace).Delete(ctx, n.name, deleteOptions(n.key.uid, policy))
	if apierrors.IsConflict(err) {
		return nil // the UID precondition failed: another object took the name
	}
	return ignoreGone(err)
}

// patchOwners sets an object's ownerReferences, if it is still the version
// that was read.
func (c *Controller) patchOwners(ctx context.Context, client metadata.Interface, n *node, latest *metav1.PartialObjectMetadata, refs []metav1.OwnerReference) error {
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	return c.patchMetadata(ctx, client, n, latest, "ownerReferences", refs)
}

// removeFinalizer removes a finalizer from an object being deleted.
func (c *Controller) removeFinalizer(ctx context.Context, n *node, finalizer string) error {
	client, err := c.clusterMetadata(n.key.cluster)
	if err != nil {
		return err
	}
	latest, err := client.Resource(c.resourceIn(n.key.cluster, n.resource)).Namespace(n.namespace).Get(ctx, n.name, metav1.GetOptions{})
	if err != nil || latest.UID != n.key.uid || !hasFinalizer(latest.Finalizers, finalizer) {
		return ignoreGone(err)
	}
	rest := []string{}
	for _, f := range latest.Finalizers {
		if f != finalizer {
			rest = append(rest, f)
		}
	}
	klog.FromContext(ctx).V(2).Info("Removing finalizer", "cluster", n.key.cluster, "resource", n.resource, "namespace", n.namespace, "name", n.name, "finalizer", finalizer)
	return c.patchMetadata(ctx, client, n, latest, "finalizers", rest)
}

// patchMetadata sets one metadata field with a JSON merge patch that carries
// uid and resourceVersion as preconditions; it works for custom resources,
// which take no strategic merge patches.
func (c *Controller) patchMetadata(ctx context.Context, client metadata.Interface, n *node, latest *metav1.PartialObjectMetadata, field string, value interface{}) error {
	patch, err := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{
		"uid":             latest.UID,
		"resourceVersion": latest.ResourceVersion,
		field:             value,
	}})
	if err != nil {
		return err
	}
	_, err = client.Resource(c.resourceIn(n.key.cluster, n.resource)).Namespace(n.namespace).Patch(ctx, n.name, types.MergePatchType, patch, metav1.PatchOptions{})
	return ignoreGone(err)
}

// errNamespacedOwnerOfClusterScoped marks a reference from a cluster-scoped
// object to a namespaced owner, which no retry resolves.
var errNamespacedOwnerOfClusterScoped = errors.New("cluster-scoped objects cannot refer to namespaced owners")

// matchesOwner tells whether observed owner o is what ref, written in a
// dependent of namespace ns, names: same name and group, and an owner that
// is cluster-scoped or in ns.
func matchesOwner(o *node, ref metav1.OwnerReference, ns string) bool {
	if o.name != ref.Name || (o.namespace != "" && o.namespace != ns) {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == o.resource.Group
}

func hasFinalizer(finalizers []string, f string) bool {
	for _, x := range finalizers {
		if x == f {
			return true
		}
	}
	return false
}
