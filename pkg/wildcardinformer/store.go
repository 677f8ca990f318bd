package wildcardinformer

import (
	"fmt"
	"strings"
	"sync"

	"github.com/google/btree"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
)

// store is the informer's cache.Indexer. It keeps the objects in a B-tree
// ordered by key (cluster|namespace/name), so that the objects of a cluster,
// or of a namespace in it, are one range of the tree: ByCluster and
// ByClusterNamespace cost nothing per object. client-go's indexer keeps a
// set of keys per cluster and index, which was most of what an idle
// workspace cost its informers.
//
// Other indexes (AddIndexers) are kept as client-go keeps them, with a
// value's keys in a short slice until there are many.
type store struct {
	mu       sync.RWMutex
	items    *btree.BTreeG[item]
	indexers cache.Indexers
	indices  map[string]index
	// peaks is, per index, the most values it had since its map was last
	// made anew: Go's maps keep their size when entries are deleted, so
	// after a mass deletion an index would keep a map sized for every value
	// it ever had. It is made anew once at most a quarter is left.
	peaks map[string]int
	rv    string
}

// shrinkAt is the least peak worth making a map anew for.
const shrinkAt = 64

type item struct {
	key string
	obj interface{}
}

func itemLess(a, b item) bool { return a.key < b.key }

// treeDegree is the B-tree's degree: nodes hold up to 2*degree-1 items.
const treeDegree = 16

// index maps an index value to the keys of the objects that have it.
type index map[string]keys

// keys is a set of keys: a slice while it is short, a set beyond. peak is
// the most keys the set held since it was last made anew (as store.peaks).
type keys struct {
	few  []string
	many sets.Set[string]
	peak int
}

// fewKeys is the most keys kept in a slice: finding one there is cheaper
// than hashing it, and a slice of a few costs a fraction of a set.
const fewKeys = 8

func (k *keys) insert(key string) {
	if k.many != nil {
		k.many.Insert(key)
		k.peak = max(k.peak, k.many.Len())
		return
	}
	for _, have := range k.few {
		if have == key {
			return
		}
	}
	if len(k.few) < fewKeys {
		k.few = append(k.few, key)
		return
	}
	k.many = sets.New(k.few...)
	k.many.Insert(key)
	k.few = nil
	k.peak = k.many.Len()
}

func (k *keys) delete(key string) {
	if k.many != nil {
		k.many.Delete(key)
		switch n := k.many.Len(); {
		case n <= fewKeys/2:
			// Not at fewKeys: a set at the edge would flip on every update.
			k.few, k.many, k.peak = sets.List(k.many), nil, 0
		case k.peak >= shrinkAt && n <= k.peak/4:
			k.many, k.peak = sets.New(sets.List(k.many)...), n
		}
		return
	}
	for i, have := range k.few {
		if have == key {
			k.few = append(k.few[:i], k.few[i+1:]...)
			return
		}
	}
}

func (k *keys) len() int {
	if k.many != nil {
		return k.many.Len()
	}
	return len(k.few)
}

func newStore() *store {
	return &store{
		items:    btree.NewG(treeDegree, itemLess),
		indexers: cache.Indexers{},
		indices:  map[string]index{},
		peaks:    map[string]int{},
	}
}

var _ cache.Indexer = &store{}

// prefix is the start of the keys an index value of ByCluster or
// ByClusterNamespace stands for; ok is false for any other index.
func prefix(indexName, value string) (string, bool) {
	switch indexName {
	case ByCluster:
		return value + "|", true
	case ByClusterNamespace:
		return value + "/", true
	}
	return "", false
}

// ascendPrefix calls f with the items whose key starts with p, in order.
func (s *store) ascendPrefix(p string, f func(item) bool) {
	s.items.AscendGreaterOrEqual(item{key: p}, func(it item) bool {
		if !strings.HasPrefix(it.key, p) {
			return false
		}
		return f(it)
	})
}

func (s *store) Add(obj interface{}) error {
	key, err := KeyFunc(obj)
	if err != nil {
		return cache.KeyError{Obj: obj, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, exists := s.items.ReplaceOrInsert(item{key: key, obj: obj})
	var oldObj interface{}
	if exists {
		oldObj = old.obj
	}
	return s.reindex(s.indexers, key, oldObj, obj)
}

func (s *store) Update(obj interface{}) error { return s.Add(obj) }

func (s *store) Delete(obj interface{}) error {
	key, err := KeyFunc(obj)
	if err != nil {
		return cache.KeyError{Obj: obj, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, exists := s.items.Delete(item{key: key}); exists {
		return s.reindex(s.indexers, key, old.obj, nil)
	}
	return nil
}

// reindex moves key from the values of oldObj to those of newObj (nil:
// none) in the indexes named in indexers.
func (s *store) reindex(indexers cache.Indexers, key string, oldObj, newObj interface{}) error {
	for name, fn := range indexers {
		var oldValues, newValues []string
		var err error
		if oldObj != nil {
			if oldValues, err = fn(oldObj); err != nil {
				return fmt.Errorf("unable to calculate an index entry for key %q on index %q: %w", key, name, err)
			}
		}
		if newObj != nil {
			if newValues, err = fn(newObj); err != nil {
				return fmt.Errorf("unable to calculate an index entry for key %q on index %q: %w", key, name, err)
			}
		}
		if len(oldValues) == 1 && len(newValues) == 1 && oldValues[0] == newValues[0] {
			continue // an update that keeps the object's value
		}
		idx := s.indices[name]
		for _, v := range oldValues {
			if k, ok := idx[v]; ok {
				k.delete(key)
				if k.len() == 0 {
					delete(idx, v)
				} else {
					idx[v] = k
				}
			}
		}
		for _, v := range newValues {
			k := idx[v]
			k.insert(key)
			idx[v] = k
		}
		switch n := len(idx); {
		case n > s.peaks[name]:
			s.peaks[name] = n
		case s.peaks[name] >= shrinkAt && n <= s.peaks[name]/4:
			// A new map sized for what is left (maps.Clone keeps the size).
			fresh := make(index, n)
			for v, k := range idx {
				fresh[v] = k
			}
			s.indices[name] = fresh
			s.peaks[name] = n
		}
	}
	return nil
}

func (s *store) List() []interface{} {
	s.mu.RLock()
	defer s.mu.RUnlock()
	list := make([]interface{}, 0, s.items.Len())
	s.items.Ascend(func(it item) bool {
		list = append(list, it.obj)
		return true
	})
	return list
}

func (s *store) ListKeys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	list := make([]string, 0, s.items.Len())
	s.items.Ascend(func(it item) bool {
		list = append(list, it.key)
		return true
	})
	return list
}

func (s *store) Get(obj interface{}) (interface{}, bool, error) {
	key, err := KeyFunc(obj)
	if err != nil {
		return nil, false, cache.KeyError{Obj: obj, Err: err}
	}
	return s.GetByKey(key)
}

func (s *store) GetByKey(key string) (interface{}, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	it, ok := s.items.Get(item{key: key})
	return it.obj, ok, nil
}

// Replace makes the tree and every index anew from list.
func (s *store) Replace(list []interface{}, resourceVersion string) error {
	items := btree.NewG(treeDegree, itemLess)
	for _, obj := range list {
		key, err := KeyFunc(obj)
		if err != nil {
			return cache.KeyError{Obj: obj, Err: err}
		}
		items.ReplaceOrInsert(item{key: key, obj: obj})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = items
	s.rv = resourceVersion
	return s.rebuildIndices()
}

func (s *store) rebuildIndices() error {
	for name := range s.indexers {
		s.indices[name] = index{}
		s.peaks[name] = 0
	}
	var err error
	s.items.Ascend(func(it item) bool {
		err = s.reindex(s.indexers, it.key, nil, it.obj)
		return err == nil
	})
	return err
}

func (s *store) Resync() error { return nil }

func (s *store) LastStoreSyncResourceVersion() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rv
}

func (s *store) Bookmark(rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv = rv
}

func (s *store) Index(indexName string, obj interface{}) ([]interface{}, error) {
	s.mu.RLock()
	fn := s.indexFunc(indexName)
	s.mu.RUnlock()
	if fn == nil {
		return nil, fmt.Errorf("index with name %s does not exist", indexName)
	}
	values, err := fn(obj)
	if err != nil {
		return nil, err
	}
	var objs []interface{}
	seen := sets.New[string]()
	for _, v := range values {
		keys, err := s.IndexKeys(indexName, v)
		if err != nil {
			return nil, err
		}
		for _, key := range keys {
			if seen.Has(key) {
				continue
			}
			seen.Insert(key)
			if obj, ok, _ := s.GetByKey(key); ok {
				objs = append(objs, obj)
			}
		}
	}
	return objs, nil
}

// indexFunc returns the function of an index, nil when there is none.
func (s *store) indexFunc(indexName string) cache.IndexFunc {
	switch indexName {
	case ByCluster:
		return clusterIndex
	case ByClusterNamespace:
		return clusterNamespaceIndex
	}
	return s.indexers[indexName]
}

func (s *store) IndexKeys(indexName, value string) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var list []string
	err := s.each(indexName, value, func(it item) { list = append(list, it.key) })
	return list, err
}

func (s *store) ByIndex(indexName, value string) ([]interface{}, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var list []interface{}
	err := s.each(indexName, value, func(it item) { list = append(list, it.obj) })
	return list, err
}

// each calls f with the items whose value in the index is value: a range
// of the tree for ByCluster and ByClusterNamespace, the index's keys for
// any other. Call with s.mu held.
func (s *store) each(indexName, value string, f func(item)) error {
	if p, ok := prefix(indexName, value); ok {
		s.ascendPrefix(p, func(it item) bool {
			f(it)
			return true
		})
		return nil
	}
	idx, ok := s.indices[indexName]
	if !ok {
		return fmt.Errorf("index with name %s does not exist", indexName)
	}
	k := idx[value]
	visit := func(key string) {
		if it, ok := s.items.Get(item{key: key}); ok {
			f(it)
		}
	}
	if k.many != nil {
		for key := range k.many {
			visit(key)
		}
		return nil
	}
	for _, key := range k.few {
		visit(key)
	}
	return nil
}

func (s *store) ListIndexFuncValues(indexName string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, ok := prefix(indexName, ""); ok {
		fn := s.indexFunc(indexName)
		values := sets.New[string]()
		s.items.Ascend(func(it item) bool {
			if vs, err := fn(it.obj); err == nil {
				values.Insert(vs...)
			}
			return true
		})
		return sets.List(values)
	}
	values := make([]string, 0, len(s.indices[indexName]))
	for v := range s.indices[indexName] {
		values = append(values, v)
	}
	return values
}

func (s *store) GetIndexers() cache.Indexers {
	s.mu.RLock()
	defer s.mu.RUnlock()
	all := cache.Indexers{ByCluster: clusterIndex, ByClusterNamespace: clusterNamespaceIndex}
	for name, fn := range s.indexers {
		all[name] = fn
	}
	return all
}

// AddIndexers adds indexes, filled from the objects already held.
func (s *store) AddIndexers(newIndexers cache.Indexers) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range newIndexers {
		if s.indexFunc(name) != nil {
			return fmt.Errorf("indexer conflict: %v", name)
		}
	}
	for name, fn := range newIndexers {
		s.indexers[name] = fn
		s.indices[name] = index{}
	}
	var err error
	s.items.Ascend(func(it item) bool {
		err = s.reindex(newIndexers, it.key, nil, it.obj)
		return err == nil
	})
	return err
}
