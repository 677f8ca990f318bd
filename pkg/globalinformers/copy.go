package globalinformers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kplane-dev/kplane/pkg/wildcardinformer"
)

// copiedListWatch lists and watches the source (the cache server) and,
// when the source cannot be listed before the informer has any contents,
// answers the list from the copy of the informer's contents kept in file. A
// watch after a list from the copy fails, so the informer lists again (with
// the reflector's back-off) until the source answers with a list it can
// watch from; meanwhile it keeps what it holds. Once it holds something, a
// failed list is just an error: the copy is not served over and over.
type copiedListWatch struct {
	cache.ListerWatcher
	// servedCopy tells that the last list came from the copy.
	servedCopy atomic.Bool
	// failure is the last error listing or watching the source, nil once
	// it answers again.
	failure atomic.Pointer[error]
	file    string
	newList func() runtime.Object
	// informer is the one this list/watch feeds; keep writes its contents.
	informer *wildcardinformer.Informer
	// dirty is signalled (never blocking) when the informer changed.
	dirty chan struct{}
}

// savedList is the file format of a copy: the objects as JSON.
type savedList struct {
	Items []json.RawMessage `json:"items"`
}

// List lists the source, all at once (the copy is of whole lists), or the
// copy when the source does not answer and the informer has not listed
// yet.
func (c *copiedListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	opts.Limit, opts.Continue = 0, ""
	list, err := c.ListerWatcher.List(opts)
	if err == nil {
		c.failure.Store(nil)
		if c.servedCopy.Swap(false) {
			klog.Background().Info("The cache server answers again", "file", c.file)
		}
		return list, nil
	}
	c.failure.Store(&err)
	if c.informer.HasSynced() {
		return nil, err
	}
	saved, loadErr := c.load()
	if loadErr != nil {
		return nil, fmt.Errorf("%w (and no copy to fall back to: %v)", err, loadErr)
	}
	if !c.servedCopy.Swap(true) {
		klog.Background().Info("The cache server cannot be listed; serving the copy seen last", "file", c.file, "err", err)
	}
	return saved, nil
}

// Watch watches the source, unless the last list was the copy: then the
// source must be listed first (a watch from the copy would miss what was
// deleted meanwhile).
func (c *copiedListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	if c.servedCopy.Load() {
		return nil, errListSourceFirst
	}
	w, err := c.ListerWatcher.Watch(opts)
	if err != nil {
		c.failure.Store(&err)
	} else {
		c.failure.Store(nil)
	}
	return w, err
}

// err returns the last error reaching the source, nil when it answered
// last.
func (c *copiedListWatch) err() error {
	if p := c.failure.Load(); p != nil {
		return *p
	}
	return nil
}

// errListSourceFirst makes the reflector list again instead of watching.
var errListSourceFirst = errors.New("serving the copy of the cache server's objects: list the cache server before watching it")

// load reads the copy into a typed list. The list has no resource version:
// a watch after it starts at the source's current state.
func (c *copiedListWatch) load() (runtime.Object, error) {
	data, err := os.ReadFile(c.file)
	if err != nil {
		return nil, err
	}
	list := c.newList()
	if err := json.Unmarshal(data, list); err != nil {
		return nil, fmt.Errorf("corrupt copy %s: %w", c.file, err)
	}
	return list, nil
}

// save writes the informer's objects to the copy, replacing it at once.
func (c *copiedListWatch) save() error {
	objs := c.informer.Indexer().List()
	saved := savedList{Items: make([]json.RawMessage, 0, len(objs))}
	for _, o := range objs {
		raw, err := json.Marshal(o)
		if err != nil {
			return err
		}
		saved.Items = append(saved.Items, raw)
	}
	data, err := json.Marshal(saved)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.file), 0o700); err != nil {
		return err
	}
	tmp := c.file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.file)
}

// keep writes the copy once the informer has listed and again after every
// change, until ctx is done. Changes during a write are coalesced into the
// next one.
func (c *copiedListWatch) keep(ctx context.Context) {
	if wildcardinformer.WaitForSync(ctx, c.informer) != nil {
		return
	}
	c.changed()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.dirty:
			if err := c.save(); err != nil {
				klog.FromContext(ctx).Error(err, "Keeping a copy of the cache server's objects failed", "file", c.file)
			}
		}
	}
}

func (c *copiedListWatch) changed() {
	select {
	case c.dirty <- struct{}{}:
	default:
	}
}

// OnAdd, OnUpdate and OnDelete mark the copy out of date.
func (c *copiedListWatch) OnAdd(interface{})                 { c.changed() }
func (c *copiedListWatch) OnUpdate(interface{}, interface{}) { c.changed() }
func (c *copiedListWatch) OnDelete(interface{})              { c.changed() }
