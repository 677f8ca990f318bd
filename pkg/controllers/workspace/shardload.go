package workspace

import (
	"math/rand/v2"
	"sync"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// shardLoad counts the workspaces on each shard as this shard sees them, to
// place a new workspace on the least loaded shard: the Workspaces of the
// informer by the shard they were scheduled to, plus the placements it
// chose whose update the informer does not show yet (so that workers
// scheduling at once spread instead of all picking the same shard).
//
// It counts only the workspaces whose parents live on this shard: every
// shard balances its own children, and a shard that joins receives the new
// workspaces of every other shard until it has caught up with each.
type shardLoad struct {
	mu sync.Mutex
	// placed is the shard of each scheduled Workspace, by informer key.
	placed map[string]string
	// counts are the scheduled Workspaces per shard.
	counts map[string]int
	// assumed are placements not yet seen scheduled, by Workspace key.
	assumed map[string]string
}

func newShardLoad() *shardLoad {
	return &shardLoad{placed: map[string]string{}, counts: map[string]int{}, assumed: map[string]string{}}
}

// pick returns the candidate with the fewest workspaces (a random one of
// the fewest) and assumes the workspace of key placed there until the
// informer shows it scheduled or forget is called.
func (l *shardLoad) pick(key string, candidates []*corev1alpha1.Shard) *corev1alpha1.Shard {
	if len(candidates) == 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.assumed, key)
	load := make(map[string]int, len(candidates))
	for _, s := range candidates {
		load[s.Name] = l.counts[s.Name]
	}
	for _, shard := range l.assumed {
		if _, ok := load[shard]; ok {
			load[shard]++
		}
	}
	var least []*corev1alpha1.Shard
	for _, s := range candidates {
		switch {
		case len(least) == 0 || load[s.Name] < load[least[0].Name]:
			least = []*corev1alpha1.Shard{s}
		case load[s.Name] == load[least[0].Name]:
			least = append(least, s)
		}
	}
	chosen := least[rand.IntN(len(least))]
	l.assumed[key] = chosen.Name
	return chosen
}

// assumedShard returns the shard a workspace was assumed placed on, if any.
func (l *shardLoad) assumedShard(key string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	shard, ok := l.assumed[key]
	return shard, ok
}

// assume records that the workspace of key is placed on shard.
func (l *shardLoad) assume(key, shard string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.assumed[key] = shard
}

// forget drops the assumed placement of a workspace that was not scheduled
// after all.
func (l *shardLoad) forget(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.assumed, key)
}

// set records the shard a Workspace of the informer is scheduled to ("" for
// none or gone).
func (l *shardLoad) set(key, shard string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if shard != "" {
		delete(l.assumed, key)
	}
	prev := l.placed[key]
	if prev == shard {
		return
	}
	if prev != "" {
		if l.counts[prev]--; l.counts[prev] <= 0 {
			delete(l.counts, prev)
		}
		delete(l.placed, key)
	}
	if shard != "" {
		l.counts[shard]++
		l.placed[key] = shard
	}
}

// scheduledShard is the shard a Workspace counts on: the one its placement
// records, from the moment it is recorded.
func scheduledShard(obj interface{}) string {
	ws, ok := obj.(*tenancyv1alpha1.Workspace)
	if !ok {
		return ""
	}
	return shardOf(ws)
}

// OnAdd, OnUpdate and OnDelete follow the Workspaces informer.
func (l *shardLoad) OnAdd(obj interface{}) {
	if key, err := wildcardinformer.KeyFunc(obj); err == nil {
		l.set(key, scheduledShard(obj))
	}
}

func (l *shardLoad) OnUpdate(_, obj interface{}) { l.OnAdd(obj) }

func (l *shardLoad) OnDelete(obj interface{}) {
	if key, err := wildcardinformer.KeyFunc(obj); err == nil {
		l.set(key, "")
		l.forget(key)
	}
}
