package loop

import (
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// RecordWrite is Record of the object a write returned. A write that
// deleted it (the last finalizer removed from an object being deleted) is
// forgotten forgetDeletedAfter later: the informer's deletion event may
// have come before it was recorded, and nothing would forget the key then.
func (w *Written) RecordWrite(key string, written metav1.Object) {
	rv := written.GetResourceVersion()
	w.Record(key, rv)
	if written.GetDeletionTimestamp() != nil && len(written.GetFinalizers()) == 0 {
		time.AfterFunc(forgetDeletedAfter, func() { w.versions.CompareAndDelete(key, rv) })
	}
}

// forgetDeletedAfter is how long a write that deleted its object is kept:
// long enough for the informer to show the deletion.
var forgetDeletedAfter = 10 * time.Second

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
