package frontproxy

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// handlerStore is the store of one shard's Workspace or LogicalCluster
// reflector. It passes every change to a handler of the index and keeps
// only the keys (cluster|name) of the objects, for the deletions a relist
// implies: the index's maps are the state. A copy of every object, as an
// informer keeps, cost the proxy memory per workspace (the objects and the
// per-cluster indexes of a LogicalCluster), for nothing it reads.
type handlerStore struct {
	handler wildcardinformer.Handler
	// deleted builds the object the handler is told was deleted when a
	// relist no longer has a key.
	deleted func(cluster logicalcluster.Name, name string) interface{}

	mu     sync.Mutex
	keys   sets.Set[string]
	synced bool
}

var _ cache.ReflectorStore = &handlerStore{}

func newHandlerStore(h wildcardinformer.Handler, deleted func(logicalcluster.Name, string) interface{}) *handlerStore {
	return &handlerStore{handler: h, deleted: deleted, keys: sets.New[string]()}
}

// HasSynced tells whether the first list has been handled.
func (s *handlerStore) HasSynced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced
}

func (s *handlerStore) Add(obj interface{}) error {
	key, err := wildcardinformer.KeyFunc(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	known := s.keys.Has(key)
	s.keys.Insert(key)
	s.mu.Unlock()
	if known {
		s.handler.OnUpdate(nil, obj)
	} else {
		s.handler.OnAdd(obj)
	}
	return nil
}

func (s *handlerStore) Update(obj interface{}) error { return s.Add(obj) }

func (s *handlerStore) Delete(obj interface{}) error {
	key, err := wildcardinformer.KeyFunc(obj)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.keys.Delete(key)
	s.mu.Unlock()
	s.handler.OnDelete(obj)
	return nil
}

// Replace handles a (re)list: every listed object as added or updated,
// and every key the list no longer has as deleted.
func (s *handlerStore) Replace(list []interface{}, _ string) error {
	fresh := sets.New[string]()
	for _, obj := range list {
		key, err := wildcardinformer.KeyFunc(obj)
		if err != nil {
			return err
		}
		fresh.Insert(key)
	}
	s.mu.Lock()
	known, gone := s.keys, s.keys.Difference(fresh)
	s.keys = fresh
	s.mu.Unlock()
	for _, obj := range list {
		key, _ := wildcardinformer.KeyFunc(obj)
		if known.Has(key) {
			s.handler.OnUpdate(nil, obj)
		} else {
			s.handler.OnAdd(obj)
		}
	}
	for key := range gone {
		cluster, _, name, _ := wildcardinformer.SplitKey(key)
		s.handler.OnDelete(cache.DeletedFinalStateUnknown{Key: key, Obj: s.deleted(cluster, name)})
	}
	s.mu.Lock()
	s.synced = true
	s.mu.Unlock()
	return nil
}

func (s *handlerStore) Resync() error { return nil }

// deletedWorkspace and deletedLogicalCluster are what the handlers read of
// an object known only by its key.
func deletedWorkspace(parent logicalcluster.Name, name string) interface{} {
	return &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{logicalcluster.AnnotationKey: string(parent)}}}
}

func deletedLogicalCluster(cluster logicalcluster.Name, name string) interface{} {
	return &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{logicalcluster.AnnotationKey: string(cluster)}}}
}

// listOnly keeps a reflector from watch-list mode, whose initial store is
// keyed by namespace/name and would merge objects of different clusters
// (as pkg/wildcardinformer does).
type listOnly struct{ cache.ListerWatcher }

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }
