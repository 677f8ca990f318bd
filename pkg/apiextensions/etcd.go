package apiextensions

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"

	kstorage "github.com/shardplane/shardplane/pkg/storage"
)

// cachedStorage is genericregistry.StorageWithCacher on the shared client,
// with the reads of watchCached. The storage of one CRD in one logical
// cluster (perCluster) starts its watch cache on its first watch; other
// storage starts it right away.
func cachedStorage(etcd *kstorage.EtcdClient, perCluster bool, c *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error),
	newFunc, newListFunc func() runtime.Object, getAttrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers,
) (storage.Interface, factory.DestroyFunc, error) {
	s, destroy, err := etcd.NewRawStorage(c, newFunc, newListFunc, resourcePrefix)
	if err != nil {
		return nil, nil, err
	}
	cached := &watchCached{Interface: s, consistentFromEtcd: perCluster}
	cached.newCache = func() (*cacherstorage.Cacher, error) {
		return cacherstorage.NewCacherFromConfig(cacherstorage.Config{
			Storage:             s,
			Versioner:           storage.APIObjectVersioner{},
			GroupResource:       c.GroupResource,
			EventsHistoryWindow: c.EventsHistoryWindow,
			ResourcePrefix:      resourcePrefix,
			KeyFunc:             keyFunc,
			NewFunc:             newFunc,
			NewListFunc:         newListFunc,
			GetAttrsFunc:        getAttrs,
			IndexerFuncs:        triggers,
			Indexers:            indexers,
			Codec:               c.Codec,
		})
	}
	if !perCluster {
		if _, err := cached.cache(); err != nil {
			destroy()
			return nil, nil, err
		}
	}
	var once sync.Once
	return cached, func() {
		once.Do(func() {
			cached.stop()
			destroy()
		})
	}, nil
}

// watchCached is etcd storage with a watch cache that it may start on
// demand. Until the cache has its initial list, reads go to etcd, so that a
// CRD's first request does not wait for it; watches wait. With
// consistentFromEtcd, consistent reads (no resourceVersion) always go to
// etcd, and the cache starts with the first watch: a CRD in a cluster that
// is only read and written costs no cache, etcd watch or goroutines.
//
// A consistent read from a watch cache first waits for the cache to catch
// up with etcd's current revision, by an event or a progress notification
// of its etcd watch (the storage's own watch stream on the shared client
// keeps those prompt, see kstorage.EtcdClient.NewRawStorage; on the base
// revision, with 1,000 caches on one stream, it waited out the cacher's 3 s
// timeout). The keys of one CRD in one cluster are a small range: etcd
// reads them as cheaply, without the wait and without a cache.
type watchCached struct {
	// Interface is the etcd storage: writes and what has no cache go to it.
	storage.Interface
	consistentFromEtcd bool
	newCache           func() (*cacherstorage.Cacher, error)

	mu        sync.Mutex
	cacher    *cacherstorage.Cacher
	delegator *cacherstorage.CacheDelegator
	stopped   bool
}

var errStorageStopped = errors.New("custom resource storage is stopped")

// cache returns the cache delegator, starting the cache on first use.
func (w *watchCached) cache() (*cacherstorage.CacheDelegator, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return nil, errStorageStopped
	}
	if w.delegator == nil {
		cacher, err := w.newCache()
		if err != nil {
			return nil, err
		}
		w.cacher, w.delegator = cacher, cacherstorage.NewCacheDelegator(cacher, w.Interface)
	}
	return w.delegator, nil
}

// readyCache returns the cache delegator if the cache has its initial list.
func (w *watchCached) readyCache() *cacherstorage.CacheDelegator {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.delegator == nil || !w.cacher.Ready() {
		return nil
	}
	return w.delegator
}

func (w *watchCached) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.delegator != nil {
		w.delegator.Stop()
		w.cacher.Stop()
	}
}

func (w *watchCached) Get(ctx context.Context, key string, opts storage.GetOptions, out runtime.Object) error {
	if d := w.readyCache(); d != nil {
		return d.Get(ctx, key, opts, out)
	}
	return w.Interface.Get(ctx, key, opts, out)
}

func (w *watchCached) GetList(ctx context.Context, key string, opts storage.ListOptions, out runtime.Object) error {
	if d := w.readyCache(); d != nil && !(w.consistentFromEtcd && opts.ResourceVersion == "") {
		return d.GetList(ctx, key, opts, out)
	}
	return w.Interface.GetList(ctx, key, opts, out)
}

// Watch starts the cache if need be and waits for its initial list instead
// of asking the client to retry. A watch from a resource version older than
// what the cache has synced is served by etcd: it was read before the cache
// started (the cache would answer 410 Gone) or the cache is ahead of it.
func (w *watchCached) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	d, err := w.cache()
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	cacher := w.cacher
	w.mu.Unlock()
	if err := waitReady(ctx, cacher); err != nil {
		return nil, err
	}
	if olderThanCache(opts.ResourceVersion, cacher) {
		return w.Interface.Watch(ctx, key, opts)
	}
	return d.Watch(ctx, key, opts)
}

// olderThanCache tells whether a ready cache has synced past rv.
func olderThanCache(rv string, c *cacherstorage.Cacher) bool {
	if rv == "" || rv == "0" || !c.Ready() {
		return false
	}
	want, err := storage.APIObjectVersioner{}.ParseResourceVersion(rv)
	if err != nil {
		return false
	}
	synced, err := c.LastSyncResourceVersion()
	return err == nil && want < synced
}

// Delete and GuaranteedUpdate pass the cached object, if any, to etcd as
// the guess of the current one.
func (w *watchCached) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	if d := w.readyCache(); d != nil {
		return d.Delete(ctx, key, out, preconditions, validateDeletion, cachedExistingObject, opts)
	}
	return w.Interface.Delete(ctx, key, out, preconditions, validateDeletion, cachedExistingObject, opts)
}

func (w *watchCached) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	if d := w.readyCache(); d != nil {
		return d.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cachedExistingObject)
	}
	return w.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cachedExistingObject)
}

// ReadinessCheck reports storage that serves: reads fall back to etcd.
func (w *watchCached) ReadinessCheck() error { return nil }

// cacheReadyTimeout bounds how long a watch waits for a new cache; then the
// cacher asks the client to retry.
const cacheReadyTimeout = 10 * time.Second

func waitReady(ctx context.Context, c *cacherstorage.Cacher) error {
	if c.Ready() {
		return nil
	}
	deadline := time.NewTimer(cacheReadyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !c.Ready() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return nil
		case <-tick.C:
		}
	}
	return nil
}

var _ storage.Interface = &watchCached{}
