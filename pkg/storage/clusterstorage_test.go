package storage

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// recordingStorage remembers the keys it is called with.
type recordingStorage struct {
	storage.Interface
	keys    []string
	created runtime.Object
	opts    storage.ListOptions
	list    []runtime.Object
}

func (r *recordingStorage) Create(_ context.Context, key string, obj, _ runtime.Object, _ uint64) error {
	r.keys, r.created = append(r.keys, key), obj
	return nil
}

func (r *recordingStorage) Get(_ context.Context, key string, _ storage.GetOptions, _ runtime.Object) error {
	r.keys = append(r.keys, key)
	return nil
}

func (r *recordingStorage) GetList(_ context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	r.keys, r.opts = append(r.keys, key), opts
	l := listObj.(*corev1.ConfigMapList)
	for _, o := range r.list {
		l.Items = append(l.Items, *o.(*corev1.ConfigMap))
	}
	return nil
}

func ctxFor(c logicalcluster.Name) context.Context {
	return logicalcluster.WithCluster(context.Background(), c)
}

func TestKeysGetTheClusterAfterThePrefix(t *testing.T) {
	rec := &recordingStorage{}
	s := NewClusterStorage(rec, "/core/configmaps")
	_ = s.Get(ctxFor("abc"), "/core/configmaps/default/x", storage.GetOptions{}, &corev1.ConfigMap{})
	_ = s.GetList(ctxFor("abc"), "/core/configmaps/default", storage.ListOptions{Recursive: true}, &corev1.ConfigMapList{})
	_ = s.GetList(ctxFor("abc"), "/core/configmaps", storage.ListOptions{Recursive: true}, &corev1.ConfigMapList{})
	want := []string{"/core/configmaps/abc/default/x", "/core/configmaps/abc/default", "/core/configmaps/abc"}
	for i, k := range want {
		if rec.keys[i] != k {
			t.Errorf("key %d = %q, want %q", i, rec.keys[i], k)
		}
	}
}

func TestCreateOverwritesClusterAnnotation(t *testing.T) {
	rec := &recordingStorage{}
	s := NewClusterStorage(rec, "/core/configmaps")
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Annotations: map[string]string{logicalcluster.AnnotationKey: "other"}}}
	if err := s.Create(ctxFor("abc"), "/core/configmaps/default/x", obj, &corev1.ConfigMap{}, 0); err != nil {
		t.Fatal(err)
	}
	if got := rec.created.(*corev1.ConfigMap).Annotations[logicalcluster.AnnotationKey]; got != "abc" {
		t.Fatalf("annotation = %q, want abc", got)
	}
}

func TestWildcardListsThePrefixAndFiltersNamespaces(t *testing.T) {
	cm := func(ns string) runtime.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x"}}
	}
	rec := &recordingStorage{list: []runtime.Object{cm("a"), cm("b"), cm("a")}}
	s := NewClusterStorage(rec, "/core/configmaps")
	list := &corev1.ConfigMapList{}
	if err := s.GetList(ctxFor(logicalcluster.Wildcard), "/core/configmaps/a", storage.ListOptions{Recursive: true}, list); err != nil {
		t.Fatal(err)
	}
	if rec.keys[0] != "/core/configmaps" || len(list.Items) != 2 {
		t.Fatalf("key %q, %d items; want the bare prefix and 2 items of namespace a", rec.keys[0], len(list.Items))
	}
	// A single-object request across clusters becomes a recursive one.
	_ = s.GetList(ctxFor(logicalcluster.Wildcard), "/core/configmaps/a/x", storage.ListOptions{}, &corev1.ConfigMapList{})
	if !rec.opts.Recursive {
		t.Fatal("wildcard single-object list must become recursive")
	}
}

func TestRefusals(t *testing.T) {
	s := NewClusterStorage(&recordingStorage{}, "/core/configmaps")
	if err := s.Get(context.Background(), "/core/configmaps/default/x", storage.GetOptions{}, &corev1.ConfigMap{}); err == nil {
		t.Error("a request without cluster must fail")
	}
	if err := s.Get(ctxFor(logicalcluster.Wildcard), "/core/configmaps/default/x", storage.GetOptions{}, &corev1.ConfigMap{}); err == nil {
		t.Error("get across all clusters must fail")
	}
	if err := s.Get(ctxFor("abc"), "/core/configmapsX/default/x", storage.GetOptions{}, &corev1.ConfigMap{}); err == nil {
		t.Error("a key outside the prefix must fail")
	}
}

func TestObjectKeyUsesAnnotation(t *testing.T) {
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x", Annotations: map[string]string{logicalcluster.AnnotationKey: "abc"}}}
	k, err := ObjectKey("/core/configmaps", obj)
	if err != nil || k != "/core/configmaps/abc/ns/x" {
		t.Fatalf("got %q %v", k, err)
	}
	if _, err := ObjectKey("/core/configmaps", &corev1.ConfigMap{}); err == nil {
		t.Fatal("an object without cluster has no key")
	}
}

func TestResourcePrefix(t *testing.T) {
	for gr, want := range map[[2]string]string{
		{"", "configmaps"}:                     "core/configmaps",
		{"events.k8s.io", "events"}:            "core/events",
		{"rbac.authorization.k8s.io", "roles"}: "rbac.authorization.k8s.io/roles",
		{"tenancy.kcp.io", "workspaces"}:       "tenancy.kcp.io/workspaces",
	} {
		if got := ResourcePrefix(schemaGR(gr)); got != want {
			t.Errorf("ResourcePrefix(%v) = %q, want %q", gr, got, want)
		}
	}
}

func schemaGR(gr [2]string) schema.GroupResource {
	return schema.GroupResource{Group: gr[0], Resource: gr[1]}
}

func TestATenantsListRecordsHowManyObjectsItRead(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"}}
	rec := &recordingStorage{list: []runtime.Object{cm, cm, cm}}
	s := NewClusterStorage(rec, "/core/configmaps")
	configMaps := schema.GroupResource{Resource: "configmaps"}
	list := func(cluster logicalcluster.Name, verb string) {
		ctx := request.WithRequestInfo(ctxFor(cluster), &request.RequestInfo{IsResourceRequest: true, Verb: verb, APIVersion: "v1", Resource: "configmaps"})
		if err := s.GetList(ctx, "/core/configmaps/default", storage.ListOptions{Recursive: true}, &corev1.ConfigMapList{}); err != nil {
			t.Fatal(err)
		}
	}
	list("listsizes-a", "list")
	if n, ok := Lists.Get("listsizes-a", configMaps); !ok || n != 3 {
		t.Errorf("recorded %d (%v), want 3", n, ok)
	}
	list("listsizes-b", "deletecollection")
	list(logicalcluster.Wildcard, "list")
	if n, ok := Lists.Get("listsizes-b", configMaps); ok {
		t.Errorf("a deletecollection recorded %d", n)
	}
	if n, ok := Lists.Get(logicalcluster.Wildcard, configMaps); ok {
		t.Errorf("a wildcard LIST recorded %d", n)
	}
}

func TestListSizesStartOverWhenFull(t *testing.T) {
	l := &ListSizes{}
	for i := range maxListSizes + 1 {
		l.Observe(logicalcluster.Name(fmt.Sprint(i)), schema.GroupResource{Resource: "configmaps"}, 1)
	}
	if len(l.sizes) != 1 {
		t.Errorf("%d entries after overflow, want 1", len(l.sizes))
	}
}
