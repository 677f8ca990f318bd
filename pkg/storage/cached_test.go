package storage

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
)

// TestSharedObjectIsTheWatchCachesOwnObject: the object of a watch event
// from a watch cache, read through SharedObject, is the one the cache keeps
// (the same pointer each time), where GetObject copies.
func TestSharedObjectIsTheWatchCachesOwnObject(t *testing.T) {
	etcd, _ := inProcessEtcd(t)
	s, destroy := configMapStorage(t, etcd, true)
	defer destroy()
	ctx := ctxFor("abc")
	var w watch.Interface
	var err error
	waitFor(t, "the watch cache", func() bool {
		w, err = s.Watch(ctx, "/core/configmaps", storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything})
		return err == nil
	})
	defer w.Stop()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if err := s.Create(ctx, "/core/configmaps/default/x", cm, &corev1.ConfigMap{}, 0); err != nil {
		t.Fatal(err)
	}
	var ev watch.Event
	for ev = nextEvent(t, w); ev.Type == watch.Bookmark; ev = nextEvent(t, w) {
	}
	first, shared := SharedObject(ev.Object)
	if !shared {
		t.Fatalf("the watch cache's event object %T was copied: the cacher's wrapper is not as SharedObject expects", ev.Object)
	}
	again, _ := SharedObject(ev.Object)
	got, ok := first.(*corev1.ConfigMap)
	if !ok || got.Name != "x" || got.Data["k"] != "v" {
		t.Fatalf("shared object %#v, want configmap x", first)
	}
	if first != again {
		t.Error("two reads of one event gave two objects")
	}
	if copied, _ := SharedObject(ev.Object.(interface{ GetObject() runtime.Object }).GetObject()); copied == first {
		t.Error("GetObject's copy is the shared object")
	}
	if plain, shared := SharedObject(cm); shared || plain != cm {
		t.Errorf("a plain object: %p shared %v, want itself, not shared", plain, shared)
	}
}
