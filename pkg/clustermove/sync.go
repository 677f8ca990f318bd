package clustermove

import (
	"bytes"
	"context"
	"fmt"
	"slices"
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
	b := &batch{kv: kv}
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
		if err := b.add(ctx, clientv3.OpPut(root+e.Key, string(value)), len(e.Key)+len(value)); err != nil {
			return res, fmt.Errorf("write: %w", err)
		}
		res.Written++
	}
	for _, e := range have {
		if wanted[e.Key] {
			continue
		}
		if err := b.add(ctx, clientv3.OpDelete(root+e.Key), len(e.Key)); err != nil {
			return res, fmt.Errorf("delete: %w", err)
		}
		res.Deleted++
	}
	if err := b.flush(ctx); err != nil {
		return res, fmt.Errorf("write: %w", err)
	}
	if b.revision > 0 {
		res.Revision = b.revision
	}
	return res, nil
}

// Limits of one batch of writes: etcd's default --max-txn-ops, and well
// below its default --max-request-bytes (1.5 MiB).
const (
	batchOps   = 128
	batchBytes = 1 << 20
)

// batch writes operations in transactions of several: one commit (and
// one revision) each instead of one per key, which is most of a copy's
// time. Each transaction is atomic, the whole is not, as one write per
// key was not.
type batch struct {
	kv    clientv3.KV
	ops   []clientv3.Op
	bytes int
	// revision is that of the last transaction.
	revision int64
}

func (b *batch) add(ctx context.Context, op clientv3.Op, size int) error {
	if len(b.ops) > 0 && (len(b.ops) >= batchOps || b.bytes+size > batchBytes) {
		if err := b.flush(ctx); err != nil {
			return err
		}
	}
	b.ops = append(b.ops, op)
	b.bytes += size
	return nil
}

func (b *batch) flush(ctx context.Context) error {
	if len(b.ops) == 0 {
		return nil
	}
	resp, err := b.kv.Txn(ctx).Then(b.ops...).Commit()
	if err != nil {
		return fmt.Errorf("%d keys from %s: %w", len(b.ops), string(b.ops[0].KeyBytes()), err)
	}
	b.revision = resp.Header.Revision
	b.ops, b.bytes = b.ops[:0], 0
	return nil
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
	last := slices.IndexFunc(entries, isLogicalCluster)
	if last >= 0 {
		entries = append(slices.Delete(slices.Clone(entries), last, last+1), entries[last])
	}
	root := normalizePrefix(prefix)
	b := &batch{kv: kv}
	var n int64
	for i, e := range entries {
		if i == len(entries)-1 && last >= 0 {
			// Alone, after everything else is gone.
			if err := b.flush(ctx); err != nil {
				return n, fmt.Errorf("delete: %w", err)
			}
		}
		if err := b.add(ctx, clientv3.OpDelete(root+e.Key), len(e.Key)); err != nil {
			return n, fmt.Errorf("delete: %w", err)
		}
		n++
	}
	if err := b.flush(ctx); err != nil {
		return n, fmt.Errorf("delete: %w", err)
	}
	return n, nil
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
	const writers = 32
	var (
		mu   sync.Mutex
		last int64
		errs = make(chan error, writers)
		wg   sync.WaitGroup
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range writers {
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
