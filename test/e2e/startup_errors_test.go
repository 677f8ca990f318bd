package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shardplane/shardplane/pkg/rootdir"
	"github.com/shardplane/shardplane/test/framework"
)

// TestServiceAccountKeyThatCannotBeReadStopsStartUp: a shard whose service
// account token authenticator cannot be built exits with a one-line error
// naming the key file, instead of serving while accepting no token.
func TestServiceAccountKeyThatCannotBeReadStopsStartUp(t *testing.T) {
	t.Parallel()
	bin := framework.Binary(t)
	dir := t.TempDir()
	badKey := filepath.Join(dir, "not-a-key.pem")
	if err := os.WriteFile(badKey, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	signing, err := rootdir.Dir(dir).EnsureServiceAccountKey()
	if err != nil {
		t.Fatal(err)
	}
	ports := framework.FreePorts(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--root-directory="+filepath.Join(dir, "root"), "--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[0]), "--embedded-etcd-client-port="+strconv.Itoa(ports[1]), "--embedded-etcd-peer-port="+strconv.Itoa(ports[2]),
		"--service-account-signing-key-file="+signing, "--service-account-key-file="+badKey)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("shard started with an unreadable service account key:\n%s", out)
	}
	if ctx.Err() != nil {
		t.Fatalf("shard did not stop within 2m with an unreadable service account key:\n%s", out)
	}
	var failure string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "command failed") {
			failure = line
		}
	}
	if !strings.Contains(failure, badKey) {
		t.Errorf("the error does not name the key file %s:\n%s", badKey, out)
	}
}
