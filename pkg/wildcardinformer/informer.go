// Package wildcardinformer keeps an in-memory copy of one resource across all
// logical clusters of a shard, fed by a single wildcard list/watch.
//
// client-go's shared informers key objects by namespace/name, which collides
// across logical clusters. This informer keys them by cluster|namespace/name
// and indexes them by cluster, so one instance serves every logical cluster:
// no per-cluster goroutines or watches.
package wildcardinformer

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	kstorage "github.com/shardplane/shardplane/pkg/storage"
)

const (
	// ByCluster indexes objects by their logical cluster.
	ByCluster = "cluster"
	// ByClusterNamespace indexes objects by cluster and namespace.
	ByClusterNamespace = "cluster-namespace"
)

// Key returns the store key of an object: cluster|namespace/name, or
// cluster|name for cluster-scoped objects.
func Key(cluster logicalcluster.Name, namespace, name string) string {
	if namespace == "" {
		return string(cluster) + "|" + name
	}
	return string(cluster) + "|" + namespace + "/" + name
}

// SplitKey parses a key made by Key.
func SplitKey(key string) (cluster logicalcluster.Name, namespace, name string, ok bool) {
	i := strings.IndexByte(key, '|')
	if i < 0 {
		return "", "", "", false
	}
	cluster, rest := logicalcluster.Name(key[:i]), key[i+1:]
	if j := strings.IndexByte(rest, '/'); j >= 0 {
		return cluster, rest[:j], rest[j+1:], true
	}
	return cluster, "", rest, true
}

// KeyFunc computes Key from an object's kcp.io/cluster annotation.
func KeyFunc(obj interface{}) (string, error) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Key, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	cluster, ok := logicalcluster.ObjectCluster(m.GetAnnotations())
	if !ok {
		return "", fmt.Errorf("object %s/%s has no %s annotation", m.GetNamespace(), m.GetName(), logicalcluster.AnnotationKey)
	}
	return Key(cluster, m.GetNamespace(), m.GetName()), nil
}

func clusterIndex(obj interface{}) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	cluster, _ := logicalcluster.ObjectCluster(m.GetAnnotations())
	return []string{string(cluster)}, nil
}

// clusterNamespaceIndex indexes namespaced objects only: List reads
// cluster-scoped ones from ByCluster, and a set per cluster in both indexes
// would be memory every cluster pays in every informer.
func clusterNamespaceIndex(obj interface{}) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if m.GetNamespace() == "" {
		return nil, nil
	}
	cluster, _ := logicalcluster.ObjectCluster(m.GetAnnotations())
	return []string{string(cluster) + "|" + m.GetNamespace()}, nil
}

// Handler receives changes. It is called synchronously from the informer's
// goroutine, so it must be quick (typically: enqueue a key).
type Handler interface {
	OnAdd(obj interface{})
	OnUpdate(oldObj, newObj interface{})
	OnDelete(obj interface{})
}

// Informer is a reflector feeding a cluster-aware indexer.
type Informer struct {
	name      string
	indexer   cache.Indexer
	reflector *cache.Reflector
	// inProcess tells that the objects come from InProcess and share their
	// maps and slices with the watch cache.
	inProcess bool

	mu       sync.RWMutex
	handlers []Handler
	synced   bool
}

// New returns an informer over lw, whose list and watch must span all
// logical clusters (a client whose host ends in /clusters/*, or InProcess).
func New(lw cache.ListerWatcher, example runtime.Object, name string) *Informer {
	return newInformer(lw, example, name, nil)
}

// RemoteBackoff retries an informer of another process (the cache server)
// at most every 4 s, where client-go's default waits up to 30 s: a shard
// catches up within seconds once the cache server is back.
var RemoteBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: 8, Cap: 4 * time.Second}

// NewRemote is New for a list and watch of another process, retried with
// RemoteBackoff.
func NewRemote(lw cache.ListerWatcher, example runtime.Object, name string) *Informer {
	backoff := RemoteBackoff
	return newInformer(lw, example, name, &backoff)
}

func newInformer(lw cache.ListerWatcher, example runtime.Object, name string, backoff *wait.Backoff) *Informer {
	_, inProcess := lw.(*inProcess)
	i := &Informer{
		name:      name,
		indexer:   newStore(),
		inProcess: inProcess,
	}
	i.reflector = cache.NewReflectorWithOptions(listOnly{ListerWatcher: lw, withContext: cache.ToListerWatcherWithContext(lw)},
		example, (*notifyingStore)(i), cache.ReflectorOptions{Name: name, Backoff: backoff})
	return i
}

// listOnly keeps the reflector from watch-list mode, whose initial store is
// keyed by namespace/name and would merge objects of different clusters. It
// passes the reflector's context on, which ends the list or watch with it.
type listOnly struct {
	cache.ListerWatcher
	withContext cache.ListerWatcherWithContext
}

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

func (l listOnly) ListWithContext(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
	return l.withContext.ListWithContext(ctx, options)
}

func (l listOnly) WatchWithContext(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	return l.withContext.WatchWithContext(ctx, options)
}

// AddHandler registers h for all future changes. Register before Run.
func (i *Informer) AddHandler(h Handler) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.handlers = append(i.handlers, h)
}

// AddIndexers adds indexes. It may be called after Run: the indexer fills a
// new index from the objects it already holds.
func (i *Informer) AddIndexers(indexers cache.Indexers) error { return i.indexer.AddIndexers(indexers) }

// ByIndex returns the objects whose index value is v.
func (i *Informer) ByIndex(index, v string) ([]interface{}, error) {
	return i.indexer.ByIndex(index, v)
}

// Name returns the informer's name (as in logs and readiness checks).
func (i *Informer) Name() string { return i.name }

// Run lists and watches until ctx is done.
func (i *Informer) Run(ctx context.Context) { i.reflector.RunWithContext(ctx) }

// HasSynced tells whether the first list has been stored.
func (i *Informer) HasSynced() bool {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.synced
}

// Get returns the object cluster|namespace/name.
func (i *Informer) Get(cluster logicalcluster.Name, namespace, name string) (interface{}, bool, error) {
	return i.indexer.GetByKey(Key(cluster, namespace, name))
}

// List returns the objects of one cluster, or of one namespace in it when
// namespace is not empty.
func (i *Informer) List(cluster logicalcluster.Name, namespace string) ([]interface{}, error) {
	if namespace == "" {
		return i.indexer.ByIndex(ByCluster, string(cluster))
	}
	return i.indexer.ByIndex(ByClusterNamespace, string(cluster)+"|"+namespace)
}

// Indexer exposes the underlying store, e.g. for counting.
func (i *Informer) Indexer() cache.Indexer { return i.indexer }

func (i *Informer) snapshotHandlers() []Handler {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.handlers
}

// notifyingStore is the reflector's store: it updates the indexer and tells
// the handlers.
type notifyingStore Informer

// dropManagedFields removes what no reader of an informer uses and every
// object would otherwise carry in memory, as kube-controller-manager's
// informers do. obj is this store's own struct (decoded for it, or a
// struct InProcess handed out), so the field is set in place; the entries
// it pointed to are not touched. An update sent back from an informer's
// object keeps the stored managedFields: the API server keeps them when a
// request has none.
func dropManagedFields(obj interface{}) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
}

// trim makes obj cheaper to keep: no managedFields, and values many objects
// carry (the CA bundle of every namespace's kube-root-ca.crt) shared with
// the watch cache's copies. InProcess shares them itself: the maps of a
// listed object are the watch cache's, which must not be written.
func (i *Informer) trim(obj interface{}) {
	dropManagedFields(obj)
	if !i.inProcess {
		kstorage.ShareValues(obj)
	}
}

func (s *notifyingStore) Add(obj interface{}) error {
	(*Informer)(s).trim(obj)
	old, exists, err := s.indexer.Get(obj)
	if err != nil {
		return err
	}
	if err := s.indexer.Add(obj); err != nil {
		return err
	}
	for _, h := range (*Informer)(s).snapshotHandlers() {
		if exists {
			h.OnUpdate(old, obj)
		} else {
			h.OnAdd(obj)
		}
	}
	return nil
}

func (s *notifyingStore) Update(obj interface{}) error { return s.Add(obj) }

func (s *notifyingStore) Delete(obj interface{}) error {
	if err := s.indexer.Delete(obj); err != nil {
		return err
	}
	for _, h := range (*Informer)(s).snapshotHandlers() {
		h.OnDelete(obj)
	}
	return nil
}

func (s *notifyingStore) Replace(list []interface{}, _ string) error {
	handlers := (*Informer)(s).snapshotHandlers()
	fresh := make(map[string]struct{}, len(list))
	for _, obj := range list {
		(*Informer)(s).trim(obj)
		key, err := KeyFunc(obj)
		if err != nil {
			return err
		}
		fresh[key] = struct{}{}
	}
	var gone []interface{}
	for _, key := range s.indexer.ListKeys() {
		if _, ok := fresh[key]; !ok {
			if obj, exists, _ := s.indexer.GetByKey(key); exists {
				gone = append(gone, cache.DeletedFinalStateUnknown{Key: key, Obj: obj})
			}
		}
	}
	type change struct{ old, obj interface{} }
	var changes []change
	if len(handlers) > 0 {
		for _, obj := range list {
			old, _, _ := s.indexer.Get(obj)
			changes = append(changes, change{old: old, obj: obj})
		}
	}
	if err := s.indexer.Replace(list, ""); err != nil {
		return err
	}
	for _, c := range changes {
		for _, h := range handlers {
			if c.old != nil {
				h.OnUpdate(c.old, c.obj)
			} else {
				h.OnAdd(c.obj)
			}
		}
	}
	for _, obj := range gone {
		for _, h := range handlers {
			h.OnDelete(obj)
		}
	}
	for _, h := range handlers {
		if r, ok := h.(ReplaceHandler); ok {
			r.OnReplace()
		}
	}
	s.mu.Lock()
	s.synced = true
	s.mu.Unlock()
	return nil
}

// ReplaceHandler is a Handler told when the informer listed afresh (after
// the adds, updates and deletes the new list implied): its source may have
// lost what it held without the informer ever having seen it.
type ReplaceHandler interface {
	Handler
	OnReplace()
}

func (s *notifyingStore) Resync() error { return nil }
