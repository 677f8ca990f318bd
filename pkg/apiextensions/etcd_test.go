package apiextensions

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	kstorage "github.com/shardplane/shardplane/pkg/storage"
	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd/etcdtest"
)

func startEtcd(t *testing.T) string { return etcdtest.Start(t).ClientURL }

func widget(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "x.io/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": name, "namespace": "default"},
	}}
}

// nameOf returns the name of a watched object (the cache wraps them).
func nameOf(t *testing.T, obj runtime.Object) string {
	t.Helper()
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	return m.GetName()
}

// nextEvent returns the next event of w that is not a bookmark.
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch ended")
			}
			if ev.Type != watch.Bookmark {
				return ev
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no watch event")
		}
	}
}

// ends tells whether w ends, after the events it still has.
func ends(w watch.Interface) bool {
	for {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				return true
			}
		case <-time.After(30 * time.Second):
			return false
		}
	}
}

// etcdBackends are the two clients custom resources reach etcd with: one
// dialed to the configured servers, and the embedded etcd's in-process
// client that all the shard's storages share.
var etcdBackends = map[string]func(t *testing.T) *kstorage.EtcdClient{
	"dialed client": func(t *testing.T) *kstorage.EtcdClient {
		etcd, err := kstorage.DialEtcdClient(storagebackend.TransportConfig{ServerList: []string{startEtcd(t)}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = etcd.Close() }) // before the server stops
		return etcd
	},
	"in-process client": func(t *testing.T) *kstorage.EtcdClient {
		server := etcdtest.Start(t)
		return kstorage.NewEtcdClient(t.Context(), server.Client(), server.ClientURL)
	},
}

func TestStorageOfACRDInAClusterCachesOnlyOnceWatchedAndWatchesFromVersionsReadBefore(t *testing.T) {
	for name, backend := range etcdBackends {
		t.Run(name, func(t *testing.T) { testStorageOfACRDInACluster(t, backend) })
	}
}

func testStorageOfACRDInACluster(t *testing.T, newEtcd func(t *testing.T) *kstorage.EtcdClient) {
	backend := storagebackend.NewDefaultConfig("/registry", unstructured.UnstructuredJSONScheme)
	// The storage uses the shared client; nothing listens here.
	backend.Transport.ServerList = []string{"http://127.0.0.1:1"}
	etcd := newEtcd(t)
	config := backend.ForResource(schema.GroupResource{Group: "x.io", Resource: "widgets"})
	const prefix = "/x.io/widgets/customresources/cluster-a"
	keyFunc := func(obj runtime.Object) (string, error) {
		return prefix + "/default/" + obj.(*unstructured.Unstructured).GetName(), nil
	}
	s, destroy, err := cachedStorage(etcd, true, config, prefix, keyFunc,
		func() runtime.Object { return &unstructured.Unstructured{} },
		func() runtime.Object { return &unstructured.UnstructuredList{} },
		storage.DefaultNamespaceScopedAttr, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cached := s.(*watchCached)
	ctx := t.Context()

	create := func(name string) *unstructured.Unstructured {
		t.Helper()
		out := &unstructured.Unstructured{}
		if err := s.Create(ctx, prefix+"/default/"+name, widget(name), out, 0); err != nil {
			t.Fatal(err)
		}
		return out
	}
	create("a")
	list := &unstructured.UnstructuredList{}
	if err := s.GetList(ctx, prefix, storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("LIST returned %d widgets, want 1", len(list.Items))
	}
	if cached.delegator != nil {
		t.Fatal("a LIST started the watch cache")
	}

	// A widget created after the LIST and before the first watch: the
	// cache starts later than the LIST's version, and the watch from it
	// still sees the widget.
	create("b")
	w, err := s.Watch(ctx, prefix, storage.ListOptions{ResourceVersion: list.GetResourceVersion(), Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if ev := nextEvent(t, w); ev.Type != watch.Added || nameOf(t, ev.Object) != "b" {
		t.Fatalf("watch from the LIST's version: %s %v, want ADDED b", ev.Type, ev.Object)
	}
	if cached.delegator == nil {
		t.Fatal("the first watch did not start the watch cache")
	}

	// A watch without a version, served by the cache, starts with the
	// current state.
	now, err := s.Watch(ctx, prefix, storage.ListOptions{Recursive: true, Predicate: storage.Everything})
	if err != nil {
		t.Fatal(err)
	}
	defer now.Stop()
	create("c")
	for _, want := range []string{"a", "b", "c"} {
		if ev := nextEvent(t, now); ev.Type != watch.Added || nameOf(t, ev.Object) != want {
			t.Fatalf("watch from now: %s %v, want ADDED %s", ev.Type, ev.Object, want)
		}
	}
	if ev := nextEvent(t, w); ev.Type != watch.Added || nameOf(t, ev.Object) != "c" {
		t.Fatalf("watch from the LIST's version: %s %v, want ADDED c", ev.Type, ev.Object)
	}
	// A deletion carries the deleted object (etcd's previous value) to
	// both the etcd watch and the cache's.
	if err := s.Delete(ctx, prefix+"/default/a", &unstructured.Unstructured{}, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]watch.Interface{"from the LIST's version": w, "from now": now} {
		if ev := nextEvent(t, w); ev.Type != watch.Deleted || nameOf(t, ev.Object) != "a" {
			t.Fatalf("watch %s: %s %v, want DELETED a", name, ev.Type, ev.Object)
		}
	}

	// Destroying the storage (the CRD's serving state is released) ends
	// its watches, those of etcd and of the cache.
	destroy()
	for name, w := range map[string]watch.Interface{"from the LIST's version": w, "from now": now} {
		if !ends(w) {
			t.Errorf("watch %s goes on after its storage was destroyed", name)
		}
	}
	if _, err := s.Watch(ctx, prefix, storage.ListOptions{Recursive: true, Predicate: storage.Everything}); err == nil {
		t.Error("a stopped storage served a watch")
	}
}
