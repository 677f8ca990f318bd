package storage

import (
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// cohabitating maps resources that share the storage of another group to the
// group whose keys they use (events.k8s.io events are core events).
var cohabitating = map[schema.GroupResource]string{
	{Group: "events.k8s.io", Resource: "events"}: "",
}

// ResourcePrefix returns the key prefix of a resource below the etcd prefix:
// "<group or core>/<resource>".
func ResourcePrefix(gr schema.GroupResource) string {
	group := gr.Group
	if g, ok := cohabitating[gr]; ok {
		group = g
	}
	if group == "" {
		group = "core"
	}
	return group + "/" + gr.Resource
}

// RESTOptionsGetter makes the storage of every resource cluster-aware.
type RESTOptionsGetter struct {
	Delegate generic.RESTOptionsGetter
	// WatchCache turns on the watch cache.
	WatchCache bool
	// Etcd, if set, is the client every storage uses (the embedded etcd's
	// in-process client) instead of dialing its own.
	Etcd *EtcdClient
}

// GetRESTOptions returns the delegate's options with the cluster-aware key
// layout and storage decorator.
func (g RESTOptionsGetter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.Delegate.GetRESTOptions(resource, example)
	if err != nil {
		return opts, err
	}
	// Keep an explicit "<group>/<resource>" prefix (as for CRDs); qualify a
	// bare resource name with its group.
	if !strings.Contains(opts.ResourcePrefix, "/") {
		opts.ResourcePrefix = ResourcePrefix(resource)
	}
	opts.Decorator = Decorator(g.WatchCache, g.Etcd)
	return opts, nil
}

// Decorator returns a generic.StorageDecorator that stores under per-cluster
// keys, with or without the watch cache, on the shared etcd client if one is
// given and the resource's configuration names its servers (else on a
// client of each storage's own, as upstream).
func Decorator(watchCache bool, etcd *EtcdClient) generic.StorageDecorator {
	own := storageOn(watchCache, nil)
	shared := own
	if etcd != nil {
		shared = storageOn(watchCache, etcd)
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
		// The registry's key function is built for a context without a
		// cluster; the cache must key objects by their own cluster instead.
		keyFunc := func(obj runtime.Object) (string, error) { return ObjectKey(resourcePrefix, obj) }
		inner := own
		if etcd.Serves(config.Transport) {
			inner = shared
		}
		s, destroy, err := inner(config, resourcePrefix, keyFunc, newFunc, newListFunc, getAttrsFunc, trigger, indexers)
		if err != nil {
			return nil, nil, err
		}
		return NewClusterStorage(s, resourcePrefix), destroy, nil
	}
}

// storageOn is the storage of one resource, with or without the watch
// cache, on the shared client etcd, or (nil) on a client of its own.
func storageOn(watchCache bool, etcd *EtcdClient) generic.StorageDecorator {
	switch {
	case watchCache:
		return storageWithCacher(etcd)
	case etcd == nil:
		return generic.UndecoratedStorage
	default:
		return etcd.UndecoratedStorage
	}
}

// rawStorageFunc builds the etcd storage of one resource, as
// generic.NewRawStorage.
type rawStorageFunc func(config *storagebackend.ConfigForResource, newFunc, newListFunc func() runtime.Object, resourcePrefix string) (storage.Interface, factory.DestroyFunc, error)

// storageWithCacher is genericregistry.StorageWithCacher on the etcd
// storage of the shared client etcd, or (nil) of a client of its own, with
// two changes: the cache lists and watches etcd through historyBound, so
// its event history is released once the resource goes quiet (and then
// etcd, if it is the shared client, compacted up to there), and the equal
// field sets of its objects share one map. Requests the cache delegates go
// to etcd directly.
func storageWithCacher(etcd *EtcdClient) generic.StorageDecorator {
	// A storage on a client of its own (upstream's factory) is left to its
	// own compactor.
	raw := rawStorageFunc(generic.NewRawStorage)
	var compactor etcdCompactor
	if etcd != nil {
		raw, compactor = etcd.NewRawStorage, etcd
	}
	return func(
		config *storagebackend.ConfigForResource,
		resourcePrefix string,
		keyFunc func(obj runtime.Object) (string, error),
		newFunc func() runtime.Object,
		newListFunc func() runtime.Object,
		getAttrsFunc storage.AttrFunc,
		triggerFuncs storage.IndexerFuncs,
		indexers *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		s, destroyStorage, err := raw(config, newFunc, newListFunc, resourcePrefix)
		if err != nil {
			return s, destroyStorage, err
		}
		history := newHistoryBound(s, clock.RealClock{}, HistoryIdleAfter)
		history.released = func(rv uint64) { returnMemory.schedule(compactor, int64(rv)) }
		cacher, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
			Storage:             history,
			Versioner:           storage.APIObjectVersioner{},
			GroupResource:       config.GroupResource,
			EventsHistoryWindow: config.EventsHistoryWindow,
			ResourcePrefix:      resourcePrefix,
			KeyFunc:             keyFunc,
			NewFunc:             newFunc,
			NewListFunc:         newListFunc,
			GetAttrsFunc:        sharedAttrs(getAttrsFunc),
			IndexerFuncs:        triggerFuncs,
			Indexers:            indexers,
			Codec:               config.Codec,
		})
		if err != nil {
			destroyStorage()
			return nil, func() {}, err
		}
		history.cached, history.newList = cacher, newListFunc
		delegator := cacherstorage.NewCacheDelegator(cacher, s)
		var once sync.Once
		destroy := func() {
			once.Do(func() {
				delegator.Stop()
				cacher.Stop()
				destroyStorage()
			})
		}
		return delegator, destroy, nil
	}
}
