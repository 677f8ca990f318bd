package storage

import (
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/kubernetes/pkg/apis/core"
)

// sharedValues are long strings that the objects of every logical cluster
// carry with the same value, kept once: the root CA bundle is in a
// ConfigMap of every namespace, and the watch cache and the informers would
// otherwise each decode their own copy of it for each of them.
var sharedValues = &valueInterner{values: map[string]string{}}

type valueInterner struct {
	mu     sync.RWMutex
	values map[string]string
	// minLen and maxLen bound the length of the registered values, so that
	// most strings are passed over without a lookup.
	minLen, maxLen int
}

// ShareValue makes the ConfigMap data values equal to v, of objects the
// watch caches and informers decode from now on, share the memory of one
// copy of v. For values that many objects carry, such as the CA bundle
// published in every namespace.
func ShareValue(v string) {
	if v == "" {
		return
	}
	sharedValues.add(strings.Clone(v))
}

func (in *valueInterner) add(v string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.values[v] = v
	if in.minLen == 0 || len(v) < in.minLen {
		in.minLen = len(v)
	}
	if len(v) > in.maxLen {
		in.maxLen = len(v)
	}
}

// intern returns the registered string equal to s, if any.
func (in *valueInterner) intern(s string) (string, bool) {
	in.mu.RLock()
	defer in.mu.RUnlock()
	if len(s) < in.minLen || len(s) > in.maxLen {
		return "", false
	}
	v, ok := in.values[s]
	return v, ok
}

// ShareValues makes obj cheaper to keep, in place: its strings, when another
// object kept has equal ones, become that object's (sharedStrings), its
// ConfigMap data values (internal or v1) that equal a value registered with
// ShareValue become the registered string, and its labels and annotations,
// when another object kept has equal ones, become that object's maps. obj
// must be the caller's own, freshly decoded copy, which nobody changes in
// place afterwards: the objects of watch caches and informers.
func ShareValues(obj interface{}) {
	// etcd's watch events come wrapped with the time they were read.
	if w, ok := obj.(interface{ Unwrap() runtime.Object }); ok {
		obj = w.Unwrap()
	}
	shareStrings(obj)
	if m, ok := obj.(metav1.Object); ok {
		if l := m.GetLabels(); len(l) > 0 {
			m.SetLabels(sharedMaps.intern(l))
		}
		if a := m.GetAnnotations(); len(a) > 0 {
			m.SetAnnotations(sharedMaps.intern(a))
		}
	}
	var data map[string]string
	switch cm := obj.(type) {
	case *core.ConfigMap:
		data = cm.Data
	case *corev1.ConfigMap:
		data = cm.Data
	default:
		return
	}
	for k, v := range data {
		if shared, ok := sharedValues.intern(v); ok {
			data[k] = shared
		}
	}
}

// mapInterner shares equal small string maps between the objects the watch
// caches and informers keep, which only read them.
//
// Labels and annotations (sharedMaps): every object of a logical cluster
// carries its kcp.io/cluster annotation, most of them nothing else, and the
// namespaces of every cluster have the same labels: a map of one entry is a
// whole hash map, and a workspace brings several objects, each kept twice
// (watch cache and informer). Past its limit, and when forgotten, it starts
// over, so that the maps of deleted clusters do not stay.
//
// Field sets (sharedFieldSets): each cached object keeps the fields its
// field selectors match on (metadata.name, metadata.namespace, ...) in a map
// of its own, and the objects every logical cluster is created with
// (namespaces default and kube-system, their kube-root-ca.crt and default
// service account, ...) have the same ones in every cluster. The first sets
// seen are mostly those; past its limit it keeps no more, and when forgotten
// (forgetSharedMaps, after a mass deletion) it starts over.
type mapInterner[M ~map[string]string] struct {
	sharedSet[M]
	// maxEntries and maxBytes (negative: any) bound the maps shared: larger
	// ones (the annotations of a Workspace or a LogicalCluster, a
	// last-applied configuration) are seldom equal to another's.
	maxEntries, maxBytes int
}

func newMapInterner[M ~map[string]string](maxEntries, maxBytes, limit int, startOver bool) *mapInterner[M] {
	return &mapInterner[M]{sharedSet: newSharedSet[M](limit, startOver), maxEntries: maxEntries, maxBytes: maxBytes}
}

// sharedSet keeps one value per key of its content, so that equal values can
// be handed out as one: the interners' common part.
type sharedSet[V any] struct {
	mu     sync.RWMutex
	values map[string]V
	// limit bounds the values kept; past it the set starts over if
	// startOver, else keeps no more.
	limit     int
	startOver bool
}

func newSharedSet[V any](limit int, startOver bool) sharedSet[V] {
	return sharedSet[V]{values: map[string]V{}, limit: limit, startOver: startOver}
}

// share returns the value kept under key, or keeps v there and returns it.
func (s *sharedSet[V]) share(key string, v V) V {
	s.mu.RLock()
	kept, ok := s.values[key]
	s.mu.RUnlock()
	if ok {
		return kept
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if kept, ok := s.values[key]; ok {
		return kept
	}
	if len(s.values) >= s.limit {
		if !s.startOver {
			return v
		}
		s.values = map[string]V{}
	}
	s.values[key] = v
	return v
}

// forget starts over: values kept stay with whoever holds them, and are
// freed with the last of them.
func (s *sharedSet[V]) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values = map[string]V{}
}

const (
	sharedMapMaxEntries = 4
	sharedMapMaxBytes   = 1024
	// fieldSetMaxEntries is the largest field set interned: the sets of
	// most resources have two or three entries.
	fieldSetMaxEntries = 4
)

var (
	sharedMaps      = newMapInterner[map[string]string](sharedMapMaxEntries, sharedMapMaxBytes, 1<<17, true)
	sharedFieldSets = newMapInterner[fields.Set](fieldSetMaxEntries, -1, 4096, false)
)

// intern returns a map equal to m that may be shared, or m.
func (in *mapInterner[M]) intern(m M) M {
	if len(m) == 0 || len(m) > in.maxEntries {
		return m
	}
	key, ok := mapKey(m, in.maxBytes)
	if !ok {
		return m
	}
	return in.share(key, m)
}

// forgetSharedMaps makes the interners (maps, field sets, strings) start
// over. The field sets the interner keeps forever otherwise are mostly
// those of the first objects a burst created, each object's own when it has
// a unique name: after the burst is deleted, those few thousand small maps
// would stay scattered over as many heap spans, which Go cannot return.
func forgetSharedMaps() {
	sharedMaps.forget()
	sharedFieldSets.forget()
	sharedStrings.forget()
}

// mapKey is a key of m's content: its entries in key order, each key and
// value followed by a NUL (which neither contains); false if it would be
// longer than maxBytes (negative: no limit).
func mapKey[M ~map[string]string](m M, maxBytes int) (string, bool) {
	keys := make([]string, 0, len(m))
	n := 0
	for k, v := range m {
		keys = append(keys, k)
		n += len(k) + len(v) + 2
	}
	if maxBytes >= 0 && n > maxBytes {
		return "", false
	}
	sort.Strings(keys)
	var b strings.Builder
	b.Grow(n)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(m[k])
		b.WriteByte(0)
	}
	return b.String(), true
}

// sharedAttrs wraps a resource's attribute function so that equal field
// sets of cached objects share one map.
func sharedAttrs(getAttrs storage.AttrFunc) storage.AttrFunc {
	if getAttrs == nil {
		return nil
	}
	return func(obj runtime.Object) (labels.Set, fields.Set, error) {
		l, f, err := getAttrs(obj)
		if err != nil {
			return l, f, err
		}
		return l, sharedFieldSets.intern(f), nil
	}
}
