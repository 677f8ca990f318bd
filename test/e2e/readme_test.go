package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shardplane/shardplane/test/framework"
)

// readmeServer is the URL the README's examples use (`make run`).
const readmeServer = "https://127.0.0.1:6443"

// TestReadmeWalkthroughWorksAsWritten runs the README's kubectl walkthrough
// against a real shard, as a new user would after `make run`: the shard's
// root directory stands where `make run` puts it (.shardplane) and its URL
// replaces https://127.0.0.1:6443.
func TestReadmeWalkthroughWorksAsWritten(t *testing.T) {
	kubectl, err := framework.KubectlPath()
	if err != nil {
		t.Skip("kubectl not found on PATH; install it (README: Quick start) to run the README walkthrough")
	}
	t.Parallel()
	blocks := framework.ShellBlocks(t, "README.md", "## kubectl walkthrough")

	e := &wsEnv{s: framework.StartShard(t)}
	e.waitForRootBootstrap(t)
	dir := t.TempDir()
	if err := os.Symlink(e.s.RootDir(), filepath.Join(dir, ".shardplane")); err != nil {
		t.Fatal(err)
	}
	script := "set -euo pipefail\n" + strings.ReplaceAll(strings.Join(blocks, "\n"), readmeServer, e.s.BaseURL(t))

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "PATH="+filepath.Dir(kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("README walkthrough failed: %v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", err, script, stdout.String(), stderr.String())
	}
	out := stdout.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^blue$`),
		regexp.MustCompile(`(?m)^green$`),
		regexp.MustCompile(`(?m)^[a-z0-9]{16}$`),                    // kcp.io/cluster of root:team-a's configmap
		regexp.MustCompile(`(?m)^[a-z0-9]{16}\s+settings\s+blue$`),  // wildcard list
		regexp.MustCompile(`(?m)^[a-z0-9]{16}\s+settings\s+green$`), // wildcard list
		regexp.MustCompile(`(?m)^yes$`),                             // auth can-i
		regexp.MustCompile(`workspace.tenancy.kcp.io "team-a" deleted`),
	} {
		if !want.MatchString(out) {
			t.Errorf("README walkthrough output does not match %s:\n%s\nstderr:\n%s", want, out, stderr.String())
		}
	}
}
