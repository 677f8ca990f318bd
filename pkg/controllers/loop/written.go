package loop

import (
	"strconv"
	"sync"
)

// Written remembers the resource version of a controller's last write of
// each key, so that a reconcile another event starts before the informer
// has seen that write is skipped instead of redoing the write from a stale
// copy (an update conflict or AlreadyExists, and a round trip, each). The
// informer's event for the write brings the key back.
type Written struct{ versions sync.Map }

// Record notes that the controller wrote key at resourceVersion.
func (w *Written) Record(key, resourceVersion string) {
	if _, err := strconv.ParseUint(resourceVersion, 10, 64); err == nil {
		w.versions.Store(key, resourceVersion)
	}
}

// Stale tells whether a copy of key at resourceVersion predates the last
// recorded write of key; once a copy does not, the write is forgotten.
// Resource versions are the shard's etcd revisions, compared as numbers.
func (w *Written) Stale(key, resourceVersion string) bool {
	v, ok := w.versions.Load(key)
	if !ok {
		return false
	}
	written, _ := strconv.ParseUint(v.(string), 10, 64)
	seen, err := strconv.ParseUint(resourceVersion, 10, 64)
	if err == nil && seen < written {
		return true
	}
	w.versions.CompareAndDelete(key, v)
	return false
}

// Forget drops what is known of key (its object is gone).
func (w *Written) Forget(key string) { w.versions.Delete(key) }
