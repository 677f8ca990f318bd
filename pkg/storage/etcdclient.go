package storage

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"google.golang.org/grpc/metadata"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	genericfeatures "k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/etcd3"
	etcdfeature "k8s.io/apiserver/pkg/storage/feature"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// EtcdClient is one etcd client that every storage of a process shares,
// with the one compactor that goes with it. Upstream's storage factory
// dials a client per resource (a gRPC connection with its buffers and
// goroutines each); a shard with an embedded etcd instead gives all its
// storages the server's in-process client (embeddedetcd.Server.Client),
// and custom resources share one dialed client (DialEtcdClient) with
// --etcd-servers.
type EtcdClient struct {
	client *kubernetes.Client
	// transport is what the client talks to: the servers (and the TLS
	// files it dialed them with). A resource configured for other servers
	// (--etcd-servers-overrides) does not use the client.
	transport storagebackend.TransportConfig
	// owned tells that Close closes the client: it was dialed for the
	// storages.
	owned bool
	// checked is closed once etcd answered the feature check's status
	// request (never, when another client checks the same endpoints).
	checked <-chan struct{}
	// checks ends the feature check's status requests on Close.
	checks *checkGate
	// streams numbers the watch streams of the storages.
	streams atomic.Uint64
	// compacted, when set, is called after compactTo compacted.
	compacted func()

	mu sync.Mutex
	// compactor runs while storages use the client (refs), as upstream's
	// per-transport compactor does.
	compactor stoppableCompactor
	refs      int
}

type stoppableCompactor interface {
	etcd3.Compactor
	Stop()
}

// NewEtcdClient wraps c, an etcd client of the server at endpoint, for
// storages; it decorates c's KV with upstream's latency tracker. The caller
// keeps ownership of c and closes it after the storages are destroyed.
func NewEtcdClient(ctx context.Context, c *clientv3.Client, endpoint string) *EtcdClient {
	// An in-process client has no endpoints: check the server behind it
	// under its endpoint.
	return newEtcdClient(ctx, c, storagebackend.TransportConfig{ServerList: []string{endpoint}}, false)
}

// DialEtcdClient dials the etcd servers of t, as upstream's storage factory
// does for each resource, for storages to share. The EtcdClient owns the
// connection: Close closes it after the storages are destroyed.
func DialEtcdClient(t storagebackend.TransportConfig) (*EtcdClient, error) {
	tlsConfig, err := transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.TrustedCAFile}.ClientConfig()
	if err != nil {
		return nil, err
	}
	if t.CertFile == "" && t.KeyFile == "" && t.TrustedCAFile == "" {
		tlsConfig = nil // the client tells plain connections by a nil config
	}
	c, err := clientv3.New(clientv3.Config{
		DialTimeout:          20 * time.Second,
		DialKeepAliveTime:    30 * time.Second,
		DialKeepAliveTimeout: 10 * time.Second,
		Endpoints:            t.ServerList,
		TLS:                  tlsConfig,
	})
	if err != nil {
		return nil, fmt.Errorf("dial etcd %v: %w", t.ServerList, err)
	}
	return newEtcdClient(c.Ctx(), c, t, true), nil
}

// newEtcdClient wraps c, which talks to t's servers; owned tells whether
// Close closes c.
func newEtcdClient(ctx context.Context, c *clientv3.Client, t storagebackend.TransportConfig, owned bool) *EtcdClient {
	kc := &kubernetes.Client{Client: c}
	kc.Kubernetes = kc
	// As upstream, track the etcd latency of each request for its log.
	c.KV = etcd3.NewETCDLatencyTracker(c.KV)
	// The cacher serves consistent reads from the cache only once etcd is
	// known to answer progress requests; as upstream, check the endpoints
	// of each new client.
	checked := make(chan struct{})
	checks := &checkGate{}
	etcdfeature.DefaultFeatureSupportChecker.CheckClient(ctx, endpointClient{Client: c, endpoints: t.ServerList, answered: checked, once: &sync.Once{}, gate: checks}, storage.RequestWatchProgress)
	return &EtcdClient{client: kc, transport: t, owned: owned, checked: checked, checks: checks}
}

// KV is the client's key-value API, for what reads or writes etcd keys
// directly (a logical cluster's move between shards, object counts).
func (e *EtcdClient) KV() clientv3.KV { return e.client.KV }

// Close ends the feature check's status requests (one that meets an
// embedded etcd's shutdown panics in it) and closes a client that
// DialEtcdClient dialed; the caller of NewEtcdClient closes its own.
// Destroy the storages first: their compactor stops with the last of them.
func (e *EtcdClient) Close() error {
	e.checks.close()
	if !e.owned {
		return nil
	}
	return e.client.Close()
}

// Serves tells whether a storage configured with t may use the client: t
// names the same servers (in any order) and, for a dialed client, the same
// TLS files. Else the storage dials its own, as upstream.
func (e *EtcdClient) Serves(t storagebackend.TransportConfig) bool {
	if e == nil || !sets.New(t.ServerList...).Equal(sets.New(e.transport.ServerList...)) {
		return false
	}
	return !e.owned || (t.CertFile == e.transport.CertFile && t.KeyFile == e.transport.KeyFile && t.TrustedCAFile == e.transport.TrustedCAFile)
}

// endpointClient names the endpoints of a client, which an in-process
// client has none of, and tells when a status request was answered.
type endpointClient struct {
	*clientv3.Client
	endpoints []string
	answered  chan struct{}
	once      *sync.Once
	gate      *checkGate
}

// checkGate lets status requests through until it is closed; close waits
// for those under way.
type checkGate struct {
	mu     sync.RWMutex
	closed bool
}

func (g *checkGate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// errChecksClosed answers a status request after Close.
var errChecksClosed = errors.New("the etcd client is closed")

func (c endpointClient) Endpoints() []string { return c.endpoints }

func (c endpointClient) Status(ctx context.Context, endpoint string) (*clientv3.StatusResponse, error) {
	c.gate.mu.RLock()
	defer c.gate.mu.RUnlock()
	if c.gate.closed {
		return nil, errChecksClosed
	}
	resp, err := c.Client.Status(ctx, endpoint)
	if err == nil {
		c.once.Do(func() { close(c.answered) })
	}
	return resp, err
}

// NewRawStorage is generic.NewRawStorage on the shared client: the etcd
// storage of one resource, built as upstream's factory builds it (codec,
// transformer, decoder, lease manager, compactor) but without a client of
// its own. Destroying it releases its compactor reference and leaves the
// client open.
func (e *EtcdClient) NewRawStorage(c *storagebackend.ConfigForResource, newFunc, newListFunc func() runtime.Object, resourcePrefix string) (storage.Interface, factory.DestroyFunc, error) {
	compactor, release := e.acquireCompactor(c.CompactionInterval)
	transformer := c.Transformer
	if transformer == nil {
		transformer = identity.NewEncryptCheckTransformer()
	}
	versioner := storage.APIObjectVersioner{}
	decoder := etcd3.NewDefaultDecoder(c.Codec, versioner)
	unsafeDeletion := utilfeature.DefaultFeatureGate.Enabled(genericfeatures.AllowUnsafeMalformedObjectDeletion)
	if unsafeDeletion {
		transformer = etcd3.WithCorruptObjErrorHandlingTransformer(transformer)
		decoder = etcd3.WithCorruptObjErrorHandlingDecoder(decoder)
	}
	store, err := etcd3.New(e.client, compactor, c.Codec, newFunc, newListFunc, c.Prefix, resourcePrefix, c.GroupResource,
		transformer, c.LeaseManagerConfig, decoder, versioner)
	if err != nil {
		release()
		return nil, nil, err
	}
	// Closing its own client would end the storage's watches; a shared
	// client stays open, so the storage ends them (handlers of watches
	// that bypass a watch cache wait for that at shutdown).
	destroyed, endWatches := context.WithCancel(context.Background())
	var once sync.Once
	// Registries destroy a storage once per subresource sharing it.
	destroy := func() {
		once.Do(func() {
			endWatches()
			store.Close()
			release()
		})
	}
	var s storage.Interface = store
	if unsafeDeletion {
		s = etcd3.NewStoreWithUnsafeCorruptObjectDeletion(s, c.GroupResource)
	}
	return ownWatchStream{Interface: s, stream: strconv.FormatUint(e.streams.Add(1), 10), destroyed: destroyed}, destroy, nil
}

// ownWatchStream gives the etcd watches of one storage a stream of their
// own on the shared client, as a client of its own would, and ends them
// when the storage is destroyed, as closing that client would. The client
// multiplexes the watches of equal request metadata on one stream, and
// etcd answers a progress request on a stream only once every watcher of
// the stream is in sync: on one stream shared by every watch cache, a
// consistent read from one cache would wait for all the others. The
// stream key travels as metadata, so that the storage's progress requests
// reach its watches' stream.
type ownWatchStream struct {
	storage.Interface
	stream    string
	destroyed context.Context
}

func (s ownWatchStream) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	ctx, cancel := context.WithCancel(s.streamContext(ctx))
	stopEnding := context.AfterFunc(s.destroyed, cancel)
	end := func() {
		stopEnding()
		cancel()
	}
	w, err := s.Interface.Watch(ctx, key, opts)
	if err != nil {
		end()
		return nil, err
	}
	return &endingWatch{Interface: w, end: end}, nil
}

// endingWatch releases the context of a watch when it is stopped.
type endingWatch struct {
	watch.Interface
	end func()
}

func (w *endingWatch) Stop() {
	w.Interface.Stop()
	w.end()
}

func (s ownWatchStream) RequestWatchProgress(ctx context.Context) error {
	return s.Interface.RequestWatchProgress(s.streamContext(ctx))
}

func (s ownWatchStream) streamContext(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "shardplane-storage-watch-stream", s.stream)
}

// UndecoratedStorage is generic.UndecoratedStorage on the shared client.
func (e *EtcdClient) UndecoratedStorage(c *storagebackend.ConfigForResource, resourcePrefix string, _ func(runtime.Object) (string, error),
	newFunc, newListFunc func() runtime.Object, _ storage.AttrFunc, _ storage.IndexerFuncs, _ *cache.Indexers,
) (storage.Interface, factory.DestroyFunc, error) {
	return e.NewRawStorage(c, newFunc, newListFunc, resourcePrefix)
}

// compactRevKey is the key upstream's compactors take turns on: its value
// is the revision last compacted, its version counts the compactions.
const compactRevKey = "compact_rev_key"

// compactTo compacts etcd up to rev unless it is compacted that far. It
// takes a turn as upstream's compactors do (compare-and-swap on
// compactRevKey), so that the periodic compactor of this and every other
// process on the etcd learns the new revision and skips its next round; and
// it waits for the physical compaction, so that the deleted keys' index
// entries and pages are free when it returns.
func (e *EtcdClient) compactTo(ctx context.Context, rev int64) error {
	resp, err := e.client.KV.Get(ctx, compactRevKey)
	if err != nil {
		return err
	}
	var version, compacted int64
	if len(resp.Kvs) > 0 {
		version = resp.Kvs[0].Version
		if compacted, err = strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64); err != nil {
			return fmt.Errorf("parse %s: %w", compactRevKey, err)
		}
	}
	if compacted >= rev {
		return nil
	}
	txn, err := e.client.KV.Txn(ctx).If(
		clientv3.Compare(clientv3.Version(compactRevKey), "=", version),
	).Then(
		clientv3.OpPut(compactRevKey, strconv.FormatInt(rev, 10)),
	).Commit()
	if err != nil {
		return err
	}
	if !txn.Succeeded {
		return nil // another compactor took this turn
	}
	if _, err := e.client.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return err
	}
	if e.compacted != nil {
		e.compacted()
	}
	return nil
}

// OnCompacted sets f to be called after each compaction the storages ask
// for when they release memory (a physical one: its writes are done). An
// embedded etcd gives back the database pages the compaction touched.
// Set it before the storages are built.
func (e *EtcdClient) OnCompacted(f func()) { e.compacted = f }

// acquireCompactor returns the client's compactor (nil when interval is 0:
// compaction is off) and the function that releases it. The first storage
// starts it at its interval (all storages of the shard share one), the
// last one to go stops it.
func (e *EtcdClient) acquireCompactor(interval time.Duration) (etcd3.Compactor, func()) {
	if interval == 0 {
		return nil, func() {}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.compactor == nil {
		e.compactor = etcd3.NewCompactor(e.client.Client, interval, clock.RealClock{}, nil)
	}
	e.refs++
	var once sync.Once
	return e.compactor, func() {
		once.Do(func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.refs--
			if e.refs == 0 {
				e.compactor.Stop()
				e.compactor = nil
			}
		})
	}
}

var _ generic.StorageDecorator = (&EtcdClient{}).UndecoratedStorage
