package clustermove

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

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
	// Scanned counts the keys read for this page: the cluster's, and one
	// of each resource prefix to find the next.
	Scanned int64 `json:"scanned"`
}

// DefaultPageKeys is how many keys a page reads when the caller sets no
// limit.
const DefaultPageKeys = 2000

// Dump reads one page of cluster's objects below prefix (the etcd prefix,
// e.g. "/registry"). The first call passes revision 0 and continueFrom "";
// the next ones pass the page's Revision and Continue, so that every page
// reads the same snapshot. scanKeys bounds the keys read for a page (0
// for DefaultPageKeys); a page may hold no entries and still continue.
// A compacted revision is an error: start again from the beginning.
//
// It reads the cluster's range of each resource prefix and, to find the
// resource prefixes, one key between each known one and the next: what it
// reads grows with the cluster and the number of resources, not with
// other clusters.
func Dump(ctx context.Context, kv clientv3.KV, prefix string, cluster logicalcluster.Name, revision int64, continueFrom string, scanKeys int64) (Page, error) {
	if cluster == "" || cluster.IsWildcard() {
		return Page{}, fmt.Errorf("dump: no logical cluster")
	}
	if scanKeys <= 0 {
		scanKeys = DefaultPageKeys
	}
	root := normalizePrefix(prefix)
	rootEnd := clientv3.GetPrefixRangeEnd(root)
	from := root
	if continueFrom != "" {
		if !strings.HasPrefix(continueFrom, root) {
			return Page{}, fmt.Errorf("dump: continue token %q is not below %q", continueFrom, root)
		}
		from = continueFrom
	}
	page := Page{Revision: revision}
	get := func(key, end string, limit int64, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
		opts = append(opts, clientv3.WithRange(end), clientv3.WithLimit(limit))
		if page.Revision > 0 {
			opts = append(opts, clientv3.WithRev(page.Revision))
		}
		resp, err := kv.Get(ctx, key, opts...)
		if err != nil {
			return nil, fmt.Errorf("dump %s at revision %d: %w", cluster, page.Revision, err)
		}
		// The first read fixes the snapshot every later one reads.
		if page.Revision == 0 {
			page.Revision = resp.Header.Revision
		}
		page.Scanned += int64(len(resp.Kvs))
		return resp, nil
	}
	known := resourceRootsOf(root)
	for page.Scanned < scanKeys {
		resourceRoot := known.next(from)
		if resourceRoot == "" || from < resourceRoot {
			// Look for a key before the next known resource prefix: in
			// the usual case the range is empty and costs etcd nothing,
			// while a read to the end would count every key after from.
			end := rootEnd
			if resourceRoot != "" {
				end = resourceRoot
			}
			next, err := get(from, end, 1, clientv3.WithKeysOnly())
			if err != nil {
				return Page{}, err
			}
			switch {
			case len(next.Kvs) > 0:
				key := string(next.Kvs[0].Key)
				k, ok := kstorage.SplitClusterKey(strings.TrimPrefix(key, root))
				if !ok {
					from = keyAfter(key)
					continue
				}
				resourceRoot = root + k.Resource + "/"
				known.add(resourceRoot)
			case resourceRoot == "":
				return page, nil
			}
		}
		clusterPrefix := resourceRoot + string(cluster) + "/"
		clusterEnd := clientv3.GetPrefixRangeEnd(clusterPrefix)
		start := max(from, clusterPrefix)
		if start < clusterEnd {
			// At least one key, so that every page moves on.
			objects, err := get(start, clusterEnd, max(scanKeys-page.Scanned, 1))
			if err != nil {
				return Page{}, err
			}
			for _, kv := range objects.Kvs {
				page.Entries = append(page.Entries, Entry{Key: strings.TrimPrefix(string(kv.Key), root), Value: kv.Value})
			}
			if objects.More {
				from = keyAfter(string(objects.Kvs[len(objects.Kvs)-1].Key))
				continue
			}
		}
		from = clientv3.GetPrefixRangeEnd(resourceRoot)
	}
	page.Continue = from
	return page, nil
}

// After returns the continue position right after key (relative to
// prefix), for a page cut short.
func After(prefix, key string) string {
	return keyAfter(normalizePrefix(prefix) + key)
}

// keyAfter is the first etcd key after key.
func keyAfter(key string) string { return key + "\x00" }

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

// resourceRoots are the resource prefixes (absolute, with a trailing
// slash) dumps below one etcd prefix have met, in key order. They are
// hints: a dump still reads between them and learns what is new, and a
// prefix whose objects are gone costs it one empty read.
type resourceRoots struct {
	mu    sync.Mutex
	roots []string
}

// knownResourceRoots holds a resourceRoots per etcd prefix, shared by the
// dumps of a process.
var knownResourceRoots sync.Map

func resourceRootsOf(root string) *resourceRoots {
	r, _ := knownResourceRoots.LoadOrStore(root, &resourceRoots{})
	return r.(*resourceRoots)
}

// next returns the known resource prefix that holds from or, when none
// does, the first after it; "" when there is none.
func (r *resourceRoots) next(from string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, _ := slices.BinarySearch(r.roots, from)
	if i > 0 && strings.HasPrefix(from, r.roots[i-1]) {
		return r.roots[i-1]
	}
	if i < len(r.roots) {
		return r.roots[i]
	}
	return ""
}

func (r *resourceRoots) add(root string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if i, found := slices.BinarySearch(r.roots, root); !found {
		r.roots = slices.Insert(r.roots, i, root)
	}
}

// normalizePrefix returns the etcd prefix with a leading and a trailing
// slash.
func normalizePrefix(prefix string) string {
	return "/" + strings.Trim(prefix, "/") + "/"
}
