package clustermove

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd/etcdtest"
)

const (
	moving = "2x9kq7z1"
	other  = "other1"
)

// put writes keys relative to /registry.
func put(t *testing.T, kv clientv3.KV, kvs map[string]string) {
	t.Helper()
	for k, v := range kvs {
		if _, err := kv.Put(context.Background(), "/registry/"+k, v); err != nil {
			t.Fatal(err)
		}
	}
}

func keys(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Key)
	}
	return out
}

// origin holds the moving cluster's objects of a built-in kind, a custom
// resource and a bound resource, next to another cluster's and keys that
// belong to no cluster.
func origin(t *testing.T) clientv3.KV {
	t.Helper()
	kv := etcdtest.Start(t).Client().KV
	identity := strings.Repeat("0f", 32)
	put(t, kv, map[string]string{
		"core/configmaps/" + moving + "/default/a":                        "cm-a",
		"core/configmaps/" + moving + "/default/b":                        "cm-b",
		"core/configmaps/" + other + "/default/a":                         "other-cm",
		"core/configmaps/" + other + "/" + moving + "/a":                  "a namespace named like the moving cluster",
		"core.kcp.io/logicalclusters/" + moving + "/cluster":              `{"kind":"LogicalCluster"}`,
		"wild.dev/sheriffs/customresources/" + moving + "/default/wyatt":  "cr",
		"wild.dev/cowboys/" + identity + "/" + moving + "/default/lucky":  "bound",
		"apiextensions.k8s.io/customresourcedefinitions/" + moving + "/x": "crd",
	})
	if _, err := kv.Put(context.Background(), "compact_rev_key", "1"); err != nil {
		t.Fatal(err)
	}
	return kv
}

func TestDumpReadsOnlyTheClusterAtOneRevisionInPages(t *testing.T) {
	kv := origin(t)
	ctx := context.Background()

	var got []Entry
	var revision int64
	next, pages := "", 0
	for {
		// One key a page, so that the pages and their continue tokens are
		// exercised; a write between pages must not show.
		page, err := Dump(ctx, kv, "/registry", moving, revision, next, 1)
		if err != nil {
			t.Fatal(err)
		}
		if pages == 0 {
			put(t, kv, map[string]string{"core/configmaps/" + moving + "/default/late": "written after the dump began"})
		}
		pages++
		got = append(got, page.Entries...)
		revision, next = page.Revision, page.Continue
		if next == "" {
			break
		}
	}
	if pages < 6 {
		t.Errorf("%d pages of at most one entry each, want one per entry", pages)
	}
	want := []string{
		"apiextensions.k8s.io/customresourcedefinitions/" + moving + "/x",
		"core.kcp.io/logicalclusters/" + moving + "/cluster",
		"core/configmaps/" + moving + "/default/a",
		"core/configmaps/" + moving + "/default/b",
		"wild.dev/cowboys/" + strings.Repeat("0f", 32) + "/" + moving + "/default/lucky",
		"wild.dev/sheriffs/customresources/" + moving + "/default/wyatt",
	}
	if fmt.Sprint(keys(got)) != fmt.Sprint(want) {
		t.Fatalf("dump = %v\nwant %v", keys(got), want)
	}
	all, _, err := DumpAll(ctx, kv, "registry", moving)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(want)+1 {
		t.Fatalf("a new dump has %d entries, want the late configmap too", len(all))
	}
}

func TestSyncCopiesAndVerifyMatches(t *testing.T) {
	src := origin(t)
	dst := etcdtest.Start(t).Client().KV
	ctx := context.Background()
	put(t, dst, map[string]string{
		"core/configmaps/" + moving + "/default/stale": "left from an earlier attempt",
		"core/configmaps/" + other + "/default/a":      "the destination's own cluster",
	})

	entries, _, err := DumpAll(ctx, src, "/registry", moving)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Sync(ctx, dst, "/registry", moving, entries, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Written != int64(len(entries)) || res.Deleted != 1 {
		t.Errorf("sync wrote %d and deleted %d, want %d and 1", res.Written, res.Deleted, len(entries))
	}
	copied, _, err := DumpAll(ctx, dst, "/registry", moving)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Digest(entries)
	got, _ := Digest(copied)
	if err := Verify(want, got); err != nil {
		t.Fatal(err)
	}
	if resp, err := dst.Get(ctx, "/registry/core/configmaps/"+other+"/default/a"); err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("the destination's other cluster was touched: %v %v", resp, err)
	}

	// A second sync after more writes copies only what changed.
	put(t, src, map[string]string{"core/configmaps/" + moving + "/default/a": "cm-a changed"})
	if _, err := src.Delete(ctx, "/registry/core/configmaps/"+moving+"/default/b"); err != nil {
		t.Fatal(err)
	}
	entries, _, _ = DumpAll(ctx, src, "/registry", moving)
	res, err = Sync(ctx, dst, "/registry", moving, entries, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Written != 1 || res.Deleted != 1 {
		t.Errorf("the second sync wrote %d and deleted %d, want 1 and 1", res.Written, res.Deleted)
	}

	n, err := DeleteAll(ctx, src, "/registry", moving)
	if err != nil || n != int64(len(entries)) {
		t.Fatalf("DeleteAll = %d, %v; want %d", n, err, len(entries))
	}
	if left, _, _ := DumpAll(ctx, src, "/registry", moving); len(left) != 0 {
		t.Fatalf("the origin still holds %v", keys(left))
	}
	if resp, _ := src.Get(ctx, "/registry/core/configmaps/"+other+"/"+moving+"/a"); len(resp.Kvs) != 1 {
		t.Fatal("DeleteAll removed another cluster's namespace named like the moving cluster")
	}
}

func TestVerifyNamesWhatDiffers(t *testing.T) {
	entries := []Entry{
		{Key: "core/configmaps/" + moving + "/default/a", Value: []byte("a")},
		{Key: "core/secrets/" + moving + "/default/s", Value: []byte("s")},
	}
	want, err := Digest(entries)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		copy []Entry
		msg  string
	}{
		"identical, in another order": {copy: []Entry{entries[1], entries[0]}},
		"one missing":                 {copy: entries[:1], msg: "core/secrets: 1 objects on the origin, 0 on the destination"},
		"one extra": {copy: append([]Entry{{Key: "core/pods/" + moving + "/default/p", Value: []byte("p")}}, entries...),
			msg: "core/pods: 0 objects on the origin, 1 on the destination"},
		"content changed": {copy: []Entry{entries[0], {Key: entries[1].Key, Value: []byte("changed")}},
			msg: "core/secrets: 1 objects on both, but their contents differ"},
		// Length prefixes: moving a byte from key to value changes the hash.
		"boundary shifted": {copy: []Entry{entries[0], {Key: entries[1].Key + "x", Value: []byte("")}},
			msg: "core/secrets: 1 objects on both, but their contents differ"},
	} {
		got, err := Digest(tc.copy)
		if err != nil {
			t.Fatal(err)
		}
		err = Verify(want, got)
		if differing := DifferingKeys(entries, tc.copy, 3); (tc.msg == "") != (len(differing) == 0) {
			t.Errorf("%s: differing keys %v", name, differing)
		}
		switch {
		case tc.msg == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)):
			t.Errorf("%s: %v, want %q", name, err, tc.msg)
		}
	}
	if _, err := Digest([]Entry{{Key: "compact_rev_key"}}); err == nil {
		t.Error("Digest accepted a key of no logical cluster")
	}
}

func TestSyncRewritesValues(t *testing.T) {
	dst := etcdtest.Start(t).Client().KV
	ctx := context.Background()
	entries := []Entry{{Key: "core.kcp.io/logicalclusters/" + moving + "/cluster", Value: []byte("lc")}}
	mark := func(e Entry) ([]byte, error) { return append([]byte("marked-"), e.Value...), nil }
	if _, err := Sync(ctx, dst, "/registry", moving, entries, mark); err != nil {
		t.Fatal(err)
	}
	resp, err := dst.Get(ctx, "/registry/"+entries[0].Key)
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "marked-lc" {
		t.Fatalf("destination holds %v, %v; want the rewritten value", resp, err)
	}
	// Unchanged after the rewrite: nothing to write again.
	res, err := Sync(ctx, dst, "/registry", moving, entries, mark)
	if err != nil || res.Written != 0 {
		t.Fatalf("a second sync wrote %d (%v), want 0", res.Written, err)
	}
}

func TestAdvanceRevisionPassesTheOrigins(t *testing.T) {
	kv := etcdtest.Start(t).Client().KV
	resp, err := kv.Get(context.Background(), "any")
	if err != nil {
		t.Fatal(err)
	}
	target := resp.Header.Revision + 500
	got, err := AdvanceRevision(context.Background(), kv, "/registry", target)
	if err != nil || got <= target {
		t.Fatalf("AdvanceRevision = %d, %v; want above %d", got, err, target)
	}
	if entries, _, _ := DumpAll(context.Background(), kv, "/registry", moving); len(entries) != 0 {
		t.Fatalf("advancing wrote to a cluster: %v", keys(entries))
	}
	// Already above: no write. Puts the advance cancelled may still land
	// after it returned: wait for the revision to settle.
	var now *clientv3.GetResponse
	for prev := int64(-1); ; time.Sleep(50 * time.Millisecond) {
		if now, err = kv.Get(context.Background(), "any"); err != nil {
			t.Fatal(err)
		}
		if now.Header.Revision == prev {
			break
		}
		prev = now.Header.Revision
	}
	again, err := AdvanceRevision(context.Background(), kv, "/registry", 1)
	if err != nil || again != now.Header.Revision {
		t.Fatalf("AdvanceRevision past an old revision = %d, %v; want %d, no write", again, err, now.Header.Revision)
	}
}

// A shard killed while it deletes a cluster still has its LogicalCluster,
// which marks and claims what is left.
func TestDeleteAllRemovesTheLogicalClusterLast(t *testing.T) {
	kv := etcdtest.Start(t).Client().KV
	ctx := context.Background()
	for _, k := range []string{"apis.kcp.io/apibindings/" + moving + "/b", "core.kcp.io/logicalclusters/" + moving + "/cluster", "core/configmaps/" + moving + "/default/a", "rbac.authorization.k8s.io/rolebindings/" + moving + "/default/r"} {
		if _, err := kv.Put(ctx, "/registry/"+k, "v"); err != nil {
			t.Fatal(err)
		}
	}
	before, err := kv.Get(ctx, "any")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := DeleteAll(ctx, kv, "/registry", moving); err != nil || n != 4 {
		t.Fatalf("DeleteAll = %d, %v; want 4", n, err)
	}
	// The deletions' order is the order of their revisions.
	lc, err := kv.Get(ctx, "/registry/core.kcp.io/logicalclusters/"+moving+"/cluster", clientv3.WithRev(before.Header.Revision+3))
	if err != nil || len(lc.Kvs) != 1 {
		t.Fatalf("after three deletions the LogicalCluster is gone (%v): it was not last", err)
	}
	if left, _, _ := DumpAll(ctx, kv, "/registry", moving); len(left) != 0 {
		t.Fatalf("left %v", keys(left))
	}
}

// A copy of many keys is written several keys at a time, each at a
// revision of its own (a watch resuming from an object's resource version
// would skip the rest of a revision of several); a later sync deletes what
// the origin no longer has.
func TestSyncWritesEveryKeyAtItsOwnRevision(t *testing.T) {
	dst := etcdtest.Start(t).Client().KV
	ctx := context.Background()
	var entries []Entry
	for i := range 300 {
		entries = append(entries, Entry{Key: fmt.Sprintf("core/configmaps/%s/default/cm-%03d", moving, i), Value: []byte("v")})
	}
	res, err := Sync(ctx, dst, "/registry", moving, entries, nil)
	if err != nil || res.Written != 300 {
		t.Fatalf("Sync = %+v, %v; want 300 written", res, err)
	}
	got, err := dst.Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil || len(got.Kvs) != 300 {
		t.Fatalf("%d keys written (%v), want 300", len(got.Kvs), err)
	}
	revisions := map[int64]bool{}
	for _, kv := range got.Kvs {
		revisions[kv.ModRevision] = true
		if kv.ModRevision > res.Revision {
			t.Errorf("%s written at %d, after the sync's revision %d", kv.Key, kv.ModRevision, res.Revision)
		}
	}
	if len(revisions) != 300 {
		t.Errorf("300 keys written at %d revisions, want one each", len(revisions))
	}
	res, err = Sync(ctx, dst, "/registry", moving, entries[:100], nil)
	if err != nil || res.Written != 0 || res.Deleted != 200 {
		t.Fatalf("second Sync = %+v, %v; want 200 deleted", res, err)
	}
	if left, _, _ := DumpAll(ctx, dst, "/registry", moving); len(left) != 100 {
		t.Fatalf("%d keys left, want 100", len(left))
	}
}
