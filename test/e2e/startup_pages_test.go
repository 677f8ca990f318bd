package e2e

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/shardplane/shardplane/test/framework"
)

// TestShardGivesBackItsStartUpPagesOnceReady: once ready, a shard pages
// out the executable's pages that start-up read, and says so in its log
// with its resident file-backed memory before and after.
func TestShardGivesBackItsStartUpPagesOnceReady(t *testing.T) {
	t.Parallel()
	// Pages that another process maps stay: the other tests' shards run
	// the shared binary, this one a copy of its own.
	bin := filepath.Join(t.TempDir(), "shard")
	if err := copyFile(framework.Binary(t), bin); err != nil {
		t.Fatal(err)
	}
	s := framework.StartShard(t, framework.WithBinary(bin), framework.WithArgs("-v=2"))
	released := regexp.MustCompile(`"Released the executable's pages" after="start-up" mapped=(\d+) residentBefore=(\d+) residentAfter=(\d+)`)
	unsupported := regexp.MustCompile(`"The executable's pages stay mapped" reason="([^"]*)"`)
	deadline := time.Now().Add(time.Minute)
	for {
		log, err := os.ReadFile(s.LogPath())
		if err != nil {
			t.Fatal(err)
		}
		if m := unsupported.FindSubmatch(log); m != nil {
			t.Skipf("this kernel cannot page out a process's own pages: %s", m[1])
		}
		if m := released.FindSubmatch(log); m != nil {
			mapped, _ := strconv.ParseInt(string(m[1]), 10, 64)
			before, _ := strconv.ParseInt(string(m[2]), 10, 64)
			after, _ := strconv.ParseInt(string(m[3]), 10, 64)
			if mapped == 0 || before == 0 || after > before/2 {
				t.Fatalf("released %d mapped bytes: resident file-backed memory %d before, %d after; want at most half left", mapped, before, after)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no release of the start-up pages logged within a minute of the shard being ready:\n%s", s.LogTail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// copyFile copies the executable from to a new file to.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
