package workspace

import (
	"math/rand/v2"
	"sync"
	"time"

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
	// recent are the placements picked here, by shard: until the shard's
	// reported count surely includes them they count towards its limits
	// (see used).
	recent map[string]*recentPlacements
	// now is the clock; tests replace it.
	now func() time.Time
}

// reportSlack is how long before a shard's report a placement may still
// be missing from its count: its LogicalCluster was being created.
const reportSlack = 2 * time.Second

func newShardLoad() *shardLoad {
	return &shardLoad{placed: map[string]string{}, counts: map[string]int{}, assumed: map[string]string{},
		recent: map[string]*recentPlacements{}, now: time.Now}
}

// used returns the logical clusters on a shard for its limits: those it
// last reported (status.used) plus those placed here since, which its
// report may not count yet.
func (l *shardLoad) used(s *corev1alpha1.Shard) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pruneRecentLocked(s)
	n := s.UsedWorkspaces()
	if r := l.recent[s.Name]; r != nil {
		n += int64(len(r.at))
	}
	return n
}

// pruneRecentLocked drops the recent placements on a shard that its last
// report counts: those older than the report by more than reportSlack.
func (l *shardLoad) pruneRecentLocked(s *corev1alpha1.Shard) {
	if r := l.recent[s.Name]; r != nil && s.Status.LastHeartbeatTime != nil {
		r.prune(s.Status.LastHeartbeatTime.Add(-reportSlack))
	}
}

// forgetRecentLocked drops the recent placement of key, wherever it was.
func (l *shardLoad) forgetRecentLocked(key string) {
	for _, r := range l.recent {
		delete(r.at, key)
	}
}

// recentPlacements are the placements on one shard, by Workspace key, and
// in the order they were picked, so that pruning is cheap in a burst.
type recentPlacements struct {
	at    map[string]time.Time
	queue []recentPlacement
}

type recentPlacement struct {
	key string
	at  time.Time
}

func (r *recentPlacements) add(key string, at time.Time) {
	r.at[key] = at
	r.queue = append(r.queue, recentPlacement{key, at})
}

// prune drops the placements picked before t; a key forgotten or picked
// again meanwhile leaves a stale queue entry, skipped here.
func (r *recentPlacements) prune(t time.Time) {
	for len(r.queue) > 0 && r.queue[0].at.Before(t) {
		if at, ok := r.at[r.queue[0].key]; ok && at.Equal(r.queue[0].at) {
			delete(r.at, r.queue[0].key)
		}
		r.queue = r.queue[1:]
	}
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
	l.recordLocked(key, chosen)
	return chosen
}

// recordLocked assumes the workspace of key placed on chosen, and counts
// it as a recent placement there (see used).
func (l *shardLoad) recordLocked(key string, chosen *corev1alpha1.Shard) {
	l.assumed[key] = chosen.Name
	l.forgetRecentLocked(key)
	l.pruneRecentLocked(chosen)
	if l.recent[chosen.Name] == nil {
		l.recent[chosen.Name] = &recentPlacements{at: map[string]time.Time{}}
	}
	l.recent[chosen.Name].add(key, l.now())
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
	l.forgetRecentLocked(key)
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
