package globalinformers

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/wildcardinformer"
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
// Objects are streamed to the file one by one: a copy of thousands of
// objects is never held in memory whole.
func (c *copiedListWatch) save() error {
	if err := os.MkdirAll(filepath.Dir(c.file), 0o700); err != nil {
		return err
	}
	tmp := c.file + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	err = writeList(w, enc, c.informer.Indexer().List())
	if err == nil {
		err = w.Flush()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, c.file)
}

// writeList writes objs in the file format of a copy, a list:
// {"items":[...]}.
func writeList(w *bufio.Writer, enc *json.Encoder, objs []interface{}) error {
	if _, err := w.WriteString(`{"items":[`); err != nil {
		return err
	}
	for i, o := range objs {
		if i > 0 {
			if err := w.WriteByte(','); err != nil {
				return err
			}
		}
		if err := enc.Encode(o); err != nil {
			return err
		}
	}
	_, err := w.WriteString("]}")
	return err
}

// keep writes the copy once the informer has listed, then at most every
// copyInterval while it changes, and a last time when ctx is done: a burst
// of thousands of changes costs a few writes, not one each. The copy is
// what a shard starts from when the cache server does not answer; it may
// trail the informer by copyInterval.
func (c *copiedListWatch) keep(ctx context.Context) {
	if wildcardinformer.WaitForSync(ctx, c.informer) != nil {
		return
	}
	c.changed()
	save := func() {
		if err := c.save(); err != nil {
			klog.FromContext(ctx).Error(err, "Keeping a copy of the cache server's objects failed", "file", c.file)
		}
	}
	for {
		select {
		case <-ctx.Done():
			select {
			case <-c.dirty:
				save()
			default:
			}
			return
		case <-c.dirty:
			save()
		}
		select {
		case <-ctx.Done():
		case <-time.After(copyInterval):
		}
	}
}

// copyInterval is the least time between two writes of a copy.
const copyInterval = 10 * time.Second

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
