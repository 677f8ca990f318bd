package clustermove

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	kstorage "github.com/shardplane/shardplane/pkg/storage"
)

// Entry is one stored object: its key relative to the etcd prefix (no
// leading slash) and its value as stored.
type Entry struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// Page is one part of a dump.
type Page struct {
	// Entries are the cluster's objects in key order.
	Entries []Entry `json:"entries,omitempty"`
	// Continue is where the next page starts; empty on the last page.
	Continue string `json:"continue,omitempty"`
	// Revision is the etcd revision the whole dump reads at.
	Revision int64 `json:"revision"`
	// Scanned counts the keys read for this page, the cluster's and
	// others'.
	Scanned int64 `json:"scanned"`
}

// DefaultPageKeys is how many keys a page scans when the caller sets no
// limit.
const DefaultPageKeys = 2000

// Dump reads one page of cluster's objects below prefix (the etcd prefix,
// e.g. "/registry"). The first call passes revision 0 and continueFrom "";
// the next ones pass the page's Revision and Continue, so that every page
// reads the same snapshot. scanKeys bounds the keys read for a page (0
// for DefaultPageKeys); a page may hold no entries and still continue.
// A compacted revision is an error: start again from the beginning.
func Dump(ctx context.Context, kv clientv3.KV, prefix string, cluster logicalcluster.Name, revision int64, continueFrom string, scanKeys int64) (Page, error) {
	if cluster == "" || cluster.IsWildcard() {
		return Page{}, fmt.Errorf("dump: no logical cluster")
	}
	if scanKeys <= 0 {
		scanKeys = DefaultPageKeys
	}
	root := normalizePrefix(prefix)
	from := root
	if continueFrom != "" {
		if !strings.HasPrefix(continueFrom, root) {
			return Page{}, fmt.Errorf("dump: continue token %q is not below %q", continueFrom, root)
		}
		from = continueFrom
	}
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(root)), clientv3.WithLimit(scanKeys)}
	if revision > 0 {
		opts = append(opts, clientv3.WithRev(revision))
	}
	resp, err := kv.Get(ctx, from, opts...)
	if err != nil {
		return Page{}, fmt.Errorf("dump %s at revision %d: %w", cluster, revision, err)
	}
	page := Page{Revision: resp.Header.Revision, Scanned: int64(len(resp.Kvs))}
	if revision > 0 {
		page.Revision = revision
	}
	for _, kv := range resp.Kvs {
		rel := strings.TrimPrefix(string(kv.Key), root)
		if k, ok := kstorage.SplitClusterKey(rel); ok && k.Cluster == cluster {
			page.Entries = append(page.Entries, Entry{Key: rel, Value: kv.Value})
		}
	}
	if resp.More && len(resp.Kvs) > 0 {
		page.Continue = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	return page, nil
}

// After returns the continue position right after key (relative to
// prefix), for a page cut short.
func After(prefix, key string) string {
	return normalizePrefix(prefix) + key + "\x00"
}

// DumpAll reads every page of cluster's objects at one revision.
func DumpAll(ctx context.Context, kv clientv3.KV, prefix string, cluster logicalcluster.Name) ([]Entry, int64, error) {
	return DumpAllAt(ctx, kv, prefix, cluster, 0)
}

// DumpAllAt reads every page of cluster's objects at revision (0: the
// current one).
func DumpAllAt(ctx context.Context, kv clientv3.KV, prefix string, cluster logicalcluster.Name, revision int64) ([]Entry, int64, error) {
	var all []Entry
	next := ""
	for {
		page, err := Dump(ctx, kv, prefix, cluster, revision, next, 0)
		if err != nil {
			return nil, 0, err
		}
		all = append(all, page.Entries...)
		revision = page.Revision
		if page.Continue == "" {
			return all, revision, nil
		}
		next = page.Continue
	}
}

// normalizePrefix returns the etcd prefix with a leading and a trailing
// slash.
func normalizePrefix(prefix string) string {
	return "/" + strings.Trim(prefix, "/") + "/"
}
