package main

import (
	"context"
	"fmt"
	"time"

	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// goneTimeout bounds the wait for one deleted workspace to disappear.
const goneTimeout = 5 * time.Minute

// deleteNames deletes workspaces in root at the bench's concurrency and
// returns once every one of them is gone (its deletion seen on the
// workspace watch), with the time from the first delete.
func (b *bench) deleteNames(ctx context.Context, names []string) (time.Duration, error) {
	gone := make([]chan struct{}, len(names))
	for i, n := range names {
		gone[i] = b.expectGone(logicalcluster.Root, n)
	}
	start := time.Now()
	if _, err := timeEach(ctx, b.concurrency, names, func(name string) (time.Duration, error) {
		if err := b.kcp.Delete(ctx, logicalcluster.Root, kcpclient.Workspaces, name, nil); err != nil {
			return 0, fmt.Errorf("delete workspace root:%s: %w", name, err)
		}
		return 0, nil
	}); err != nil {
		return 0, err
	}
	timeout := time.After(goneTimeout)
	for i, ch := range gone {
		select {
		case <-ch:
		case <-timeout:
			return 0, fmt.Errorf("workspace root:%s not gone %s after its delete", names[i], goneTimeout)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	d := time.Since(start)
	b.mu.Lock()
	b.created -= len(names)
	b.mu.Unlock()
	return d, nil
}

// deleteTimed creates n empty workspaces under root and times deleting
// them all (delete_1k_seconds), with every other workspace still present.
func (b *bench) deleteTimed(ctx context.Context, r *results, n int) error {
	names := b.names("del", n)
	if _, _, err := b.createFlat(ctx, names); err != nil {
		return err
	}
	d, err := b.deleteNames(ctx, names)
	if err != nil {
		return err
	}
	r.DeleteWorkspaces, r.Delete1kSeconds = n, d.Seconds()
	return nil
}

// churn creates and deletes o.churnWorkspaces workspaces o.churnCycles
// times and reads memory after each cycle's deletion has settled: it
// should not grow from cycle to cycle.
func (b *bench) churn(ctx context.Context, t *target, r *results, o options, step func(string)) error {
	r.ChurnWorkspaces = o.churnWorkspaces
	for c := 0; c < o.churnCycles; c++ {
		names := b.names(fmt.Sprintf("churn%d", c), o.churnWorkspaces)
		if _, _, err := b.createFlat(ctx, names); err != nil {
			return err
		}
		d, err := b.deleteNames(ctx, names)
		if err != nil {
			return err
		}
		if err := sleep(ctx, o.churnSettle); err != nil {
			return err
		}
		rss, heap, live := t.memoryLive()
		r.ChurnDeleteSeconds = append(r.ChurnDeleteSeconds, d.Seconds())
		r.ChurnRSSBytes = append(r.ChurnRSSBytes, rss)
		r.ChurnHeapBytes = append(r.ChurnHeapBytes, heap)
		r.ChurnLiveHeapBytes = append(r.ChurnLiveHeapBytes, live)
		step(fmt.Sprintf("churn cycle %d: deleted in %.1f s, RSS %.1f MiB, heap %.1f MiB", c+1, d.Seconds(), float64(rss)/(1<<20), float64(heap)/(1<<20)))
	}
	return nil
}
