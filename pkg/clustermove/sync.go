package clustermove

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	kstorage "github.com/shardplane/shardplane/pkg/storage"
)

// SyncResult counts what Sync changed on the destination.
type SyncResult struct {
	Written int64
	Deleted int64
	// Revision is the destination's etcd revision right after the sync:
	// DumpAllAt there reads exactly what it left, whatever came after.
	Revision int64
}

// Sync makes the destination's etcd (below prefix) hold exactly want of
// cluster: it writes the entries that are missing or differ and deletes
// the cluster's keys that want lacks. rewrite, when not nil, may change
// an entry's value before it is compared and written (the LogicalCluster
// is marked while it is not the one to serve).
func Sync(ctx context.Context, kv clientv3.KV, prefix string, cluster logicalcluster.Name, want []Entry, rewrite func(Entry) ([]byte, error)) (SyncResult, error) {
	have, readAt, err := DumpAll(ctx, kv, prefix, cluster)
	if err != nil {
		return SyncResult{}, fmt.Errorf("read the destination: %w", err)
	}
	current := make(map[string][]byte, len(have))
	for _, e := range have {
		current[e.Key] = e.Value
	}
	root := normalizePrefix(prefix)
	res := SyncResult{Revision: readAt}
	var ops []clientv3.Op
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
		ops = append(ops, clientv3.OpPut(root+e.Key, string(value)))
		res.Written++
	}
	for _, e := range have {
		if !wanted[e.Key] {
			ops = append(ops, clientv3.OpDelete(root+e.Key))
			res.Deleted++
		}
	}
	revision, err := writeConcurrently(ctx, kv, ops)
	if err != nil {
		return res, err
	}
	res.Revision = max(res.Revision, revision)
	return res, nil
}

// writers is how many of a copy's writes are in flight at once.
const writers = 64

// writeConcurrently applies ops, each on its own, several at a time, and
// returns the highest revision they were written at. etcd commits writes
// in flight together, so that a copy does not wait for one commit per
// key; each key still gets a revision of its own, as the API server's
// writes do (a watch resumes from an object's resource version, and
// would skip the rest of a transaction of several objects).
func writeConcurrently(ctx context.Context, kv clientv3.KV, ops []clientv3.Op) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		revision int64
		firstErr error
		wg       sync.WaitGroup
	)
	next := make(chan clientv3.Op)
	for range min(writers, len(ops)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for op := range next {
				resp, err := kv.Do(ctx, op)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("write %s: %w", op.KeyBytes(), err)
					cancel()
				}
				if err == nil {
					var rev int64
					if p := resp.Put(); p != nil {
						rev = p.Header.Revision
					} else if d := resp.Del(); d != nil {
						rev = d.Header.Revision
					}
					revision = max(revision, rev)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, op := range ops {
		select {
		case next <- op:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	return revision, firstErr
}

// DeleteAll removes every object of cluster below prefix: the origin's
// clean-up once the destination serves the cluster, the destination's of
// a failed move. The LogicalCluster goes last: a shard killed midway
// finds the rest by it (its marks hold the cluster, its claim tells the
// move to clean on).
func DeleteAll(ctx context.Context, kv clientv3.KV, prefix string, cluster logicalcluster.Name) (int64, error) {
	entries, _, err := DumpAll(ctx, kv, prefix, cluster)
	if err != nil {
		return 0, err
	}
	root := normalizePrefix(prefix)
	ops := make([]clientv3.Op, 0, len(entries))
	var lc []clientv3.Op
	for _, e := range entries {
		if isLogicalCluster(e) {
			lc = append(lc, clientv3.OpDelete(root+e.Key))
			continue
		}
		ops = append(ops, clientv3.OpDelete(root+e.Key))
	}
	if _, err := writeConcurrently(ctx, kv, ops); err != nil {
		return 0, fmt.Errorf("delete: %w", err)
	}
	// Alone, after everything else is gone.
	if _, err := writeConcurrently(ctx, kv, lc); err != nil {
		return int64(len(ops)), fmt.Errorf("delete: %w", err)
	}
	return int64(len(entries)), nil
}

// isLogicalCluster tells whether an entry is its cluster's LogicalCluster.
func isLogicalCluster(e Entry) bool {
	k, ok := kstorage.SplitClusterKey(e.Key)
	return ok && k.Resource == kstorage.ResourcePrefix(corev1alpha1.Resource("logicalclusters")) && k.Object == corev1alpha1.LogicalClusterName
}

// revisionKey is written to move a destination's etcd revision forward;
// it belongs to no logical cluster.
const revisionKey = "shardplane.io/migration-revision"

// AdvanceRevision writes to a key of no cluster below prefix until the
// etcd revision exceeds above, and returns it: resource versions the
// destination issues afterwards are then above every one the origin
// issued, so that a watch resuming from one of the origin's is told apart.
func AdvanceRevision(ctx context.Context, kv clientv3.KV, prefix string, above int64) (int64, error) {
	key := normalizePrefix(prefix) + revisionKey
	// Often there already, when the revision was advanced before.
	if resp, err := kv.Get(ctx, key, clientv3.WithCountOnly()); err != nil {
		return 0, fmt.Errorf("advance the revision: %w", err)
	} else if resp.Header.Revision > above {
		return resp.Header.Revision, nil
	}
	// Puts of the revision key in flight at once.
	const putters = 32
	var (
		mu   sync.Mutex
		last int64
		errs = make(chan error, putters)
		wg   sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range putters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				resp, err := kv.Put(ctx, key, "")
				if err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					cancel()
					return
				}
				mu.Lock()
				if resp.Header.Revision > last {
					last = resp.Header.Revision
				}
				done := last > above
				mu.Unlock()
				if done {
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return 0, fmt.Errorf("advance the revision: %w", err)
	default:
	}
	return last, nil
}
