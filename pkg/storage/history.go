package storage

import (
	"context"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kplane-dev/kplane/pkg/exepages"
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
)

// historyBound is the storage a watch cache lists and watches, wrapped so
// that the cache's event history does not outlive the burst that filled it.
//
// The watch cache keeps its recent events, each with the object and its
// previous state, in a ring that shrinks only when new events arrive: after
// a burst of writes, e.g. deleting every workspace, it holds them for as long
// as the resource stays quiet, and with them memory the deleted objects no
// longer need. When a resource saw no event for idleAfter and more of its
// objects were deleted since the cache's last list than are left, the watch
// ends with "resource version expired": the cache lists again, which empties
// its history (a list costs the objects left, fewer than the deleted ones it
// frees).
//
// The list reads at the resource version of the last event, which is the
// current state of a quiet resource: a watcher that saw that event (or a
// later bookmark) resumes its watch from the new cache as it would have from
// the old one, without a relist; one that did not gets 410 Gone and relists,
// as with upstream once the window has passed.
//
// A burst of creates keeps its history. Measured at 5,000 workspaces, the
// relist after one freed 27 MB of live heap but, moving every cached object
// to new spans while the old ones stayed partly used, added 77 MB of RSS.
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
}

func newHistoryBound(s storage.Interface, c clock.WithTicker, idleAfter time.Duration) *historyBound {
	return &historyBound{Interface: s, clock: c, idleAfter: idleAfter, lastEvent: c.Now()}
}

// GetList counts the objects of the cache's (paginated) list; a first page
// starts a new count. The listed objects share registered values.
func (h *historyBound) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if err := h.getList(ctx, key, opts, listObj); err != nil {
		return err
	}
	n := meta.LenList(listObj)
	_ = meta.EachListItem(listObj, func(obj runtime.Object) error {
		ShareValues(obj)
		return nil
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if opts.Predicate.Continue == "" {
		h.objects, h.events, h.deleted = 0, 0, 0
	}
	h.objects += n
	return nil
}

// getList lists from the wrapped storage; the first list after a release
// reads at the resource version of the last event if etcd still has it.
func (h *historyBound) getList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	h.mu.Lock()
	at := h.relistAt
	h.relistAt = 0
	h.mu.Unlock()
	if at > 0 && opts.Predicate.Continue == "" && opts.ResourceVersion == "" {
		pinned := opts
		pinned.ResourceVersion = strconv.FormatUint(at, 10)
		pinned.ResourceVersionMatch = metav1.ResourceVersionMatchExact
		if err := h.Interface.GetList(ctx, key, pinned, listObj); err == nil {
			return nil
		}
		// Compacted since: a list of the current state, as upstream.
	}
	return h.Interface.GetList(ctx, key, opts, listObj)
}

// Watch returns the watch of the wrapped storage, ended with an expired
// error once its history is not worth keeping.
func (h *historyBound) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	w, err := h.Interface.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	b := &boundedWatch{inner: w, out: make(chan watch.Event), done: make(chan struct{})}
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

// historyExpired tells whether the history since the last list should go.
func (h *historyBound) historyExpired() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.events >= historyMinEvents && h.deleted > h.objects && h.clock.Since(h.lastEvent) >= h.idleAfter
}

// release makes the next list read at the last event's resource version,
// which it returns.
func (h *historyBound) release() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.relistAt = h.lastRV
	return h.lastRV
}

type boundedWatch struct {
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
			if !h.historyExpired() {
				continue
			}
			expired := apierrors.NewResourceExpired("watch cache history released after the resource went idle")
			rv := h.release()
			select {
			case b.out <- watch.Event{Type: watch.Error, Object: &expired.ErrStatus}:
				if h.released != nil {
					h.released(rv)
				}
			case <-b.done:
			}
			return
		case <-b.done:
			return
		}
	}
}

// memoryReturner gives the memory of released histories back to the
// operating system in one go. The runtime's scavenger returns freed pages
// over minutes, so RSS would stay at its peak long after a mass deletion
// freed the heap; a release happens only after one, for several resources
// within seconds of each other, so one FreeOSMemory (a full GC) after the
// last of them is cheap.
//
// Before that it compacts etcd up to where the released histories ended:
// the deleted objects' revisions stay in etcd's index (heap) and database
// file (mapped, so RSS) until compacted, and the periodic compactor, which
// compacts to the revision it saw one interval earlier, would free them
// only one to two intervals later.
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
// a burst deleted are freed with it. The pages of the executable that the
// burst ran go back too, as those of start-up did (package exepages).
var returnMemory = &memoryReturner{clock: clock.RealClock{}, delay: 5 * time.Second, free: func() {
	forgetSharedMaps()
	debug.FreeOSMemory()
	exepages.ReleaseAgain(context.Background())
}}
