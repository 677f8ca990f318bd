package cacheserver

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// recordingStorage remembers the keys and options it is called with and
// answers lists and watches with its objects.
type recordingStorage struct {
	storage.Interface
	keys    []string
	opts    []storage.ListOptions
	created runtime.Object
	objects []runtime.Object
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
	r.keys, r.opts = append(r.keys, key), append(r.opts, opts)
	l := listObj.(*unstructured.UnstructuredList)
	for _, o := range r.objects {
		l.Items = append(l.Items, *o.(*unstructured.Unstructured))
	}
	return nil
}

func (r *recordingStorage) Watch(_ context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	r.keys, r.opts = append(r.keys, key), append(r.opts, opts)
	w := watch.NewFake()
	go func() {
		for _, o := range r.objects {
			w.Add(o)
		}
		w.Stop()
	}()
	return w, nil
}

func ctxFor(s cacheclient.Shard, c logicalcluster.Name) context.Context {
	return logicalcluster.WithCluster(WithShard(context.Background(), s), c)
}

// replica is an object as storage returns it: with its origin annotations.
func replica(shard, cluster, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetName(name)
	u.SetNamespace(namespace)
	u.SetAnnotations(map[string]string{cacheclient.ShardAnnotationKey: shard, logicalcluster.AnnotationKey: cluster})
	return u
}

func TestKeysPutShardThenClusterAfterTheResourcePrefix(t *testing.T) {
	const prefix = "/rbac.authorization.k8s.io/roles"
	for _, tc := range []struct {
		name      string
		shard     cacheclient.Shard
		cluster   logicalcluster.Name
		key       string
		recursive bool
		want      string
		wantRec   bool
	}{
		{name: "one object", shard: "s1", cluster: "c1", key: prefix + "/ns/r", want: prefix + "/s1/c1/ns/r"},
		{name: "a namespace", shard: "s1", cluster: "c1", key: prefix + "/ns", recursive: true, want: prefix + "/s1/c1/ns", wantRec: true},
		{name: "a cluster", shard: "s1", cluster: "c1", key: prefix, recursive: true, want: prefix + "/s1/c1", wantRec: true},
		{name: "every cluster of a shard", shard: "s1", cluster: "*", key: prefix, recursive: true, want: prefix + "/s1", wantRec: true},
		{name: "every shard", shard: "*", cluster: "*", key: prefix, recursive: true, want: prefix, wantRec: true},
		{name: "one cluster of every shard", shard: "*", cluster: "c1", key: prefix, recursive: true, want: prefix, wantRec: true},
		{name: "one object by name across a shard", shard: "s1", cluster: "*", key: prefix + "/ns/r", want: prefix + "/s1", wantRec: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingStorage{}
			s := newReplicaStorage(rec, prefix)
			ctx := ctxFor(tc.shard, tc.cluster)
			var err error
			if tc.recursive || tc.shard.IsWildcard() || tc.cluster.IsWildcard() {
				err = s.GetList(ctx, tc.key, storage.ListOptions{Recursive: tc.recursive}, &unstructured.UnstructuredList{})
			} else {
				err = s.Get(ctx, tc.key, storage.GetOptions{}, &unstructured.Unstructured{})
			}
			if err != nil {
				t.Fatal(err)
			}
			if rec.keys[0] != tc.want {
				t.Errorf("key %q, want %q", rec.keys[0], tc.want)
			}
			if len(rec.opts) > 0 && rec.opts[0].Recursive != tc.wantRec {
				t.Errorf("recursive %t, want %t", rec.opts[0].Recursive, tc.wantRec)
			}
		})
	}
}

func TestSingleObjectVerbsRefuseWildcards(t *testing.T) {
	s := newReplicaStorage(&recordingStorage{}, "/apis.kcp.io/apiexports")
	for _, ctx := range []context.Context{ctxFor("*", "c1"), ctxFor("s1", "*"), ctxFor("*", "*")} {
		if err := s.Get(ctx, "/apis.kcp.io/apiexports/x", storage.GetOptions{}, &unstructured.Unstructured{}); err == nil {
			t.Error("get across a wildcard succeeded")
		}
		if err := s.Create(ctx, "/apis.kcp.io/apiexports/x", replica("", "", "", "x"), &unstructured.Unstructured{}, 0); err == nil {
			t.Error("create across a wildcard succeeded")
		}
	}
	if err := s.Get(context.Background(), "/apis.kcp.io/apiexports/x", storage.GetOptions{}, &unstructured.Unstructured{}); err == nil {
		t.Error("get without shard and cluster succeeded")
	}
}

func TestCreateRecordsTheOriginOverWhatTheWriterSent(t *testing.T) {
	rec := &recordingStorage{}
	s := newReplicaStorage(rec, "/apis.kcp.io/apiexports")
	obj := replica("other-shard", "other-cluster", "", "x")
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "shardplane", Operation: metav1.ManagedFieldsOperationUpdate}})
	if err := s.Create(ctxFor("s1", "c1"), "/apis.kcp.io/apiexports/x", obj, &unstructured.Unstructured{}, 0); err != nil {
		t.Fatal(err)
	}
	created := rec.created.(*unstructured.Unstructured)
	a := created.GetAnnotations()
	if a[cacheclient.ShardAnnotationKey] != "s1" || a[logicalcluster.AnnotationKey] != "c1" {
		t.Errorf("annotations %v, want shard s1 and cluster c1", a)
	}
	if mf := created.GetManagedFields(); mf != nil {
		t.Errorf("a replica is stored with managed fields %v", mf)
	}
	if rec.keys[0] != "/apis.kcp.io/apiexports/s1/c1/x" {
		t.Errorf("key %q", rec.keys[0])
	}
	if key, err := replicaKey("/apis.kcp.io/apiexports", rec.created); err != nil || key != rec.keys[0] {
		t.Errorf("watch cache key %q (%v), want the storage key %q", key, err, rec.keys[0])
	}
}

func TestWildcardShardListsSelectTheClusterAndNamespace(t *testing.T) {
	objects := []runtime.Object{
		replica("s1", "c1", "a", "x"), replica("s2", "c1", "b", "x"), replica("s2", "c2", "a", "x"), replica("s3", "c1", "a", "y"),
	}
	s := newReplicaStorage(&recordingStorage{objects: objects}, "/rbac.authorization.k8s.io/roles")
	list := &unstructured.UnstructuredList{}
	if err := s.GetList(ctxFor("*", "c1"), "/rbac.authorization.k8s.io/roles/a", storage.ListOptions{Recursive: true}, list); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, item := range list.Items {
		got = append(got, item.GetAnnotations()[cacheclient.ShardAnnotationKey]+"/"+item.GetName())
	}
	if len(got) != 2 || got[0] != "s1/x" || got[1] != "s3/y" {
		t.Errorf("listed %v, want s1/x and s3/y (cluster c1, namespace a)", got)
	}

	w, err := s.Watch(ctxFor("*", "c2"), "/rbac.authorization.k8s.io/roles", storage.ListOptions{Recursive: true})
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for e := range w.ResultChan() {
		u := e.Object.(*unstructured.Unstructured)
		got = append(got, u.GetAnnotations()[cacheclient.ShardAnnotationKey]+"/"+u.GetName())
	}
	if len(got) != 1 || got[0] != "s2/x" {
		t.Errorf("watched %v, want s2/x (cluster c2)", got)
	}
}

func TestReplicaKeyNeedsTheOrigin(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetName("x")
	if _, err := replicaKey("/apis.kcp.io/apiexports", u); err == nil {
		t.Error("a replica without origin annotations got a key")
	}
	if key, err := replicaKey("/rbac.authorization.k8s.io/roles/", replica("s1", "c1", "ns", "r")); err != nil || key != "/rbac.authorization.k8s.io/roles/s1/c1/ns/r" {
		t.Errorf("key %q (%v)", key, err)
	}
}
