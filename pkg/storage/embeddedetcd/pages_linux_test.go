package embeddedetcd_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sys/unix"

	"github.com/shardplane/shardplane/pkg/exepages"
	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd"
	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd/etcdtest"
)

// databaseResident returns the resident bytes of the mappings of etcd's
// database file in this process (one embedded etcd runs in it).
func databaseResident(t *testing.T) (resident int64, mapped bool) {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 5 && strings.Contains(f[0], "-"):
			in = len(f) == 6 && strings.HasSuffix(f[5], "/member/snap/db")
			mapped = mapped || in
		case in && len(f) == 3 && f[0] == "Rss:":
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			resident += kb << 10
		}
	}
	return resident, mapped
}

func TestIdleDatabasePagesGoBack(t *testing.T) {
	var fs unix.Statfs_t
	if err := unix.Statfs(t.TempDir(), &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC {
		t.Skip("the temporary directory is on tmpfs, whose pages the kernel cannot page out without swap")
	}
	// Paged out as the binaries have it: through package exepages.
	ports := etcdtest.FreePorts(t, 2)
	server, err := embeddedetcd.Start(t.Context(), embeddedetcd.Options{Directory: t.TempDir(), ClientPort: ports[0], PeerPort: ports[1], PageOut: exepages.PageOut})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(server.Close)
	ctx := context.Background()
	value := strings.Repeat("v", 2048)
	const keys = 4000
	for i := range keys {
		if _, err := server.Client().Put(ctx, fmt.Sprintf("/registry/k%05d", i), value); err != nil {
			t.Fatal(err)
		}
	}
	// Written and read back, every page is resident now.
	got, err := server.Client().Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil || len(got.Kvs) != keys {
		t.Fatalf("read %d keys back, want %d: %v", len(got.Kvs), keys, err)
	}
	resident, mapped := databaseResident(t)
	if !mapped {
		t.Fatal("etcd's database file is not mapped into the process")
	}
	t.Logf("%d KiB of the database resident after the writes", resident>>10)

	// Writes paused: the pages go back within a few check intervals.
	deadline := time.Now().Add(30 * time.Second)
	for resident >= 1<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("%d KiB of the database still resident 30 s after the writes", resident>>10)
		}
		time.Sleep(200 * time.Millisecond)
		resident, _ = databaseResident(t)
	}

	// What went back reads the same, and writes go on.
	got, err = server.Client().Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil || len(got.Kvs) != keys {
		t.Fatalf("read %d keys back after the release, want %d: %v", len(got.Kvs), keys, err)
	}
	for _, kv := range got.Kvs {
		if string(kv.Value) != value {
			t.Fatalf("%s reads %d bytes after the release, want the %d written", kv.Key, len(kv.Value), len(value))
		}
	}
	if _, err := server.Client().Put(ctx, "/registry/after", "x"); err != nil {
		t.Fatal(err)
	}
}
