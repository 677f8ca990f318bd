package clustermove

import (
	"bytes"
	"context"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// SyncResult counts what Sync changed on the destination.
type SyncResult struct {
	Written int64
	Deleted int64
}

// Sync makes the destination's etcd (below prefix) hold exactly want of
// cluster: it writes the entries that are missing or differ and deletes
// the cluster's keys that want lacks. rewrite, when not nil, may change
// an entry's value before it is compared and written (the LogicalCluster
// is marked while it is not the one to serve).
func Sync(ctx context.Context, kv clientv3.KV, prefix string, cluster logicalcluster.Name, want []Entry, rewrite func(Entry) ([]byte, error)) (SyncResult, error) {
	have, _, err := DumpAll(ctx, kv, prefix, cluster)
	if err != nil {
		return SyncResult{}, fmt.Errorf("read the destination: %w", err)
	}
	current := make(map[string][]byte, len(have))
	for _, e := range have {
		current[e.Key] = e.Value
	}
	root := normalizePrefix(prefix)
	var res SyncResult
	wanted := make(map[string]bool, len(want))
	for _, e := range want {
		wanted[e.Key] = true
		value := e.Value
		if rewrite != nil {
			if value, err = rewrite(e); err != nil {
				return res, err
			}
		}
		if v, ok := current[e.Key]; ok && bytes.Equal(v, value) {
			continue
		}
		if _, err := kv.Put(ctx, root+e.Key, string(value)); err != nil {
			return res, fmt.Errorf("write %s: %w", e.Key, err)
		}
		res.Written++
	}
	for _, e := range have {
		if wanted[e.Key] {
			continue
		}
		if _, err := kv.Delete(ctx, root+e.Key); err != nil {
			return res, fmt.Errorf("delete %s: %w", e.Key, err)
		}
		res.Deleted++
	}
	return res, nil
}

// DeleteAll removes every object of cluster below prefix: the origin's
// clean-up once the destination serves the cluster.
func DeleteAll(ctx context.Context, kv clientv3.KV, prefix string, cluster logicalcluster.Name) (int64, error) {
	entries, _, err := DumpAll(ctx, kv, prefix, cluster)
	if err != nil {
		return 0, err
	}
	root := normalizePrefix(prefix)
	var n int64
	for _, e := range entries {
		if _, err := kv.Delete(ctx, root+e.Key); err != nil {
			return n, fmt.Errorf("delete %s: %w", e.Key, err)
		}
		n++
	}
	return n, nil
}
