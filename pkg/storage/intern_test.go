package storage

import (
	"context"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/kubernetes/pkg/apis/core"
	clocktesting "k8s.io/utils/clock/testing"
)

// sameMemory tells whether a and b are one string in memory, not just equal.
func sameMemory(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestConfigMapValuesEqualToASharedValueShareItsMemory(t *testing.T) {
	shared := strings.Repeat("-----CA-----", 100) + "shared-values-test"
	ShareValue(shared)
	copyOf := func() string { return strings.Clone(shared) }

	internal := &core.ConfigMap{Data: map[string]string{"ca.crt": copyOf(), "other": "x"}}
	v1 := &corev1.ConfigMap{Data: map[string]string{"ca.crt": copyOf()}}
	unrelated := &corev1.ConfigMap{Data: map[string]string{"ca.crt": shared[1:] + "!"}}
	for _, obj := range []interface{}{internal, v1, unrelated, &corev1.Secret{}, nil} {
		ShareValues(obj)
	}
	if !sameMemory(internal.Data["ca.crt"], v1.Data["ca.crt"]) {
		t.Fatal("a value equal to the shared one keeps its own copy")
	}
	if internal.Data["other"] != "x" || internal.Data["ca.crt"] != shared {
		t.Fatalf("data changed: %v", internal.Data)
	}
	if unrelated.Data["ca.crt"] != shared[1:]+"!" {
		t.Fatal("a different value was replaced")
	}
}

func TestWatchCacheListsAndEventsShareValues(t *testing.T) {
	shared := strings.Repeat("bundle", 200) + "history-test"
	ShareValue(shared)
	item := core.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kube-root-ca.crt"}, Data: map[string]string{"ca.crt": strings.Clone(shared)}}
	own := item.Data["ca.crt"]
	inner := &listWatchStorage{items: []runtime.Object{item.DeepCopy()}, watch: watch.NewFake()}
	h := newHistoryBound(inner, clocktesting.NewFakeClock(metav1.Now().Time), HistoryIdleAfter)
	list := &core.ConfigMapList{}
	if err := h.GetList(context.Background(), "/core/configmaps", storage.ListOptions{}, list); err != nil {
		t.Fatal(err)
	}
	listed := list.Items[0].Data["ca.crt"]
	if sameMemory(listed, own) {
		t.Fatal("listed object keeps its own copy")
	}
	w, err := h.Watch(context.Background(), "/core/configmaps", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// As etcd's watch sends it: wrapped with the time it was read.
	go inner.watch.Add(&wrapped{Object: item.DeepCopy()})
	e := <-w.ResultChan()
	if got := e.Object.(*wrapped).Object.(*core.ConfigMap).Data["ca.crt"]; got != shared || !sameMemory(got, listed) {
		t.Fatal("watched object keeps its own copy")
	}
}

type wrapped struct{ runtime.Object }

func (w *wrapped) Unwrap() runtime.Object { return w.Object }

func TestEqualFieldSetsOfCachedObjectsAreOneMap(t *testing.T) {
	attrs := sharedAttrs(func(obj runtime.Object) (labels.Set, fields.Set, error) {
		m := obj.(*corev1.ConfigMap)
		return labels.Set(m.Labels), fields.Set{"metadata.name": m.Name, "metadata.namespace": m.Namespace}, nil
	})
	fieldsOf := func(ns, name string) fields.Set {
		_, f, err := attrs(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b := fieldsOf("default", "kube-root-ca.crt"), fieldsOf("default", "kube-root-ca.crt")
	if !sameMap(a, b) {
		t.Fatal("equal field sets are two maps")
	}
	c := fieldsOf("kube-system", "kube-root-ca.crt")
	if sameMap(a, c) || c["metadata.namespace"] != "kube-system" || c["metadata.name"] != "kube-root-ca.crt" {
		t.Fatalf("different field sets shared: %v %v", a, c)
	}
	// Keys and values are separated: ("ab", "c") is not ("a", "bc").
	if k1, _ := mapKey(fields.Set{"ab": "c"}, -1); k1 == mustKey(fields.Set{"a": "bc"}) {
		t.Fatal("field set keys collide")
	}
}

func TestFieldSetInternerKeepsAtMostItsLimit(t *testing.T) {
	in := newMapInterner[fields.Set](fieldSetMaxEntries, -1, 2, false)
	for _, name := range []string{"a", "b", "c", "d"} {
		in.intern(fields.Set{"metadata.name": name})
	}
	if len(in.values) != 2 {
		t.Fatalf("%d sets kept, want 2", len(in.values))
	}
	f := fields.Set{"metadata.name": "c"}
	if got := in.intern(f); !sameMap(got, f) {
		t.Fatal("a set beyond the limit is not returned as it is")
	}
	if big := (fields.Set{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}); !sameMap(in.intern(big), big) {
		t.Fatal("a large set was replaced")
	}
}

func sameMap(a, b fields.Set) bool {
	return *(*unsafe.Pointer)(unsafe.Pointer(&a)) == *(*unsafe.Pointer)(unsafe.Pointer(&b))
}

func mustKey(m map[string]string) string {
	k, _ := mapKey(m, -1)
	return k
}

func TestEqualLabelsAndAnnotationsOfKeptObjectsShareOneMap(t *testing.T) {
	in := newMapInterner[map[string]string](sharedMapMaxEntries, sharedMapMaxBytes, 2, true)
	a := in.intern(map[string]string{"kcp.io/cluster": "c1"})
	b := in.intern(map[string]string{"kcp.io/cluster": "c1"})
	if !sameMap(a, b) {
		t.Fatal("equal maps are not shared")
	}
	if c := in.intern(map[string]string{"kcp.io/cluster": "c2"}); sameMap(a, c) || c["kcp.io/cluster"] != "c2" {
		t.Fatalf("a different map was replaced: %v", c)
	}
	large := map[string]string{"last-applied": strings.Repeat("x", sharedMapMaxBytes)}
	if got := in.intern(large); !sameMap(got, large) || len(in.values) != 2 {
		t.Fatalf("a large map was kept: %d maps", len(in.values))
	}
	// Past the limit it starts over; the maps handed out stay as they are.
	in.intern(map[string]string{"kcp.io/cluster": "c3"})
	if len(in.values) != 1 || a["kcp.io/cluster"] != "c1" {
		t.Fatalf("after the limit: %d maps kept, first map %v", len(in.values), a)
	}
	in.forget()
	if d := in.intern(map[string]string{"kcp.io/cluster": "c1"}); sameMap(a, d) {
		t.Fatal("a forgotten map was shared again")
	}
}

func TestShareValuesSharesObjectMetadataMaps(t *testing.T) {
	ns := func() *core.Namespace {
		return &core.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default",
			Labels:      map[string]string{"kubernetes.io/metadata.name": "default"},
			Annotations: map[string]string{"kcp.io/cluster": "share-values-test"}}}
	}
	a, b := ns(), &corev1.Namespace{}
	b.ObjectMeta = *ns().ObjectMeta.DeepCopy()
	ShareValues(a)
	ShareValues(b)
	if !sameMap(a.Labels, b.Labels) || !sameMap(a.Annotations, b.Annotations) {
		t.Fatal("equal labels or annotations of two kept objects are two maps")
	}
}

func TestForgetSharedMapsForgetsFieldSetsToo(t *testing.T) {
	attrs := sharedAttrs(func(obj runtime.Object) (labels.Set, fields.Set, error) {
		m := obj.(*corev1.ConfigMap)
		return labels.Set(m.Labels), fields.Set{"metadata.name": m.Name, "metadata.namespace": m.Namespace}, nil
	})
	fieldsOf := func() fields.Set {
		_, f, err := attrs(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "forget-me"}})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a := fieldsOf()
	if !sameMap(a, fieldsOf()) {
		t.Fatal("equal field sets are two maps")
	}
	forgetSharedMaps()
	if sameMap(a, fieldsOf()) {
		t.Fatal("a field set is shared again after the interners forgot their maps")
	}
}
