package replication

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// replicaReconciler makes the cache server's replica of one object of a
// kind what the shard's object is: absent when the object is gone, being
// deleted, filtered out or in a system cluster; otherwise a copy, created,
// re-created when the object's uid changed, or updated when it differs.
type replicaReconciler struct {
	shard string
	kind  cacheclient.Kind

	// getLocal returns the shard's object and whether it exists.
	getLocal func(cluster logicalcluster.Name, namespace, name string) (interface{}, bool, error)
	// replicated tells whether an existing local object is replicated.
	replicated func(obj interface{}) bool
	// getReplica returns the shard's replica in the cache server, as last
	// listed or watched, and whether it exists.
	getReplica func(cluster logicalcluster.Name, namespace, name string) (*unstructured.Unstructured, bool, error)

	create func(ctx context.Context, cluster logicalcluster.Name, obj *unstructured.Unstructured) error
	update func(ctx context.Context, cluster logicalcluster.Name, obj *unstructured.Unstructured) error
	// delete deletes a replica if it still has uid.
	delete func(ctx context.Context, cluster logicalcluster.Name, namespace, name string, uid types.UID) error
}

func (r *replicaReconciler) reconcile(ctx context.Context, cluster logicalcluster.Name, namespace, name string) error {
	logger := klog.FromContext(ctx).WithValues("resource", r.kind.Resource.GroupResource().String(), "cluster", cluster, "namespace", namespace, "name", name)
	local, exists, err := r.getLocal(cluster, namespace, name)
	if err != nil {
		return err
	}
	wanted := exists && !cluster.IsSystem() && r.replicated(local)
	replica, replicaExists, err := r.getReplica(cluster, namespace, name)
	if err != nil {
		return err
	}

	if !wanted {
		if !replicaExists {
			return nil
		}
		logger.V(2).Info("Deleting replica from the cache server")
		return r.deleteReplica(ctx, cluster, replica)
	}

	want, err := newReplica(local, r.kind, r.shard, cluster)
	if err != nil {
		return err
	}
	if replicaExists && want.GetUID() != "" && replica.GetUID() != want.GetUID() {
		// A replica's uid never changes: the object was re-created.
		logger.V(2).Info("Re-creating replica of a re-created object", "uid", want.GetUID(), "replicaUID", replica.GetUID())
		if err := r.deleteReplica(ctx, cluster, replica); err != nil {
			return err
		}
		replicaExists = false
	}
	if !replicaExists {
		logger.V(2).Info("Creating replica in the cache server")
		err := r.create(ctx, cluster, want)
		if apierrors.IsAlreadyExists(err) {
			// The replica informer has not seen it yet; its event
			// brings the key back.
			return nil
		}
		return err
	}
	if replicaUpToDate(want, replica) {
		return nil
	}
	logger.V(2).Info("Updating replica in the cache server")
	want.SetResourceVersion(replica.GetResourceVersion())
	return r.update(ctx, cluster, want)
}

// deleteReplica deletes replica unless it is already gone or was replaced
// (its uid changed; the replica informer brings the key back).
func (r *replicaReconciler) deleteReplica(ctx context.Context, cluster logicalcluster.Name, replica *unstructured.Unstructured) error {
	err := r.delete(ctx, cluster, replica.GetNamespace(), replica.GetName(), replica.GetUID())
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// replicated returns whether an existing local object is replicated: it
// is not being deleted and filter (nil: every object) accepts it.
func replicated(filter func(metav1.Object) bool) func(obj interface{}) bool {
	return func(obj interface{}) bool {
		m, err := meta.Accessor(obj)
		if err != nil || m.GetDeletionTimestamp() != nil {
			return false
		}
		return filter == nil || filter(m)
	}
}
