package workspace

import (
	"fmt"
	"math/rand/v2"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
)

// pickPowerOfTwo is the alternative to shardLoad.pick that issue 42 asked
// to measure: of two random candidates, the less loaded. It is kept here,
// not in the scheduler, because the benchmark below favours least loaded.
func (l *shardLoad) pickPowerOfTwo(key string, candidates []*corev1alpha1.Shard) *corev1alpha1.Shard {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.assumed, key)
	load := func(s *corev1alpha1.Shard) int {
		n := l.counts[s.Name]
		for _, shard := range l.assumed {
			if shard == s.Name {
				n++
			}
		}
		return n
	}
	a, b := candidates[rand.IntN(len(candidates))], candidates[rand.IntN(len(candidates))]
	chosen := a
	if load(b) < load(a) {
		chosen = b
	}
	l.recordLocked(key, chosen)
	return chosen
}

// BenchmarkPickShard places workspaces one by one on shards that start
// unevenly filled, the informer confirming every placement before the
// next, and reports the cost of a pick and how uneven the shards end:
// spread-% is (most - fewest) / mean of the workspaces per shard.
func BenchmarkPickShard(b *testing.B) {
	for _, shards := range []int{4, 16} {
		for _, policy := range []string{"least-loaded", "power-of-two"} {
			b.Run(fmt.Sprintf("%s/shards=%d", policy, shards), func(b *testing.B) {
				var candidates []*corev1alpha1.Shard
				l := newShardLoad()
				reported := metav1.Now()
				for i := range shards {
					name := fmt.Sprintf("shard-%d", i)
					candidates = append(candidates, &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: name},
						Status: corev1alpha1.ShardStatus{LastHeartbeatTime: &reported}})
					// Uneven start: shard i holds 50*i workspaces.
					for j := range 50 * i {
						l.set(fmt.Sprintf("pre|%s-%d", name, j), name)
					}
				}
				pick := l.pick
				if policy == "power-of-two" {
					pick = l.pickPowerOfTwo
				}
				b.ResetTimer()
				for i := range b.N {
					key := fmt.Sprintf("root|w%d", i)
					chosen := pick(key, candidates)
					l.OnUpdate(nil, &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d", i),
						Annotations: map[string]string{"kcp.io/cluster": "root", corev1alpha1.ShardAnnotationKey: chosen.Name}}})
				}
				b.StopTimer()
				most, fewest, total := 0, int(^uint(0)>>1), 0
				for _, s := range candidates {
					n := l.counts[s.Name]
					most, fewest, total = max(most, n), min(fewest, n), total+n
				}
				b.ReportMetric(100*float64(most-fewest)/(float64(total)/float64(shards)), "spread-%")
			})
		}
	}
}
