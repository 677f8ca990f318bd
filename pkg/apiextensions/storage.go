package apiextensions

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	kstorage "github.com/shardplane/shardplane/pkg/storage"
)

// resourcePrefix returns the key prefix below the etcd prefix of all
// instances of a group and resource, of CRDs and of bindings of any
// identity alike: "<group>/<resource>".
func resourcePrefix(gr schema.GroupResource) string {
	return gr.Group + "/" + gr.Resource
}

// customResourcePrefix returns the key prefix of the custom resources of a
// CRD below the etcd prefix: "<group>/<resource>/customresources".
func customResourcePrefix(gr schema.GroupResource) string {
	return resourcePrefix(gr) + "/" + kstorage.CustomResourcesSegment
}

// boundResourcePrefix returns the key prefix of the instances of a bound
// resource below the etcd prefix: "<group>/<resource>/<identityHash>".
func boundResourcePrefix(gr schema.GroupResource, identity string) string {
	return resourcePrefix(gr) + "/" + identity
}

// crRESTOptionsGetter gives the storage of one CRD in one logical cluster
// keys of the form
// /<group>/<resource>/customresources/<cluster>/[<namespace>/]<name>, and
// the storage of a bound resource keys of the form
// /<group>/<resource>/<identityHash>/<cluster>/[<namespace>/]<name>. The
// wildcard metadata storage reads both below /<group>/<resource>.
type crRESTOptionsGetter struct {
	// delegate encodes custom resources as unstructured JSON.
	delegate   generic.RESTOptionsGetter
	target     servingTarget
	watchCache bool
	etcd       *kstorage.EtcdClient
}

func (g crRESTOptionsGetter) GetRESTOptions(gr schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.delegate.GetRESTOptions(gr, example)
	if err != nil {
		return opts, err
	}
	opts.ResourcePrefix = customResourcePrefix(gr)
	cluster := g.target.cluster
	switch {
	case g.target.identity != "":
		// Bound instances of all clusters share one storage; the
		// request's cluster picks its keys.
		opts.ResourcePrefix = boundResourcePrefix(gr, g.target.identity)
		cluster = logicalcluster.Wildcard
	case g.target.metadataOnly():
		// Read-only, and keyed by cluster, namespace and name in its
		// watch cache: a cluster serves a resource from one CRD or one
		// binding, never two at once.
		opts.ResourcePrefix = resourcePrefix(gr)
	}
	opts.Decorator = clusterDecorator(g.etcd, cluster, g.watchCache)
	return opts, nil
}

// clusterDecorator builds the storage below the cluster-aware key wrapper.
// For one logical cluster the storage (and its watch cache) covers only
// that cluster's key range, so that a cluster's serving state holds none of
// the objects of other clusters, which may even follow another schema. For
// the wildcard it covers all clusters.
func clusterDecorator(etcd *kstorage.EtcdClient, cluster logicalcluster.Name, watchCache bool) generic.StorageDecorator {
	inner := func(c *storagebackend.ConfigForResource, prefix string, _ func(runtime.Object) (string, error), newFunc, newListFunc func() runtime.Object,
		_ storage.AttrFunc, _ storage.IndexerFuncs, _ *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
		return etcd.NewRawStorage(c, newFunc, newListFunc, prefix)
	}
	if watchCache {
		inner = func(c *storagebackend.ConfigForResource, prefix string, keyFunc func(runtime.Object) (string, error), newFunc, newListFunc func() runtime.Object,
			getAttrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
			// One cluster's keys are few: consistent reads go to etcd, and
			// the watch cache starts with the first watch (watchCached).
			return cachedStorage(etcd, !cluster.IsWildcard(), c, prefix, keyFunc, newFunc, newListFunc, getAttrs, triggers, indexers)
		}
	}
	return func(
		config *storagebackend.ConfigForResource,
		resourcePrefix string,
		_ func(obj runtime.Object) (string, error),
		newFunc func() runtime.Object,
		newListFunc func() runtime.Object,
		getAttrsFunc storage.AttrFunc,
		trigger storage.IndexerFuncs,
		indexers *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		keyFunc := func(obj runtime.Object) (string, error) { return kstorage.ObjectKey(resourcePrefix, obj) }
		prefix := resourcePrefix
		if !cluster.IsWildcard() {
			prefix = resourcePrefix + "/" + string(cluster)
		}
		s, destroy, err := inner(config, prefix, keyFunc, newFunc, newListFunc, getAttrsFunc, trigger, indexers)
		if err != nil {
			return nil, nil, err
		}
		return kstorage.NewClusterStorage(s, resourcePrefix), destroy, nil
	}
}
