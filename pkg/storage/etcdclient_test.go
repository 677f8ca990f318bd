package storage

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	etcdfeature "k8s.io/apiserver/pkg/storage/feature"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd/etcdtest"
)

// countingKV counts the requests of the storages that use it.
type countingKV struct {
	clientv3.KV
	requests atomic.Int64
	// reads counts the reads of keys other than the compaction's.
	reads atomic.Int64
}

func (k *countingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	k.requests.Add(1)
	if key != compactRevKey {
		k.reads.Add(1)
	}
	return k.KV.Get(ctx, key, opts...)
}

func (k *countingKV) Txn(ctx context.Context) clientv3.Txn {
	k.requests.Add(1)
	return k.KV.Txn(ctx)
}

// inProcessEtcd starts an embedded etcd and returns its in-process client
// for storages, whose requests kv counts.
func inProcessEtcd(t *testing.T) (*EtcdClient, *countingKV) {
	t.Helper()
	server := etcdtest.Start(t)
	client := server.Client()
	kv := &countingKV{KV: client.KV}
	client.KV = kv
	etcd := NewEtcdClient(t.Context(), client, server.ClientURL)
	t.Cleanup(func() { _ = etcd.Close() }) // before the server stops
	return etcd, kv
}

// dialedEtcd starts an etcd and dials a client of its own to it for
// storages, as custom resources have with --etcd-servers.
func dialedEtcd(t *testing.T) *EtcdClient {
	t.Helper()
	server := etcdtest.Start(t)
	etcd, err := DialEtcdClient(storagebackend.TransportConfig{ServerList: []string{server.ClientURL}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = etcd.Close() }) // before the server stops
	return etcd
}

// etcdClients are the two clients storages share: the embedded etcd's
// in-process one and one dialed to etcd's servers.
var etcdClients = map[string]func(t *testing.T) *EtcdClient{
	"in-process": func(t *testing.T) *EtcdClient {
		etcd, _ := inProcessEtcd(t)
		return etcd
	},
	"dialed": dialedEtcd,
}

// fixedRESTOptions is the delegate of RESTOptionsGetter: upstream's
// options for one storage configuration.
type fixedRESTOptions struct {
	config *storagebackend.ConfigForResource
}

func (f fixedRESTOptions) GetRESTOptions(schema.GroupResource, kruntime.Object) (generic.RESTOptions, error) {
	return generic.RESTOptions{StorageConfig: f.config, Decorator: generic.UndecoratedStorage, ResourcePrefix: "configmaps"}, nil
}

func configMapStorageConfig() *storagebackend.ConfigForResource {
	codec := scheme.Codecs.CodecForVersions(scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion), scheme.Codecs.UniversalDeserializer(), corev1.SchemeGroupVersion, corev1.SchemeGroupVersion)
	backend := storagebackend.NewDefaultConfig("/registry", codec)
	// Upstream would dial this for a storage of its own; nothing listens.
	backend.Transport.ServerList = []string{"http://127.0.0.1:1"}
	backend.CompactionInterval = time.Minute
	return backend.ForResource(corev1.Resource("configmaps"))
}

// configMapStorage is the configmaps' storage of RESTOptionsGetter on etcd,
// watch-cached or not.
func configMapStorage(t *testing.T, etcd *EtcdClient, watchCache bool) (storage.Interface, func()) {
	t.Helper()
	config := configMapStorageConfig()
	config.Transport.ServerList = etcd.transport.ServerList
	getter := RESTOptionsGetter{Delegate: fixedRESTOptions{config}, WatchCache: watchCache, Etcd: etcd}
	opts, err := getter.GetRESTOptions(corev1.Resource("configmaps"), &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	s, destroy, err := opts.Decorator(opts.StorageConfig, "/"+opts.ResourcePrefix, nil, newConfigMap, newConfigMapList, storage.DefaultNamespaceScopedAttr, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, destroy
}

func newConfigMap() kruntime.Object     { return &corev1.ConfigMap{} }
func newConfigMapList() kruntime.Object { return &corev1.ConfigMapList{} }

// waitFor polls cond until it holds; the test fails after a minute.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// watchGoroutines counts the goroutines of etcd watches: the client's
// streams, the in-process adapter, the server's watch streams, and the
// storages' watchers and compactor.
func watchGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, marker := range []string{"etcd/client/v3.(*watchGRPCStream)", "etcd/client/v3.(*watcher)", "grpcproxy/adapter.", "v3rpc.(*serverWatchStream)", "storage/etcd3.", "storage/etcd3.(*compactor)"} {
			if strings.Contains(g, marker) {
				count++
				break
			}
		}
	}
	return count
}

// nextEvent returns the next event of w.
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch ended")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event")
	}
	return watch.Event{}
}

func TestStoragesOfTheGetterUseTheSharedClient(t *testing.T) {
	for _, watchCache := range []bool{false, true} {
		etcd, kv := inProcessEtcd(t)
		s, destroy := configMapStorage(t, etcd, watchCache)
		ctx := ctxFor("abc")
		before := kv.requests.Load()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}}
		if err := s.Create(ctx, "/core/configmaps/default/x", cm, &corev1.ConfigMap{}, 0); err != nil {
			t.Fatalf("watch cache %v: create: %v", watchCache, err)
		}
		got := &corev1.ConfigMap{}
		if err := s.Get(ctx, "/core/configmaps/default/x", storage.GetOptions{}, got); err != nil || got.Name != "x" {
			t.Fatalf("watch cache %v: get: %v %v", watchCache, got.Name, err)
		}
		if kv.requests.Load() < before+2 {
			t.Errorf("watch cache %v: the storage's create and get did not use the shared client", watchCache)
		}
		if etcd.compactor == nil {
			t.Errorf("watch cache %v: no compactor runs while a storage uses the client", watchCache)
		}
		destroy()
		if etcd.compactor != nil {
			t.Errorf("watch cache %v: the compactor runs on after the last storage was destroyed", watchCache)
		}
	}
}

func TestWatchOnTheSharedClientDeliversDeletedObjectsAndProgressAndEnds(t *testing.T) {
	for name, newEtcd := range etcdClients {
		t.Run(name, func(t *testing.T) { testWatchDeliversDeletedObjectsAndProgressAndEnds(t, newEtcd(t)) })
	}
}

func testWatchDeliversDeletedObjectsAndProgressAndEnds(t *testing.T, etcd *EtcdClient) {
	// Consistent reads from watch caches wait for progress notifications,
	// which the cacher asks for only once the check of the client's
	// endpoint found etcd to answer them.
	waitFor(t, "RequestWatchProgress support", func() bool {
		return etcdfeature.DefaultFeatureSupportChecker.Supports(storage.RequestWatchProgress)
	})
	if n := watchGoroutines(); n != 0 {
		t.Fatalf("%d watch goroutines before the watch", n)
	}

	s, destroy, err := etcd.NewRawStorage(configMapStorageConfig(), newConfigMap, newConfigMapList, "/core/configmaps")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	created := &corev1.ConfigMap{}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if err := s.Create(ctx, "/core/configmaps/default/x", cm, created, 0); err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, "/core/configmaps/", storage.ListOptions{
		ResourceVersion: created.ResourceVersion, Recursive: true, ProgressNotify: true,
		Predicate: storage.SelectionPredicate{Label: storage.Everything.Label, Field: storage.Everything.Field, AllowWatchBookmarks: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "/core/configmaps/default/x", &corev1.ConfigMap{}, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, w)
	if deleted, ok := ev.Object.(*corev1.ConfigMap); ev.Type != watch.Deleted || !ok || deleted.Name != "x" || deleted.Data["k"] != "v" {
		t.Fatalf("event %s %#v, want DELETED x with its data (the previous value)", ev.Type, ev.Object)
	}
	if err := s.RequestWatchProgress(ctx); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, w); ev.Type != watch.Bookmark {
		t.Fatalf("event %s after a progress request, want BOOKMARK", ev.Type)
	}

	if watchGoroutines() == 0 {
		t.Fatal("no watch goroutines seen while watching")
	}
	w.Stop()
	destroy()
	waitFor(t, "the goroutines of the watch and the compactor to end", func() bool { return watchGoroutines() == 0 })
}

func TestDestroyingAStorageOnTheSharedClientEndsItsWatches(t *testing.T) {
	for name, newEtcd := range etcdClients {
		t.Run(name, func(t *testing.T) { testDestroyingAStorageEndsItsWatches(t, newEtcd(t)) })
	}
}

func testDestroyingAStorageEndsItsWatches(t *testing.T, etcd *EtcdClient) {
	s, destroy, err := etcd.NewRawStorage(configMapStorageConfig(), newConfigMap, newConfigMapList, "/core/configmaps")
	if err != nil {
		t.Fatal(err)
	}
	// A watch of a request that would otherwise last: the shard's HTTP
	// server waits for it at shutdown, when the storages are destroyed.
	w, err := s.Watch(context.Background(), "/core/configmaps/", storage.ListOptions{Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	destroy()
	for {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				return
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the watch goes on after its storage was destroyed")
		}
	}
}

func TestCloseClosesOnlyADialedClient(t *testing.T) {
	server := etcdtest.Start(t)
	inProcess := server.Client()
	wrapped := NewEtcdClient(t.Context(), inProcess, server.ClientURL)
	// The feature check's status request must not meet the server's
	// shutdown: the embedded etcd panics on a closed database. (Upstream
	// checks an endpoint once per process: a port used again is not.)
	select {
	case <-wrapped.checked:
	case <-time.After(time.Minute):
	}
	if err := wrapped.Close(); err != nil {
		t.Fatal(err)
	}
	if inProcess.Ctx().Err() != nil {
		t.Fatal("Close closed the in-process client its caller owns")
	}

	dialed, err := DialEtcdClient(storagebackend.TransportConfig{ServerList: []string{server.ClientURL}})
	if err != nil {
		t.Fatal(err)
	}
	if err := dialed.Close(); err != nil {
		t.Fatal(err)
	}
	if dialed.client.Ctx().Err() == nil {
		t.Fatal("Close left the dialed client open")
	}
}

// TestServesOnlyTheSameServers: a resource that --etcd-servers-overrides
// sends to other servers, or a dialed client's servers under other TLS
// files, does not use the shared client.
func TestServesOnlyTheSameServers(t *testing.T) {
	inProcess := &EtcdClient{transport: storagebackend.TransportConfig{ServerList: []string{"http://127.0.0.1:2379"}}}
	dialed := &EtcdClient{owned: true, transport: storagebackend.TransportConfig{ServerList: []string{"https://a:2379", "https://b:2379"}, CertFile: "c.crt", KeyFile: "c.key", TrustedCAFile: "ca.crt"}}
	for _, tc := range []struct {
		name   string
		client *EtcdClient
		t      storagebackend.TransportConfig
		want   bool
	}{
		{"in-process, same server", inProcess, storagebackend.TransportConfig{ServerList: []string{"http://127.0.0.1:2379"}, CertFile: "any.crt"}, true},
		{"in-process, other server", inProcess, storagebackend.TransportConfig{ServerList: []string{"http://127.0.0.1:2479"}}, false},
		{"dialed, same servers in another order", dialed, storagebackend.TransportConfig{ServerList: []string{"https://b:2379", "https://a:2379"}, CertFile: "c.crt", KeyFile: "c.key", TrustedCAFile: "ca.crt"}, true},
		{"dialed, one server of two", dialed, storagebackend.TransportConfig{ServerList: []string{"https://a:2379"}, CertFile: "c.crt", KeyFile: "c.key", TrustedCAFile: "ca.crt"}, false},
		{"dialed, other client certificate", dialed, storagebackend.TransportConfig{ServerList: []string{"https://a:2379", "https://b:2379"}, CertFile: "d.crt", KeyFile: "d.key", TrustedCAFile: "ca.crt"}, false},
		{"no client", nil, storagebackend.TransportConfig{ServerList: []string{"http://127.0.0.1:2379"}}, false},
	} {
		if got := tc.client.Serves(tc.t); got != tc.want {
			t.Errorf("%s: Serves = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCompactToTakesTheCompactorsTurnAndFreesOlderRevisions(t *testing.T) {
	etcd, _ := inProcessEtcd(t)
	compactions := 0
	etcd.OnCompacted(func() { compactions++ })
	ctx := t.Context()
	kv := etcd.client.KV
	put, err := kv.Put(ctx, "/registry/x", "1")
	if err != nil {
		t.Fatal(err)
	}
	old := put.Header.Revision
	del, err := kv.Delete(ctx, "/registry/x")
	if err != nil {
		t.Fatal(err)
	}
	rev := del.Header.Revision + 1 // the tombstone goes too
	if _, err := kv.Put(ctx, "/registry/y", "1"); err != nil {
		t.Fatal(err)
	}
	if err := etcd.compactTo(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if compactions != 1 {
		t.Fatalf("told of %d compactions, want 1", compactions)
	}
	if _, err := kv.Get(ctx, "/registry/x", clientv3.WithRev(old)); err == nil || !strings.Contains(err.Error(), "compacted") {
		t.Fatalf("read at revision %d after compacting to %d: %v, want compacted", old, rev, err)
	}
	// The compactors' key names the revision, for upstream's compactor and
	// the watch caches.
	got, err := kv.Get(ctx, compactRevKey)
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != strconv.FormatInt(rev, 10) {
		t.Fatalf("%s after compacting to %d: %v, %v", compactRevKey, rev, got, err)
	}
	version := got.Kvs[0].Version
	// An older revision is no new turn.
	if err := etcd.compactTo(ctx, rev-1); err != nil {
		t.Fatal(err)
	}
	if got, err := kv.Get(ctx, compactRevKey); err != nil || got.Kvs[0].Version != version || compactions != 1 {
		t.Fatalf("compacting to an older revision took a turn: %v, %v (told of %d compactions)", got, err, compactions)
	}
}
