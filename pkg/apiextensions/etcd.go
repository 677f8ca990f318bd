package apiextensions

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"google.golang.org/grpc/metadata"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/etcd3"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/client-go/tools/cache"

	kstorage "github.com/kplane-dev/kplane/pkg/storage"
)

// sharedEtcd gives the storages of all custom resources one etcd client.
// The upstream storage factory opens a client (a gRPC connection with its
// buffers and goroutines) per storage, which would make every served CRD of
// every logical cluster cost a connection.
type sharedEtcd struct {
	// shared, if set, is the client of all the process's storages (the
	// embedded etcd's in-process one, with its compactor); else a client
	// is dialed on first use.
	shared *kstorage.EtcdClient

	once      sync.Once
	client    *kubernetes.Client
	compactor etcd3.Compactor
	stop      func()
	err       error
}

// close stops the compactor and closes the client at server shutdown.
func (e *sharedEtcd) close() {
	if e.stop != nil {
		e.stop()
	}
	if e.client != nil {
		_ = e.client.Close()
	}
}

func (e *sharedEtcd) get(c *storagebackend.ConfigForResource) (*kubernetes.Client, etcd3.Compactor, error) {
	e.once.Do(func() {
		tlsConfig, err := transport.TLSInfo{
			CertFile: c.Transport.CertFile, KeyFile: c.Transport.KeyFile, TrustedCAFile: c.Transport.TrustedCAFile,
		}.ClientConfig()
		if err != nil {
			e.err = err
			return
		}
		if c.Transport.CertFile == "" && c.Transport.KeyFile == "" && c.Transport.TrustedCAFile == "" {
			tlsConfig = nil
		}
		e.client, e.err = kubernetes.New(clientv3.Config{
			DialTimeout:          20 * time.Second,
			DialKeepAliveTime:    30 * time.Second,
			DialKeepAliveTimeout: 10 * time.Second,
			Endpoints:            c.Transport.ServerList,
			TLS:                  tlsConfig,
		})
		if e.err == nil && c.CompactionInterval > 0 {
			compactor := etcd3.StartCompactorPerEndpoint(e.client.Client, c.CompactionInterval)
			e.compactor, e.stop = compactor, compactor.Stop
		}
	})
	return e.client, e.compactor, e.err
}

// rawStorage is generic.UndecoratedStorage on the shared client.
func (e *sharedEtcd) rawStorage(c *storagebackend.ConfigForResource, newFunc, newListFunc func() runtime.Object, resourcePrefix string) (storage.Interface, factory.DestroyFunc, error) {
	if e.shared != nil {
		return e.shared.NewRawStorage(c, newFunc, newListFunc, resourcePrefix)
	}
	client, compactor, err := e.get(c)
	if err != nil {
		return nil, nil, err
	}
	transformer := c.Transformer
	if transformer == nil {
		transformer = identity.NewEncryptCheckTransformer()
	}
	versioner := storage.APIObjectVersioner{}
	s, err := etcd3.New(client, compactor, c.Codec, newFunc, newListFunc, c.Prefix, resourcePrefix, c.GroupResource,
		transformer, c.LeaseManagerConfig, etcd3.NewDefaultDecoder(c.Codec, versioner), versioner)
	if err != nil {
		return nil, nil, err
	}
	var once sync.Once
	return s, func() { once.Do(s.Close) }, nil
}

// cachedStorage is genericregistry.StorageWithCacher on the shared client,
// with the reads of watchCached. The storage of one CRD in one logical
// cluster (perCluster) starts its watch cache on its first watch; other
// storage starts it right away.
func (e *sharedEtcd) cachedStorage(perCluster bool, c *storagebackend.ConfigForResource, resourcePrefix string, keyFunc func(runtime.Object) (string, error),
	newFunc, newListFunc func() runtime.Object, getAttrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers,
) (storage.Interface, factory.DestroyFunc, error) {
	s, destroy, err := e.rawStorage(c, newFunc, newListFunc, resourcePrefix)
	if err != nil {
		return nil, nil, err
	}
	cached := &watchCached{Interface: s, consistentFromEtcd: perCluster}
	cached.newCache = func() (*cacherstorage.Cacher, error) {
		return cacherstorage.NewCacherFromConfig(cacherstorage.Config{
			Storage:             ownWatchStream{Interface: s, stream: strconv.FormatUint(watchStreams.Add(1), 10)},
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
// of its etcd watch (ownWatchStream keeps those prompt; on the base
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

// watchStreams numbers the etcd watch streams of watch caches.
var watchStreams atomic.Uint64

// ownWatchStream gives the etcd watch of one watch cache a gRPC stream of
// its own on the shared client. The client multiplexes the watches of equal
// request metadata on one stream, and etcd answers a progress request on a
// stream only once every watcher of the stream is in sync: on a stream
// shared by hundreds of caches, a cache waiting for a progress notification
// to serve a consistent read waited out its 3 s timeout. The stream key
// travels as metadata, so that the cache's progress requests reach its
// watch's stream.
type ownWatchStream struct {
	storage.Interface
	stream string
}

func (s ownWatchStream) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	return s.Interface.Watch(s.streamContext(ctx), key, opts)
}

func (s ownWatchStream) RequestWatchProgress(ctx context.Context) error {
	return s.Interface.RequestWatchProgress(s.streamContext(ctx))
}

func (s ownWatchStream) streamContext(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "kplane-watch-stream", s.stream)
}
