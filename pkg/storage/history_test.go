package storage

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	etcdfeature "k8s.io/apiserver/pkg/storage/feature"
	clocktesting "k8s.io/utils/clock/testing"
)

// listWatchStorage lists a fixed set of objects (of any list type) and
// hands out one fake watch.
type listWatchStorage struct {
	storage.Interface
	items []runtime.Object
	watch *watch.FakeWatcher
}

func (s *listWatchStorage) GetList(_ context.Context, _ string, _ storage.ListOptions, listObj runtime.Object) error {
	return meta.SetList(listObj, s.items)
}

func (s *listWatchStorage) Watch(context.Context, string, storage.ListOptions) (watch.Interface, error) {
	return s.watch, nil
}

func configMap(i int) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("cm-%d", i)}}
}

func TestHistoryOfAQuietResourceIsReleasedAfterMostObjectsWereDeleted(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	inner := &listWatchStorage{items: []runtime.Object{configMap(-1)}, watch: watch.NewFake()}
	h := newHistoryBound(inner, clock, time.Minute)
	released := make(chan uint64, 1)
	h.released = func(rv uint64) { released <- rv }
	if err := h.GetList(context.Background(), "/core/configmaps", storage.ListOptions{}, &corev1.ConfigMapList{}); err != nil {
		t.Fatal(err)
	}
	w, err := h.Watch(context.Background(), "/core/configmaps", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// A burst: objects created and deleted again, every event passed on.
	for i := 0; i < historyMinEvents; i++ {
		cm := configMap(i)
		cm.ResourceVersion = fmt.Sprint(100 + i)
		e := watch.Event{Type: watch.Added, Object: cm}
		if i%2 == 1 {
			e.Type = watch.Deleted
		}
		go inner.watch.Action(e.Type, e.Object)
		if got := <-w.ResultChan(); got.Type != e.Type {
			t.Fatalf("event %d is %s, want %s", i, got.Type, e.Type)
		}
	}
	clock.Step(time.Minute)
	e, ok := <-w.ResultChan()
	if !ok || e.Type != watch.Error {
		t.Fatalf("after a quiet minute the watch delivered %v (open %v), want an error", e, ok)
	}
	if err := apierrors.FromObject(e.Object); !apierrors.IsResourceExpired(err) {
		t.Fatalf("the watch ended with %v, want resource version expired", err)
	}
	// The process is told, to compact etcd up to the last event and give
	// the memory back.
	if rv, want := <-released, uint64(100+historyMinEvents-1); rv != want {
		t.Errorf("released at resource version %d, want that of the last event (%d)", rv, want)
	}
	if _, ok := <-w.ResultChan(); ok {
		t.Fatal("the watch stays open after it expired")
	}
	if !inner.watch.IsStopped() {
		t.Fatal("the storage's watch was not stopped")
	}
}

func TestHistoryExpired(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name                     string
		objects, events, deleted int
		quiet                    time.Duration
		// cached: the cache can be snapshotted.
		cached                bool
		wantExpired, snapshot bool
	}{
		{name: "everything deleted, then quiet", objects: 0, events: 3000, deleted: 1000, quiet: time.Minute, wantExpired: true},
		{name: "everything deleted, then quiet, with a cache", objects: 0, events: 3000, deleted: 1000, quiet: time.Minute, cached: true, wantExpired: true},
		{name: "still busy", objects: 0, events: 3000, deleted: 1000, quiet: time.Second, cached: true},
		{name: "fewer events than the ring keeps anyway", objects: 0, events: historyMinEvents - 1, deleted: 100, quiet: time.Hour, cached: true},
		{name: "a burst of creates", objects: 3000, events: 9000, quiet: time.Hour},
		{name: "a burst of creates, with a cache", objects: 3000, events: 9000, quiet: time.Hour, cached: true, wantExpired: true, snapshot: true},
		{name: "a relist would cost more than the history", objects: 40000, events: 3000, deleted: 1000, quiet: time.Hour},
		{name: "a snapshot costs less than the history", objects: 40000, events: 3000, deleted: 1000, quiet: time.Hour, cached: true, wantExpired: true, snapshot: true},
		{name: "a small burst keeps its watchers", objects: 1000, events: snapshotMinEvents - 1, quiet: time.Hour, cached: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := clocktesting.NewFakeClock(now)
			h := newHistoryBound(nil, clock, time.Minute)
			if tc.cached {
				h.cached, h.newList = &snapshotCache{}, func() runtime.Object { return &corev1.ConfigMapList{} }
			}
			h.objects, h.events, h.deleted, h.lastEvent = tc.objects, tc.events, tc.deleted, now
			clock.Step(tc.quiet)
			if expired, snapshot := h.historyExpired(); expired != tc.wantExpired || snapshot != tc.snapshot {
				t.Errorf("historyExpired() = %v, %v, want %v, %v", expired, snapshot, tc.wantExpired, tc.snapshot)
			}
		})
	}
}

// pinnedListStorage records the resource versions it is listed at and
// refuses exact ones when compacted is set.
type pinnedListStorage struct {
	listWatchStorage
	compacted bool
	lists     []storage.ListOptions
}

func (s *pinnedListStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	s.lists = append(s.lists, opts)
	if s.compacted && opts.ResourceVersion != "" {
		return storage.NewTooLargeResourceVersionError(1, 2, 0)
	}
	return s.listWatchStorage.GetList(ctx, key, opts, listObj)
}

func TestListAfterAReleaseReadsAtTheLastEventsResourceVersion(t *testing.T) {
	for _, compacted := range []bool{false, true} {
		t.Run(fmt.Sprintf("compacted=%v", compacted), func(t *testing.T) {
			clock := clocktesting.NewFakeClock(time.Now())
			inner := &pinnedListStorage{listWatchStorage: listWatchStorage{watch: watch.NewFake()}, compacted: compacted}
			h := newHistoryBound(inner, clock, time.Minute)
			ctx := context.Background()
			w := listAndWatch(t, h)
			// Objects created and deleted again, the last event at
			// resource version 600.
			for i := 1; i <= historyMinEvents+100; i++ {
				cm := configMap((i + 1) / 2)
				cm.ResourceVersion = fmt.Sprint(i)
				if i%2 == 1 {
					go inner.watch.Add(cm)
				} else {
					go inner.watch.Delete(cm)
				}
				<-w.ResultChan()
			}
			clock.Step(time.Minute)
			if e := <-w.ResultChan(); e.Type != watch.Error {
				t.Fatalf("after a quiet minute the watch delivered %v, want an error", e.Type)
			}
			inner.lists = nil
			if err := h.GetList(ctx, "/core/configmaps", storage.ListOptions{}, &corev1.ConfigMapList{}); err != nil {
				t.Fatal(err)
			}
			first := inner.lists[0]
			if first.ResourceVersion != "600" || first.ResourceVersionMatch != metav1.ResourceVersionMatchExact {
				t.Fatalf("the relist read at %q (match %q), want exactly 600", first.ResourceVersion, first.ResourceVersionMatch)
			}
			if last := inner.lists[len(inner.lists)-1]; compacted != (len(inner.lists) == 2) || (compacted && last.ResourceVersion != "") {
				t.Fatalf("lists %+v: want a list of the current state only when 600 is compacted", inner.lists)
			}
			// Later lists read the current state.
			inner.lists = nil
			if err := h.GetList(ctx, "/core/configmaps", storage.ListOptions{}, &corev1.ConfigMapList{}); err != nil {
				t.Fatal(err)
			}
			if len(inner.lists) != 1 || inner.lists[0].ResourceVersion != "" {
				t.Fatalf("a later list read at %+v, want the current state", inner.lists)
			}
		})
	}
}

func TestHistoryCountsRestartWithAList(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	inner := &listWatchStorage{items: []runtime.Object{configMap(1), configMap(2)}}
	h := newHistoryBound(inner, clock, time.Minute)
	h.objects, h.events, h.deleted = 7, 900, 300
	ctx := context.Background()
	if err := h.GetList(ctx, "/core/configmaps", storage.ListOptions{}, &corev1.ConfigMapList{}); err != nil {
		t.Fatal(err)
	}
	next := storage.ListOptions{Predicate: storage.SelectionPredicate{Continue: "page-2"}}
	if err := h.GetList(ctx, "/core/configmaps", next, &corev1.ConfigMapList{}); err != nil {
		t.Fatal(err)
	}
	if h.objects != 4 || h.events != 0 || h.deleted != 0 {
		t.Fatalf("after a list of two pages of two: objects=%d events=%d deleted=%d, want 4, 0 and 0", h.objects, h.events, h.deleted)
	}
}

func TestMemoryIsReturnedOnceAfterTheLastReleaseOfABurst(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	var returned atomic.Int32
	r := &memoryReturner{clock: clock, delay: 5 * time.Second, free: func() { returned.Add(1) }}
	// Several resources release their histories within seconds.
	for i := 0; i < 3; i++ {
		r.schedule(nil, 0)
		clock.Step(2 * time.Second)
	}
	if n := returned.Load(); n != 0 {
		t.Fatalf("memory returned %d times while releases kept coming", n)
	}
	clock.Step(5 * time.Second)
	if n := returned.Load(); n != 1 {
		t.Fatalf("memory returned %d times after the burst, want 1", n)
	}
	// A later burst returns it again.
	r.schedule(nil, 0)
	clock.Step(5 * time.Second)
	if n := returned.Load(); n != 2 {
		t.Fatalf("memory returned %d times after the second burst, want 2", n)
	}
}

// recordingCompactor records the revisions it is compacted to, and whether
// the memory was returned by then.
type recordingCompactor struct {
	revs     []int64
	returned *atomic.Int32
	before   []int32
}

func (c *recordingCompactor) compactTo(_ context.Context, rev int64) error {
	c.revs = append(c.revs, rev)
	c.before = append(c.before, c.returned.Load())
	return nil
}

func TestEtcdIsCompactedToTheNewestReleaseBeforeMemoryIsReturned(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	var returned atomic.Int32
	r := &memoryReturner{clock: clock, delay: 5 * time.Second, free: func() { returned.Add(1) }}
	a, b := &recordingCompactor{returned: &returned}, &recordingCompactor{returned: &returned}
	r.schedule(a, 120)
	r.schedule(b, 90)
	r.schedule(a, 100) // an older release of another resource
	r.schedule(nil, 0) // a storage on a client of its own
	clock.Step(5 * time.Second)
	if len(a.revs) != 1 || a.revs[0] != 120 || a.before[0] != 0 {
		t.Errorf("first client compacted to %v (memory returned %v times before): want once to 120, before the memory is returned", a.revs, a.before)
	}
	if len(b.revs) != 1 || b.revs[0] != 90 {
		t.Errorf("second client compacted to %v, want once to 90", b.revs)
	}
	if n := returned.Load(); n != 1 {
		t.Fatalf("memory returned %d times, want 1", n)
	}
	// A burst without releases of a's storages does not compact it again.
	r.schedule(b, 150)
	clock.Step(5 * time.Second)
	if len(a.revs) != 1 || len(b.revs) != 2 || b.revs[1] != 150 {
		t.Errorf("after a second burst: first client compacted to %v, second to %v; want [120] and [90 150]", a.revs, b.revs)
	}
}

// snapshotCache stands for the watch cache: it lists items and records
// how it was asked.
type snapshotCache struct {
	items []runtime.Object
	keys  []string
	opts  []storage.ListOptions
}

func (c *snapshotCache) GetList(_ context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	c.keys, c.opts = append(c.keys, key), append(c.opts, opts)
	if err := meta.SetList(listObj, c.items); err != nil {
		return err
	}
	return nil
}

func TestABurstsHistoryIsReleasedWithASnapshotOfTheCache(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	inner := &pinnedListStorage{listWatchStorage: listWatchStorage{watch: watch.NewFake()}}
	h := newHistoryBound(inner, clock, time.Minute)
	bundle := strings.Repeat("a CA bundle ", 100)
	ShareValue(bundle)
	cached := configMap(1)
	cached.Data = map[string]string{"ca.crt": strings.Clone(bundle)}
	cachedValue := unsafe.StringData(cached.Data["ca.crt"])
	cache := &snapshotCache{items: []runtime.Object{cached}}
	h.cached, h.newList = cache, func() runtime.Object { return &corev1.ConfigMapList{} }
	released := make(chan uint64, 1)
	h.released = func(rv uint64) { released <- rv }
	ctx := context.Background()
	w := burstOfCreates(t, h, inner.watch, snapshotMinEvents)
	clock.Step(time.Minute)
	if e := <-w.ResultChan(); e.Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(e.Object)) {
		t.Fatalf("after a quiet minute the watch delivered %v %v, want an expired error", e.Type, e.Object)
	}
	if rv := <-released; rv != snapshotMinEvents {
		t.Fatalf("released at %d, want %d", rv, snapshotMinEvents)
	}
	if len(cache.opts) != 1 || cache.keys[0] != "/core/configmaps" || cache.opts[0].ResourceVersion != fmt.Sprint(snapshotMinEvents) ||
		cache.opts[0].ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan || !cache.opts[0].Recursive {
		t.Fatalf("the cache was listed with %v %+v, want the watch's key, recursively, not older than the last event", cache.keys, cache.opts)
	}
	// The relist is the snapshot: etcd is not read, and the cache's maps
	// are left alone (they are read concurrently).
	inner.lists = nil
	var list corev1.ConfigMapList
	if err := h.GetList(ctx, "/core/configmaps", storage.ListOptions{}, &list); err != nil {
		t.Fatal(err)
	}
	if len(inner.lists) != 0 {
		t.Fatalf("the relist read etcd: %+v", inner.lists)
	}
	if len(list.Items) != 1 || list.Items[0].Name != cached.Name {
		t.Fatalf("the relist listed %v, want the snapshot", list.Items)
	}
	if unsafe.StringData(cached.Data["ca.crt"]) != cachedValue {
		t.Fatal("the relist wrote a shared value into the cached object's data")
	}
	// The next list reads etcd again.
	if err := h.GetList(ctx, "/core/configmaps", storage.ListOptions{}, &list); err != nil {
		t.Fatal(err)
	}
	if len(inner.lists) != 1 || inner.lists[0].ResourceVersion != "" {
		t.Fatalf("a later list read %+v, want the current state from etcd", inner.lists)
	}
}

// listAndWatch lists h and returns its watch, as the watch cache does.
func listAndWatch(t *testing.T, h *historyBound) watch.Interface {
	t.Helper()
	ctx := context.Background()
	if err := h.GetList(ctx, "/core/configmaps", storage.ListOptions{}, &corev1.ConfigMapList{}); err != nil {
		t.Fatal(err)
	}
	w, err := h.Watch(ctx, "/core/configmaps", storage.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// burstOfCreates lists h, watches it, and passes n creates (at resource
// versions 1 to n) from source through the watch, which it returns.
func burstOfCreates(t *testing.T, h *historyBound, source *watch.FakeWatcher, n int) watch.Interface {
	t.Helper()
	w := listAndWatch(t, h)
	for i := 1; i <= n; i++ {
		cm := configMap(i)
		cm.ResourceVersion = fmt.Sprint(i)
		go source.Add(cm)
		<-w.ResultChan()
	}
	return w
}

// failingCache is a watch cache that cannot be listed (not ready).
type failingCache struct{ lists atomic.Int32 }

func (c *failingCache) GetList(context.Context, string, storage.ListOptions, runtime.Object) error {
	c.lists.Add(1)
	return fmt.Errorf("not ready")
}

func TestABurstsHistoryStaysWithoutASnapshot(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	inner := &listWatchStorage{watch: watch.NewFake()}
	h := newHistoryBound(inner, clock, time.Minute)
	cache := &failingCache{}
	h.cached, h.newList = cache, func() runtime.Object { return &corev1.ConfigMapList{} }
	w := burstOfCreates(t, h, inner.watch, snapshotMinEvents)
	clock.Step(time.Minute)
	for cache.lists.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	// Not tried again at the next tick, and the watch goes on.
	clock.Step(time.Minute)
	cm := configMap(0)
	cm.ResourceVersion = "1000"
	go inner.watch.Add(cm)
	if e := <-w.ResultChan(); e.Type != watch.Added {
		t.Fatalf("the watch delivered %v, want the next event", e.Type)
	}
	if n := cache.lists.Load(); n != 1 {
		t.Fatalf("the cache was listed %d times, want once", n)
	}
}

func TestAWatchCacheDropsABurstsHistoryWithoutReadingEtcd(t *testing.T) {
	// As the servers run: the caches list (a watch-list would read etcd).
	if err := DisableWatchListClient(); err != nil {
		t.Fatal(err)
	}
	etcd, kv := inProcessEtcd(t)
	waitFor(t, "RequestWatchProgress support", func() bool {
		return etcdfeature.DefaultFeatureSupportChecker.Supports(storage.RequestWatchProgress)
	})
	s, destroy := configMapStorage(t, etcd, true)
	defer destroy()
	ctx := ctxFor("abc")
	// Every create is an event of the cache's watch: it listed first (it
	// takes watches once ready).
	waitFor(t, "the watch cache to be ready", func() bool {
		w, err := s.Watch(ctx, "/core/configmaps", storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything})
		if err == nil {
			w.Stop()
		}
		return err == nil
	})
	var first, last string
	for i := range snapshotMinEvents {
		created := &corev1.ConfigMap{}
		cm := configMap(i)
		cm.Data = map[string]string{"k": fmt.Sprint(i)}
		if err := s.Create(ctx, "/core/configmaps/default/"+cm.Name, cm, created, 0); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = created.ResourceVersion
		}
		last = created.ResourceVersion
	}
	all := storage.ListOptions{ResourceVersion: last, Recursive: true, Predicate: storage.Everything}
	w, err := s.Watch(ctx, "/core/configmaps", all)
	if err != nil {
		t.Fatal(err)
	}
	reads := kv.reads.Load()
	// Quiet for HistoryIdleAfter: the history goes, and with it the
	// cache's watchers.
	select {
	case e, ok := <-w.ResultChan():
		if ok {
			t.Fatalf("the watch delivered %v, want it to end", e.Type)
		}
	case <-time.After(time.Minute):
		t.Fatal("the watch cache kept its history")
	}
	// A watcher that saw the last event resumes once the cache relisted
	// (until then it is asked to come back, 429); one from before gets
	// 410 Gone.
	waitFor(t, "the cache to take watches again", func() bool {
		w, err = s.Watch(ctx, "/core/configmaps", all)
		return err == nil
	})
	defer w.Stop()
	if got := kv.reads.Load() - reads; got != 0 {
		t.Errorf("the cache relisted with %d reads of etcd, want its own snapshot", got)
	}
	cm := configMap(snapshotMinEvents)
	if err := s.Create(ctx, "/core/configmaps/default/"+cm.Name, cm, &corev1.ConfigMap{}, 0); err != nil {
		t.Fatal(err)
	}
	if e := nextEvent(t, w); e.Type != watch.Added || name(e.Object) != cm.Name {
		t.Fatalf("the resumed watch delivered %v %v, want the new object", e.Type, e.Object)
	}
	old, err := s.Watch(ctx, "/core/configmaps", storage.ListOptions{ResourceVersion: first, Recursive: true, Predicate: storage.Everything})
	if err == nil {
		e := nextEvent(t, old)
		old.Stop()
		err = apierrors.FromObject(e.Object)
	}
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("a watch from before the release: %v, want 410 Gone", err)
	}
	// The cache holds every object, as before.
	var list corev1.ConfigMapList
	if err := s.GetList(ctx, "/core/configmaps", storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything}, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != snapshotMinEvents+1 {
		t.Fatalf("the cache lists %d objects, want %d", len(list.Items), snapshotMinEvents+1)
	}
	for _, item := range list.Items {
		if want := strings.TrimPrefix(item.Name, "cm-"); item.Name != cm.Name && item.Data["k"] != want {
			t.Fatalf("%s has data %v, want k=%s", item.Name, item.Data, want)
		}
	}
}

// name is the name of obj, which a watch may wrap for serialization.
func name(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetName()
}

func TestOnMemoryReturnedRunsWhenTheMemoryWentBack(t *testing.T) {
	var ran atomic.Int32
	OnMemoryReturned(func() { ran.Add(1) })
	t.Cleanup(func() { OnMemoryReturned(nil) })
	returnMemory.free()
	if ran.Load() != 1 {
		t.Fatalf("the hook ran %d times, want 1", ran.Load())
	}
	OnMemoryReturned(nil)
	returnMemory.free()
	if ran.Load() != 1 {
		t.Fatalf("the hook ran %d times after it was unset, want 1", ran.Load())
	}
}
