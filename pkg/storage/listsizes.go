package storage

import (
	"sync"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// maxListSizes bounds the entries ListSizes keeps; past it, it starts
// over (entries of deleted logical clusters go then too).
const maxListSizes = 1 << 16

// ListSizes remembers how many objects the last LIST of each resource of
// each logical cluster read from storage, so that API Priority and
// Fairness can price a workspace's LIST by its own objects (pkg/fairness),
// where upstream prices by a resource's count across all workspaces.
type ListSizes struct {
	mu    sync.RWMutex
	sizes map[listSizeKey]int64
}

type listSizeKey struct {
	cluster  logicalcluster.Name
	resource schema.GroupResource
}

// Lists is the process's record: every storage of a shard writes it, and
// logical cluster names are unique across shards, so one is enough.
var Lists = &ListSizes{}

// Observe records n objects read by a LIST of resource in cluster.
func (l *ListSizes) Observe(cluster logicalcluster.Name, resource schema.GroupResource, n int64) {
	key := listSizeKey{cluster, resource}
	l.mu.RLock()
	old, ok := l.sizes[key]
	l.mu.RUnlock()
	if ok && old == n {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sizes == nil || len(l.sizes) >= maxListSizes {
		l.sizes = map[listSizeKey]int64{}
	}
	l.sizes[key] = n
}

// Get is the size of the last LIST of resource in cluster, false when none
// was recorded.
func (l *ListSizes) Get(cluster logicalcluster.Name, resource schema.GroupResource) (int64, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	n, ok := l.sizes[listSizeKey{cluster, resource}]
	return n, ok
}
