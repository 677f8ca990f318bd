package replication

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// BenchmarkInitialReplication measures how fast a shard that starts with
// 2,000 APIExports in 200 workspaces replicates them all into an empty
// cache server with 8 workers (each iteration is a new shard name). The
// cache server and its etcd run in the same process.
func BenchmarkInitialReplication(b *testing.B) {
	const objects, clusters = 2000, 200
	cache := startCache(b)
	cfg := rest.CopyConfig(cache.writer)
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		s := newTestShard(fmt.Sprintf("bench-%d", i))
		s.workers = 8
		for j := range objects {
			cluster := logicalcluster.Name(fmt.Sprintf("c%d", j%clusters))
			s.exports.set(cluster, newExport(fmt.Sprintf("e%d", j), types.UID(fmt.Sprintf("%d-%d", i, j)), "example.io"))
		}
		cfg.Host = cacheclient.URL(cache.url, cacheclient.Shard(s.name), logicalcluster.Wildcard)
		d, err := dynamic.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		_, stop := s.start(b, cache)
		for {
			list, err := d.Resource(exportKind.Resource).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if len(list.Items) == objects {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		total += time.Since(start)
		stop()
	}
	b.ReportMetric(float64(objects)/total.Seconds()*float64(b.N), "objects/s")
}
