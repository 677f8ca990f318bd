package wildcardinformer

import (
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	kstorage "github.com/shardplane/shardplane/pkg/storage"
)

func cm(cluster, ns, name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Annotations: map[string]string{logicalcluster.AnnotationKey: cluster}}}
}

func TestKeysDoNotCollideAcrossClusters(t *testing.T) {
	a, b := cm("a", "default", "x"), cm("b", "default", "x")
	ka, _ := KeyFunc(a)
	kb, _ := KeyFunc(b)
	if ka == kb {
		t.Fatalf("same key %q for objects of two clusters", ka)
	}
	c, ns, n, ok := SplitKey(ka)
	if !ok || c != "a" || ns != "default" || n != "x" {
		t.Fatalf("SplitKey(%q) = %q %q %q %v", ka, c, ns, n, ok)
	}
	if _, err := KeyFunc(&corev1.ConfigMap{}); err == nil {
		t.Fatal("an object without cluster annotation must not get a key")
	}
}

type recorder struct{ adds, updates, deletes int }

func (r *recorder) OnAdd(interface{})                 { r.adds++ }
func (r *recorder) OnUpdate(interface{}, interface{}) { r.updates++ }
func (r *recorder) OnDelete(interface{})              { r.deletes++ }

func TestStoreIndexesByClusterAndNotifies(t *testing.T) {
	i := New(&cache.ListWatch{}, &corev1.ConfigMap{}, "test")
	r := &recorder{}
	i.AddHandler(r)
	s := (*notifyingStore)(i)
	if err := s.Replace([]interface{}{cm("a", "default", "x"), cm("b", "default", "x"), cm("a", "kube-system", "y")}, "1"); err != nil {
		t.Fatal(err)
	}
	if !i.HasSynced() {
		t.Fatal("not synced after Replace")
	}
	if got, _ := i.List("a", ""); len(got) != 2 {
		t.Fatalf("cluster a has %d objects, want 2", len(got))
	}
	if got, _ := i.List("a", "default"); len(got) != 1 {
		t.Fatalf("cluster a namespace default has %d objects, want 1", len(got))
	}
	if _, exists, _ := i.Get("b", "default", "x"); !exists {
		t.Fatal("b|default/x missing")
	}
	_ = s.Update(cm("b", "default", "x"))
	_ = s.Delete(cm("a", "kube-system", "y"))
	_ = s.Replace([]interface{}{cm("b", "default", "x")}, "2")
	if r.adds != 3 || r.updates != 2 || r.deletes != 2 {
		t.Fatalf("adds=%d updates=%d deletes=%d, want 3/2/2", r.adds, r.updates, r.deletes)
	}
}

func TestStoredObjectsKeepNoManagedFields(t *testing.T) {
	withFields := func(cluster, name string) *corev1.ConfigMap {
		o := cm(cluster, "default", name)
		o.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
		o.Data = map[string]string{"k": "v"}
		return o
	}
	i := New(&cache.ListWatch{}, &corev1.ConfigMap{}, "test")
	s := (*notifyingStore)(i)
	if err := s.Replace([]interface{}{withFields("a", "listed")}, "1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(withFields("a", "added")); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(withFields("b", "updated")); err != nil {
		t.Fatal(err)
	}
	for _, key := range []struct{ cluster, name string }{{"a", "listed"}, {"a", "added"}, {"b", "updated"}} {
		obj, exists, _ := i.Get(logicalcluster.Name(key.cluster), "default", key.name)
		if !exists {
			t.Fatalf("%s|default/%s missing", key.cluster, key.name)
		}
		got := obj.(*corev1.ConfigMap)
		if got.ManagedFields != nil {
			t.Errorf("%s|default/%s keeps managedFields %v", key.cluster, key.name, got.ManagedFields)
		}
		if got.Data["k"] != "v" {
			t.Errorf("%s|default/%s lost its data: %v", key.cluster, key.name, got.Data)
		}
	}
}

func TestStoredConfigMapsShareRegisteredValues(t *testing.T) {
	bundle := strings.Repeat("CA", 1000) + "informer-test"
	kstorage.ShareValue(bundle)
	i := New(&cache.ListWatch{}, &corev1.ConfigMap{}, "test")
	s := (*notifyingStore)(i)
	withBundle := func(cluster string) *corev1.ConfigMap {
		m := cm(cluster, "default", "kube-root-ca.crt")
		m.Data = map[string]string{"ca.crt": strings.Clone(bundle)}
		return m
	}
	if err := s.Replace([]interface{}{withBundle("a")}, "1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Add(withBundle("b")); err != nil {
		t.Fatal(err)
	}
	a, _, _ := i.Get("a", "default", "kube-root-ca.crt")
	b, _, _ := i.Get("b", "default", "kube-root-ca.crt")
	va, vb := a.(*corev1.ConfigMap).Data["ca.crt"], b.(*corev1.ConfigMap).Data["ca.crt"]
	if va != bundle || unsafe.StringData(va) != unsafe.StringData(vb) {
		t.Fatal("the stored config maps keep a copy of the bundle each")
	}
}

func TestClusterScopedObjectsAreListedByClusterOnly(t *testing.T) {
	i := New(&cache.ListWatch{}, &corev1.Namespace{}, "test")
	ns := func(cluster, name string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{logicalcluster.AnnotationKey: cluster}}}
	}
	s := (*notifyingStore)(i)
	if err := s.Replace([]interface{}{ns("a", "default"), ns("a", "kube-system"), ns("b", "default")}, "1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := i.List("a", ""); len(got) != 2 {
		t.Fatalf("cluster a has %d namespaces, want 2", len(got))
	}
	if got, _ := i.List("a", "default"); len(got) != 0 {
		t.Fatalf("cluster a lists %d cluster-scoped objects in namespace default, want none", len(got))
	}
	// The namespace index holds no set for them.
	if values := i.Indexer().ListIndexFuncValues(ByClusterNamespace); len(values) != 0 {
		t.Fatalf("namespace index values %v, want none", values)
	}
}
