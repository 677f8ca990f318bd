package wildcardinformer

import (
	"context"
	"errors"
	"io"
	"reflect"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
)

var configMaps = corev1.SchemeGroupVersion.WithResource("configmaps")

type verbKey struct{}

// fakeStorage stands for a REST storage above a watch cache: its list
// items are struct copies of the cached objects, as the cacher's are.
type fakeStorage struct {
	mu        sync.Mutex
	cached    []*corev1.ConfigMap
	listRV    string
	listErr   error
	lists     []*metainternalversion.ListOptions
	watches   []*metainternalversion.ListOptions
	verbs     []string
	watchers  []*watch.FakeWatcher
	watchErr  error
	onWatch   func(w *watch.FakeWatcher, opts *metainternalversion.ListOptions)
	watchCtxs []context.Context
}

func (s *fakeStorage) NewList() runtime.Object { return &corev1.ConfigMapList{} }

func (s *fakeStorage) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, errors.New("not implemented")
}

func (s *fakeStorage) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists = append(s.lists, opts)
	s.verbs = append(s.verbs, ctx.Value(verbKey{}).(string))
	if s.listErr != nil {
		return nil, s.listErr
	}
	list := &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: s.listRV}}
	for _, o := range s.cached {
		list.Items = append(list.Items, *o)
	}
	return list, nil
}

func (s *fakeStorage) Watch(ctx context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.watches = append(s.watches, opts)
	s.verbs = append(s.verbs, ctx.Value(verbKey{}).(string))
	s.watchCtxs = append(s.watchCtxs, ctx)
	if s.watchErr != nil {
		return nil, s.watchErr
	}
	w := watch.NewFakeWithChanSize(10, false)
	s.watchers = append(s.watchers, w)
	if s.onWatch != nil {
		s.onWatch(w, opts)
	}
	return w, nil
}

func (s *fakeStorage) counts() (lists, watches int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lists), len(s.watches)
}

func inProcessOver(s *fakeStorage) *inProcess {
	return InProcess(configMaps, func() Storage { return s }, func(ctx context.Context, verb string) context.Context {
		return context.WithValue(ctx, verbKey{}, verb)
	}).(*inProcess)
}

// cacheable wraps an object as the cacher wraps the objects of its events.
type cacheable struct{ runtime.Object }

func (c cacheable) CacheEncode(_ runtime.Identifier, encode func(runtime.Object, io.Writer) error, w io.Writer) error {
	return encode(c.Object, w)
}

func (c cacheable) GetObject() runtime.Object { return c.Object.DeepCopyObject() }

func withManagedFields(cluster, name string) *corev1.ConfigMap {
	o := cm(cluster, "default", name)
	o.ResourceVersion = "5"
	o.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	o.Data = map[string]string{"k": "v"}
	return o
}

func TestInProcessListPassesTheReflectorsOptionsAsTheCaller(t *testing.T) {
	s := &fakeStorage{cached: []*corev1.ConfigMap{cm("a", "default", "x")}, listRV: "7"}
	lw := inProcessOver(s)
	obj, err := lw.ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "0", Limit: 500, LabelSelector: "app=x"})
	if err != nil {
		t.Fatal(err)
	}
	list := obj.(*corev1.ConfigMapList)
	if len(list.Items) != 1 || list.ResourceVersion != "7" {
		t.Fatalf("list = %d items at %q, want 1 at 7", len(list.Items), list.ResourceVersion)
	}
	opts := s.lists[0]
	if opts.ResourceVersion != "0" || opts.Limit != 500 || opts.LabelSelector.String() != "app=x" || opts.Watch {
		t.Fatalf("storage got %+v", opts)
	}
	if s.verbs[0] != "list" {
		t.Fatalf("caller context of verb %q, want list", s.verbs[0])
	}
}

func TestInProcessReportsErrorsAsTheAPIServerWould(t *testing.T) {
	s := &fakeStorage{}
	lw := InProcess(configMaps, func() Storage { return nil }, func(ctx context.Context, _ string) context.Context { return ctx }).(*inProcess)
	if _, err := lw.ListWithContext(context.Background(), metav1.ListOptions{}); !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("list before the storage is installed: %v, want 503", err)
	}

	s.listErr = apierrors.NewResourceExpired("too old resource version: 1 (5)")
	if _, err := inProcessOver(s).ListWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "1"}); !apierrors.IsResourceExpired(err) {
		t.Fatalf("expired list: %v, want 410 Expired", err)
	}
	s.watchErr = errors.New("etcd is gone")
	if _, err := inProcessOver(s).WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "1"}); !apierrors.IsInternalError(err) {
		t.Fatalf("watch failing with a plain error: %v, want 500", err)
	}
	if _, err := inProcessOver(s).ListWithContext(context.Background(), metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchExact}); !apierrors.IsInvalid(err) {
		t.Fatalf("resourceVersionMatch without resourceVersion: %v, want 422 as from the handler", err)
	}
}

func TestInProcessWatchUnwrapsCacheableObjects(t *testing.T) {
	s := &fakeStorage{}
	w, err := inProcessOver(s).WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "5", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if opts := s.watches[0]; opts.ResourceVersion != "5" || !opts.AllowWatchBookmarks || !opts.Watch {
		t.Fatalf("storage got %+v", opts)
	}
	if s.verbs[0] != "watch" {
		t.Fatalf("caller context of verb %q, want watch", s.verbs[0])
	}
	s.watchers[0].Add(cacheable{cm("a", "default", "x")})
	s.watchers[0].Modify(cm("a", "default", "y"))
	for _, want := range []string{"x", "y"} {
		e := <-w.ResultChan()
		got, ok := e.Object.(*corev1.ConfigMap)
		if !ok || got.Name != want {
			t.Fatalf("event object %T %v, want ConfigMap %s", e.Object, e.Object, want)
		}
	}
}

func TestInProcessWatchEndsWithItsContextAndWithStop(t *testing.T) {
	s := &fakeStorage{}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := inProcessOver(s).WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "5"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for range w.ResultChan() {
	}
	if !s.watchers[0].IsStopped() {
		t.Fatal("the storage's watch runs on after the context ended")
	}

	w, err = inProcessOver(s).WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "5"})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	for range w.ResultChan() {
	}
	if !s.watchers[1].IsStopped() {
		t.Fatal("the storage's watch runs on after Stop")
	}
}

func TestInProcessWatchHasTheRequestedTimeout(t *testing.T) {
	s := &fakeStorage{}
	timeout := int64(300)
	w, err := inProcessOver(s).WatchWithContext(context.Background(), metav1.ListOptions{ResourceVersion: "5", TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	deadline, ok := s.watchCtxs[0].Deadline()
	if !ok || time.Until(deadline) > 300*time.Second {
		t.Fatalf("storage's watch context has deadline %v (%v), want one within 300 s", deadline, ok)
	}
}

// TestInProcessInformerRelistsWhenItsResourceVersionExpired: the cacher
// answers a watch from a compacted resource version with an ERROR event
// (410), and the reflector lists again, as over HTTP.
func TestInProcessInformerRelistsWhenItsResourceVersionExpired(t *testing.T) {
	s := &fakeStorage{cached: []*corev1.ConfigMap{cm("a", "default", "x")}, listRV: "10"}
	s.onWatch = func(w *watch.FakeWatcher, _ *metainternalversion.ListOptions) {
		if len(s.watches) == 1 {
			w.Error(&apierrors.NewResourceExpired("too old resource version: 10 (20)").ErrStatus)
		}
	}
	i := NewRemote(inProcessOver(s), &corev1.ConfigMap{}, "test")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go i.Run(ctx)
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		lists, watches := s.counts()
		return lists >= 2 && watches >= 2, nil
	}); err != nil {
		t.Fatalf("no list and watch after the expired watch: %v", err)
	}
	if !i.HasSynced() {
		t.Fatal("not synced")
	}
}

// TestInProcessInformerLeavesTheCachedObjectsAlone: stored objects drop
// their managedFields, but the watch cache's objects, whose maps and
// slices a list's items share, keep theirs.
func TestInProcessInformerLeavesTheCachedObjectsAlone(t *testing.T) {
	cached := withManagedFields("a", "x")
	before := cached.DeepCopy()
	s := &fakeStorage{cached: []*corev1.ConfigMap{cached}, listRV: "10"}
	i := New(inProcessOver(s), &corev1.ConfigMap{}, "test")
	if !i.inProcess {
		t.Fatal("informer over InProcess does not know it")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go i.Run(ctx)
	if err := WaitForSync(ctx, i); err != nil {
		t.Fatal(err)
	}
	obj, exists, _ := i.Get("a", "default", "x")
	if !exists {
		t.Fatal("a|default/x missing")
	}
	if got := obj.(*corev1.ConfigMap); got.ManagedFields != nil || got == cached {
		t.Fatalf("stored object %p keeps managedFields %v (cached %p)", got, got.ManagedFields, cached)
	}
	if !reflect.DeepEqual(cached, before) {
		t.Fatalf("the cached object changed: %+v, was %+v", cached, before)
	}
}

func TestListOnlyPassesTheReflectorsContext(t *testing.T) {
	s := &fakeStorage{}
	lo := listOnly{ListerWatcher: inProcessOver(s), withContext: inProcessOver(s)}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := lo.WatchWithContext(ctx, metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for range w.ResultChan() {
	}
	if !s.watchers[0].IsStopped() {
		t.Fatal("the watch outlived the reflector's context")
	}
}

func TestShallowCopyIsANewStructSharingMaps(t *testing.T) {
	orig := cm("a", "default", "x")
	orig.Labels = map[string]string{"l": "v"}
	c := shallowCopy(orig).(*corev1.ConfigMap)
	if c == orig || c.Name != "x" || c.Labels["l"] != "v" {
		t.Fatalf("copy %p %+v of %p", c, c, orig)
	}
	c.Name, c.ManagedFields = "y", nil
	if orig.Name != "x" {
		t.Error("setting a field of the copy changed the original")
	}
	u := &unstructured.Unstructured{Object: map[string]interface{}{"metadata": map[string]interface{}{"name": "u"}}}
	uc := shallowCopy(u).(*unstructured.Unstructured)
	uc.SetName("v")
	if u.GetName() != "u" {
		t.Error("an unstructured object was not copied deeply")
	}
}
