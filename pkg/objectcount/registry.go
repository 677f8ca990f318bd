// Package objectcount counts the objects of each logical cluster of a shard
// for kcp's total object count limit (core.kcp.io/max-total-objects,
// --logical-cluster-total-object-limit): a periodic keys-only scan of etcd
// gives the counts, and admission adds and takes away what it admits
// between scans. Every scan replaces the counts, so drift from writes that
// failed after admission lasts one interval at most.
package objectcount

import (
	"strconv"
	"sync"
	"sync/atomic"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Registry holds the counts of a shard's logical clusters.
type Registry struct {
	defaultLimit int64
	active       atomic.Bool

	mu    sync.RWMutex
	base  map[logicalcluster.Name]int64
	delta map[logicalcluster.Name]*atomic.Int64
}

// NewRegistry returns a registry with the shard's default limit (<= 0: none).
func NewRegistry(defaultLimit int64) *Registry {
	return &Registry{defaultLimit: defaultLimit, base: map[logicalcluster.Name]int64{}, delta: map[logicalcluster.Name]*atomic.Int64{}}
}

// Active tells whether any limit may apply on the shard: admission does
// nothing otherwise. The scanner sets it.
func (r *Registry) Active() bool { return r.active.Load() }

// Count is the objects of cluster as last scanned plus those admitted since.
func (r *Registry) Count(cluster logicalcluster.Name) int64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n := r.base[cluster]
	if d, ok := r.delta[cluster]; ok {
		n += d.Load()
	}
	return n
}

// Add records n objects created (n > 0) or deleted (n < 0) in cluster.
func (r *Registry) Add(cluster logicalcluster.Name, n int64) {
	r.mu.RLock()
	d, ok := r.delta[cluster]
	r.mu.RUnlock()
	if !ok {
		r.mu.Lock()
		if d, ok = r.delta[cluster]; !ok {
			d = &atomic.Int64{}
			r.delta[cluster] = d
		}
		r.mu.Unlock()
	}
	d.Add(n)
}

// replace installs the counts of a completed scan.
func (r *Registry) replace(counts map[logicalcluster.Name]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.base = counts
	r.delta = map[logicalcluster.Name]*atomic.Int64{}
}

// LimitFor is the limit of a logical cluster with the given annotations:
// its core.kcp.io/max-total-objects (<= 0: none), else the shard's
// default, which root and the system clusters are spared (the shard writes
// their bootstrap content), as in kcp.
func (r *Registry) LimitFor(cluster logicalcluster.Name, annotations map[string]string) int64 {
	if v, ok := annotations[corev1alpha1.MaxTotalObjectsAnnotationKey]; ok {
		if limit, err := strconv.ParseInt(v, 10, 64); err == nil {
			return limit
		}
	}
	if cluster == logicalcluster.Root || cluster.IsSystem() {
		return 0
	}
	return r.defaultLimit
}
