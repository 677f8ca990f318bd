package objectcount

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// scanPage is the number of keys one etcd request of a scan reads.
const scanPage = 10000

// Cluster is what the scanner needs of a logical cluster the shard hosts.
type Cluster struct {
	Name        logicalcluster.Name
	Annotations map[string]string
}

// Scanner counts, every interval, the objects of each logical cluster in
// etcd, while any limit applies on the shard.
type Scanner struct {
	KV clientv3.KV
	// Prefix is the storage prefix (--etcd-prefix) of the shard's keys,
	// <prefix>/<group>/<resource>/[<identity>/]<cluster>/...
	Prefix   string
	Interval time.Duration
	Registry *Registry
	// Clusters lists the logical clusters the shard hosts.
	Clusters func() ([]Cluster, error)
}

// Run scans until ctx ends.
func (s *Scanner) Run(ctx context.Context) {
	interval := s.Interval
	if interval <= 0 {
		interval = time.Minute
	}
	wait.UntilWithContext(ctx, s.scan, interval)
}

func (s *Scanner) scan(ctx context.Context) {
	logger := klog.FromContext(ctx)
	clusters, err := s.Clusters()
	if err != nil {
		logger.Error(err, "Listing logical clusters, object counts not scanned")
		return
	}
	known := make(map[string]bool, len(clusters))
	limited := s.Registry.defaultLimit > 0
	for _, c := range clusters {
		known[string(c.Name)] = true
		limited = limited || s.Registry.LimitFor(c.Name, c.Annotations) > 0
	}
	s.Registry.active.Store(limited)
	if !limited {
		return
	}
	counts, err := s.count(ctx, known)
	if err != nil {
		logger.Error(err, "Scanning etcd, object counts kept as they were")
		return
	}
	s.Registry.replace(counts)
}

// count reads every key once, without values, and counts it for the
// cluster named by its first segment that is a known or system cluster.
// Events are not counted, as admission does not count them.
func (s *Scanner) count(ctx context.Context, known map[string]bool) (map[logicalcluster.Name]int64, error) {
	prefix := strings.TrimSuffix(s.Prefix, "/") + "/"
	counts := map[logicalcluster.Name]int64{}
	key, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
	for {
		resp, err := s.KV.Get(ctx, key, clientv3.WithRange(end), clientv3.WithKeysOnly(), clientv3.WithLimit(scanPage))
		if err != nil {
			return nil, fmt.Errorf("listing etcd keys: %w", err)
		}
		for _, kv := range resp.Kvs {
			rest := strings.TrimPrefix(string(kv.Key), prefix)
			if strings.HasPrefix(rest, "core/events/") {
				continue
			}
			if cluster, ok := clusterOf(rest, known); ok {
				counts[cluster]++
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return counts, nil
		}
		key = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// clusterOf finds the logical cluster of a key below the storage prefix:
// the first segment after <group>/<resource> that is a known cluster or a
// system one (an identity hash of a bound resource comes before it).
func clusterOf(key string, known map[string]bool) (logicalcluster.Name, bool) {
	segments := strings.Split(key, "/")
	for i := 2; i < len(segments)-1; i++ {
		if known[segments[i]] || logicalcluster.Name(segments[i]).IsSystem() {
			return logicalcluster.Name(segments[i]), true
		}
	}
	return "", false
}
