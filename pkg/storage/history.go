package storage

import (
	"context"
	"reflect"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// HistoryIdleAfter is how long a resource must see no write before its
	// watch cache may drop the history of the writes before. Short: the
	// release costs one read of the objects left, and watchers resume
	// without a relist of their own.
	HistoryIdleAfter = 5 * time.Second
	// historyMinEvents is the smallest history worth a relist: the watch
	// cache's ring never shrinks below 100 events anyway.
	historyMinEvents = 500
	// snapshotMinEvents is the smallest history of a burst with few
	// deletions worth a relist from a snapshot: a relist ends the cache's
	// watches (their clients resume), so not after every small burst.
	snapshotMinEvents = 2000
)

// historyBound is the storage a watch cache lists and watches, wrapped so
// that the cache's event history does not outlive the burst that filled it.
//
// The watch cache keeps its recent events, each with the object and its
// previous state, in a ring that shrinks only when new events arrive: after
// a burst of writes it holds them for as long as the resource stays quiet,
// and with them every version the burst wrote (creating a workspace writes
// its objects two to four times each) or deleted. When a resource saw no
// event for idleAfter after a burst, the watch ends with "resource version
// expired" and the cache lists again, which empties its history:
//   - after any burst of snapshotMinEvents or more, the list is a snapshot
//     of the cache itself, taken at the last event: the objects it holds,
//     whose maps, slices and strings stay where they are (only their
//     top-level structs move, into the list's one slice), without reading
//     etcd;
//   - where no snapshot can be had, only when more of its objects were
//     deleted since the cache's last list than are left: the list reads
//     etcd and costs the objects left, fewer than the deleted ones it frees.
//     (After a burst of creates, decoding every object anew while the old
//     ones' spans stayed partly used cost more RSS than letting the
//     history go freed: docs/performance.md,
//     "Where time and memory go".)
//
// The list is at the resource version of the last event, which is the
// current state of a quiet resource: a watcher that saw that event (or a
// later bookmark) resumes its watch from the new cache as it would have from
// the old one, without a relist; one that did not gets 410 Gone and relists,
// as with upstream once the window has passed. The cache ends its watches
// when it lists again, as upstream's does after its watch of etcd failed:
// their clients watch again, told to retry (429) until the cache is ready,
// about a second later.
type historyBound struct {
	storage.Interface
	clock     clock.WithTicker
	idleAfter time.Duration
	// released is told when a history is let go, with the resource
	// version of the resource's last event (nil: nobody).
	released func(rv uint64)

	mu sync.Mutex
	// objects is the number of objects of the last list, plus the added
	// and minus the deleted ones since.
	objects int
	// events and deleted count the events and the deletions since the
	// last list.
	events    int
	deleted   int
	lastEvent time.Time
	// lastRV is the resource version of the last event.
	lastRV uint64
	// relistAt is the resource version the next list reads at, set when a
	// history is released (0: the current one).
	relistAt uint64

	// cached, when set, is the watch cache on top (its own storage), and
	// newList makes the lists it fills. A history is then released with a
	// snapshot of the cache's objects (snapshot) that the relist hands
	// back, instead of objects decoded anew from etcd: the cache keeps
	// its objects' maps, slices and strings, and only their top-level
	// structs move, into one slice.
	cached   cacheLister
	newList  func() runtime.Object
	snapshot runtime.Object
}

func newHistoryBound(s storage.Interface, c clock.WithTicker, idleAfter time.Duration) *historyBound {
	return &historyBound{Interface: s, clock: c, idleAfter: idleAfter, lastEvent: c.Now()}
}

// GetList counts the objects of the cache's (paginated) list; a first page
// starts a new count. The objects listed from etcd share registered values;
// those of a snapshot are the cache's, already shared, and left alone.
func (h *historyBound) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	snapshot, err := h.getList(ctx, key, opts, listObj)
	if err != nil {
		return err
	}
	n := meta.LenList(listObj)
	if !snapshot {
		_ = meta.EachListItem(listObj, func(obj runtime.Object) error {
			ShareValues(obj)
			return nil
		})
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if opts.Predicate.Continue == "" {
		h.objects, h.events, h.deleted = 0, 0, 0
	}
	h.objects += n
	return nil
}

// getList lists for the cache. The first list after a release is the
// snapshot of the cache taken then (it tells so), or else reads etcd at
// the resource version of the last event if etcd still has it.
func (h *historyBound) getList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) (snapshot bool, err error) {
	h.mu.Lock()
	at, snap := h.relistAt, h.snapshot
	h.relistAt, h.snapshot = 0, nil
	h.mu.Unlock()
	first := opts.Predicate.Continue == "" && opts.ResourceVersion == ""
	if snap != nil && first {
		// The list's struct, whose items slice is the snapshot's own.
		reflect.ValueOf(listObj).Elem().Set(reflect.ValueOf(snap).Elem())
		return true, nil
	}
	if at > 0 && first {
		pinned := opts
		pinned.ResourceVersion = strconv.FormatUint(at, 10)
		pinned.ResourceVersionMatch = metav1.ResourceVersionMatchExact
		if err := h.Interface.GetList(ctx, key, pinned, listObj); err == nil {
			return false, nil
		}
		// Compacted since: a list of the current state, as upstream.
	}
	return false, h.Interface.GetList(ctx, key, opts, listObj)
}

// Watch returns the watch of the wrapped storage, ended with an expired
// error once its history is not worth keeping.
func (h *historyBound) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	w, err := h.Interface.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	b := &boundedWatch{key: key, inner: w, out: make(chan watch.Event), done: make(chan struct{})}
	go b.run(h)
	return b, nil
}

func (h *historyBound) observe(e watch.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch e.Type {
	case watch.Added:
		h.objects++
	case watch.Deleted:
		h.objects--
		h.deleted++
	case watch.Modified:
	default:
		return
	}
	h.events++
	h.lastEvent = h.clock.Now()
	if rv, err := eventResourceVersion(e.Object); err == nil {
		h.lastRV = rv
	}
}

// eventResourceVersion is the resource version of a watch event's object,
// which etcd's watch may wrap with the time it was read.
func eventResourceVersion(obj runtime.Object) (uint64, error) {
	if w, ok := obj.(interface{ Unwrap() runtime.Object }); ok {
		obj = w.Unwrap()
	}
	return storage.APIObjectVersioner{}.ObjectResourceVersion(obj)
}

// historyExpired tells whether the history since the last list should go
// now that the resource is quiet: after most of its objects were deleted
// (a relist from etcd costs less than the history), or after any burst if
// the relist can be a snapshot of the cache (which costs only the objects'
// top-level structs, while the history holds every written version and an
// event for each). snapshot tells whether it must be one.
func (h *historyBound) historyExpired() (expired, snapshot bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.events < historyMinEvents || h.clock.Since(h.lastEvent) < h.idleAfter {
		return false, false
	}
	if h.deleted > h.objects {
		return true, false
	}
	if h.cached == nil || h.events < snapshotMinEvents {
		return false, false
	}
	return true, true
}

// release makes the next list read at the last event's resource version,
// which it returns: from a snapshot of the watch cache at that version if
// one can be had, else from etcd unless needSnapshot. key is the watch's.
// It tells whether the history is released.
func (h *historyBound) release(key string, needSnapshot bool) (uint64, bool) {
	h.mu.Lock()
	rv := h.lastRV
	h.mu.Unlock()
	snapshot := h.snapshotOf(key, rv)
	h.mu.Lock()
	defer h.mu.Unlock()
	if snapshot == nil && needSnapshot {
		// Kept until the next burst; not tried again at every tick.
		h.events = 0
		return rv, false
	}
	h.relistAt, h.snapshot = rv, snapshot
	return rv, true
}

// unrelease undoes release when the watch did not end with it.
func (h *historyBound) unrelease() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.relistAt, h.snapshot = 0, nil
}

// cacheLister lists a watch cache (the cacher's GetList).
type cacheLister interface {
	GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error
}

// snapshotTimeout bounds the wait for the watch cache to reach the last
// event's resource version (it has been handed the event).
const snapshotTimeout = 10 * time.Second

// snapshotOf lists the watch cache at rv, or returns nil.
func (h *historyBound) snapshotOf(key string, rv uint64) runtime.Object {
	if h.cached == nil || h.newList == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), snapshotTimeout)
	defer cancel()
	list := h.newList()
	opts := storage.ListOptions{
		ResourceVersion:      strconv.FormatUint(rv, 10),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		Predicate:            storage.Everything,
		Recursive:            true,
	}
	if err := h.cached.GetList(ctx, key, opts, list); err != nil {
		klog.V(2).InfoS("The watch cache relists from etcd: no snapshot of its objects", "key", key, "resourceVersion", rv, "err", err)
		return nil
	}
	return list
}

type boundedWatch struct {
	key   string
	inner watch.Interface
	out   chan watch.Event
	done  chan struct{}
	once  sync.Once
}

func (b *boundedWatch) ResultChan() <-chan watch.Event { return b.out }

func (b *boundedWatch) Stop() { b.once.Do(func() { close(b.done) }) }

func (b *boundedWatch) run(h *historyBound) {
	defer close(b.out)
	defer b.inner.Stop()
	tick := h.clock.NewTicker(h.idleAfter / 3)
	defer tick.Stop()
	in := b.inner.ResultChan()
	for {
		select {
		case e, ok := <-in:
			if !ok {
				return
			}
			h.observe(e)
			// Decoded for this watch alone: it may be changed in place.
			ShareValues(e.Object)
			select {
			case b.out <- e:
			case <-b.done:
				return
			}
		case <-tick.C():
			expired, snapshot := h.historyExpired()
			if !expired {
				continue
			}
			rv, released := h.release(b.key, snapshot)
			if !released {
				continue
			}
			gone := apierrors.NewResourceExpired("watch cache history released after the resource went idle")
			select {
			case b.out <- watch.Event{Type: watch.Error, Object: &gone.ErrStatus}:
				if h.released != nil {
					h.released(rv)
				}
			case <-b.done:
				// Stopped first: the next list is no relist of ours.
				h.unrelease()
			}
			return
		case <-b.done:
			return
		}
	}
}

// memoryReturner gives the memory of released histories back to the
// operating system in one go. The runtime's scavenger returns freed pages
// over minutes, so RSS would stay at its peak long after a burst's history
// was freed; a release happens only after a burst, for several resources
// within seconds of each other, so one FreeOSMemory (a full GC) after the
// last of them is cheap.
//
// Before that it compacts etcd up to where the released histories ended:
// the revisions of deleted and overwritten objects stay in etcd's index
// (heap) and database file (mapped, so RSS) until compacted, and the
// periodic compactor, which compacts to the revision it saw one interval
// earlier, would free them only one to two intervals later.
type memoryReturner struct {
	clock clock.WithDelayedExecution
	// delay lets the caches relist and drop the old history first; every
	// release within it postpones the return.
	delay time.Duration
	free  func()

	mu    sync.Mutex
	timer clock.Timer
	// compactTo holds, per shared etcd client, the newest resource version
	// at which a released history ended.
	compactTo map[etcdCompactor]int64
}

// etcdCompactor compacts an etcd (EtcdClient.compactTo).
type etcdCompactor interface {
	compactTo(ctx context.Context, rev int64) error
}

// schedule returns memory delay after the last call, compacting e (if not
// nil) to rv first.
func (r *memoryReturner) schedule(e etcdCompactor, rv int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e != nil && rv > r.compactTo[e] {
		if r.compactTo == nil {
			r.compactTo = map[etcdCompactor]int64{}
		}
		r.compactTo[e] = rv
	}
	if r.timer != nil {
		r.timer.Stop()
	}
	r.timer = r.clock.AfterFunc(r.delay, r.returnMemory)
}

// returnMemory compacts and then frees.
func (r *memoryReturner) returnMemory() {
	r.mu.Lock()
	pending := r.compactTo
	r.compactTo = nil
	r.mu.Unlock()
	for e, rv := range pending {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := e.compactTo(ctx, rv); err != nil {
			klog.ErrorS(err, "Compacting etcd after a mass deletion failed; the periodic compaction will", "revision", rv)
		}
		cancel()
	}
	r.free()
}

// returnMemory is the process's returner, told by every watch cache's
// historyBound. The interners forget their maps first: those of the objects
// a burst deleted are freed with it. Then the binary's OnMemoryReturned
// hook runs.
var returnMemory = &memoryReturner{clock: clock.RealClock{}, delay: 5 * time.Second, free: func() {
	forgetSharedMaps()
	debug.FreeOSMemory()
	if f := memoryReturned.Load(); f != nil {
		(*f)()
	}
}}

// memoryReturned is the hook set by OnMemoryReturned.
var memoryReturned atomic.Pointer[func()]

// OnMemoryReturned sets f to run each time the storage has given the
// memory of a burst back to the operating system, replacing the f before;
// nil runs nothing. The binaries give back the executable's pages that the
// burst ran then, as after start-up; storage leaves process paging to them.
func OnMemoryReturned(f func()) {
	if f == nil {
		memoryReturned.Store(nil)
		return
	}
	memoryReturned.Store(&f)
}
