package clustermove

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd/etcdtest"
)

// countingKV counts what Gets return and what etcd counted to answer
// them: a range read with a limit still counts every key of its range.
type countingKV struct {
	clientv3.KV
	gets, returned, counted int64
}

func (c *countingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	resp, err := c.KV.Get(ctx, key, opts...)
	if err == nil {
		c.gets++
		c.returned += int64(len(resp.Kvs))
		c.counted += resp.Count
	}
	return resp, err
}

func (c *countingKV) reset() { c.gets, c.returned, c.counted = 0, 0, 0 }

// clusterResources are the resource prefixes every cluster of the shard
// below has objects of: built-in, cluster-scoped, custom and bound.
var clusterResources = []string{
	"apis.kcp.io/apibindings",
	"core.kcp.io/logicalclusters",
	"core/configmaps",
	"core/namespaces",
	"core/secrets",
	"rbac.authorization.k8s.io/rolebindings",
	"wild.dev/cowboys/" + strings.Repeat("0f", 32),
	"wild.dev/sheriffs/customresources",
}

// fill writes objects of clusters [from, to) in every clusterResources
// below prefix, in transactions of a hundred.
func fill(t *testing.T, kv clientv3.KV, prefix string, from, to int) {
	t.Helper()
	var ops []clientv3.Op
	for c := from; c < to; c++ {
		for _, r := range clusterResources {
			for o := range 3 {
				ops = append(ops, clientv3.OpPut(fmt.Sprintf("%s/%s/c%05d/default/o%d", prefix, r, c, o), strings.Repeat("v", 200)))
			}
		}
		if len(ops) >= 100 || c == to-1 {
			if _, err := kv.Txn(context.Background()).Then(ops...).Commit(); err != nil {
				t.Fatal(err)
			}
			ops = nil
		}
	}
}

func TestDumpReadsOnlyTheClusterWhateverTheShardHolds(t *testing.T) {
	// A prefix of its own: the resource prefixes dumps learn are per
	// prefix and shared by the process.
	const prefix = "/dumpscale"
	etcd := etcdtest.Start(t).Client().KV
	kv := &countingKV{KV: etcd}
	ctx := context.Background()
	fill(t, etcd, prefix, 0, 100)
	// Keys of no cluster between resource prefixes.
	for _, k := range []string{"/core/configmaps/c00001", "/shardplane.io/migration-revision", "/wild.dev/a-key"} {
		if _, err := etcd.Put(ctx, prefix+k, "x"); err != nil {
			t.Fatal(err)
		}
	}
	const moving = "c00042"
	var want []string
	for _, r := range clusterResources {
		for o := range 3 {
			want = append(want, fmt.Sprintf("%s/%s/default/o%d", r, moving, o))
		}
	}
	slices.Sort(want)

	dump := func() []string {
		t.Helper()
		kv.reset()
		entries, _, err := DumpAll(ctx, kv, prefix, moving)
		if err != nil {
			t.Fatal(err)
		}
		return keys(entries)
	}
	if got := dump(); !slices.Equal(got, want) {
		t.Fatalf("first dump = %v\nwant %v", got, want)
	}
	small := dump()
	gets, returned, counted := kv.gets, kv.returned, kv.counted
	if !slices.Equal(small, want) {
		t.Fatalf("dump = %v\nwant %v", small, want)
	}

	// Ten times as many other clusters: the same reads.
	fill(t, etcd, prefix, 100, 1000)
	dump()
	if got := dump(); !slices.Equal(got, want) {
		t.Fatalf("dump of the larger shard = %v\nwant %v", got, want)
	}
	if kv.gets != gets || kv.returned != returned || kv.counted != counted {
		t.Errorf("on a shard ten times larger the dump made %d gets returning %d keys (etcd counted %d), want %d, %d, %d as on the smaller",
			kv.gets, kv.returned, kv.counted, gets, returned, counted)
	}
	if limit := int64(len(want) + 2*len(clusterResources) + 3); counted > limit {
		t.Errorf("etcd counted %d keys for a dump of %d, want at most %d", counted, len(want), limit)
	}

	// A resource prefix that appears after the dumps learnt theirs, before,
	// between and after the known ones, is found.
	added := []string{
		"aaa.dev/firsts/customresources/" + moving + "/a",
		"core/pods/" + moving + "/default/p",
		"zzz.dev/lasts/customresources/" + moving + "/z",
	}
	for _, k := range added {
		if _, err := etcd.Put(ctx, prefix+"/"+k, "new"); err != nil {
			t.Fatal(err)
		}
	}
	want = append(want, added...)
	slices.Sort(want)
	if got := dump(); !slices.Equal(got, want) {
		t.Fatalf("dump after new resources = %v\nwant %v", got, want)
	}
	// And a resource prefix whose objects are all gone is skipped.
	if _, err := etcd.Delete(ctx, prefix+"/core/secrets/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	want = slices.DeleteFunc(want, func(k string) bool { return strings.HasPrefix(k, "core/secrets/") })
	if got := dump(); !slices.Equal(got, want) {
		t.Fatalf("dump after the secrets went = %v\nwant %v", got, want)
	}
}
