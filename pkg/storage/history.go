package storage

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/utils/clock"
)

const (
	// HistoryIdleAfter is how long a resource must see no write before its
	// watch cache may drop the history of the writes before.
	HistoryIdleAfter = 30 * time.Second
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
// frees), and its watchers start over as after any watch cache
// re-initialization. A burst of creates keeps its history: relisting every
// new object would cost more than the ring, which new events shrink anyway.
type historyBound struct {
	storage.Interface
	clock     clock.WithTicker
	idleAfter time.Duration
	// released is told when a history is let go (nil: nobody).
	released func()

	mu sync.Mutex
	// objects is the number of objects of the last list, plus the added
	// and minus the deleted ones since.
	objects int
	// events and deleted count the events and the deletions since the
	// last list.
	events    int
	deleted   int
	lastEvent time.Time
}

func newHistoryBound(s storage.Interface, c clock.WithTicker, idleAfter time.Duration) *historyBound {
	return &historyBound{Interface: s, clock: c, idleAfter: idleAfter, lastEvent: c.Now()}
}

// GetList counts the objects of the cache's (paginated) list; a first page
// starts a new count. The listed objects share registered values.
func (h *historyBound) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if err := h.Interface.GetList(ctx, key, opts, listObj); err != nil {
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

func (h *historyBound) observe(e watch.EventType) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch e {
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
}

// historyExpired tells whether the history since the last list should go.
func (h *historyBound) historyExpired() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.events >= historyMinEvents && h.deleted > h.objects && h.clock.Since(h.lastEvent) >= h.idleAfter
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
			h.observe(e.Type)
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
			select {
			case b.out <- watch.Event{Type: watch.Error, Object: &expired.ErrStatus}:
				if h.released != nil {
					h.released()
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
type memoryReturner struct {
	clock clock.WithDelayedExecution
	// delay lets the caches relist and drop the old history first; every
	// release within it postpones the return.
	delay time.Duration
	free  func()

	mu    sync.Mutex
	timer clock.Timer
}

// schedule returns memory delay after the last call.
func (r *memoryReturner) schedule() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer != nil {
		r.timer.Stop()
	}
	r.timer = r.clock.AfterFunc(r.delay, r.free)
}

// returnMemory is the process's returner, told by every watch cache's
// historyBound.
var returnMemory = &memoryReturner{clock: clock.RealClock{}, delay: 5 * time.Second, free: debug.FreeOSMemory}
