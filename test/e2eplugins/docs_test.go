package e2eplugins

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

// docShellBlocks returns the ```sh blocks of the section of
// docs/plugins.md that starts with heading, in order.
func docShellBlocks(t *testing.T, heading string) []string {
	t.Helper()
	return framework.ShellBlocks(t, filepath.Join("docs", "plugins.md"), heading)
}

// TestDocsWalkthroughWorksAsWritten runs the plugin walkthrough of
// docs/plugins.md as a user would after `make run` and `make
// install-plugins`: a copy of the shard's admin.kubeconfig stands where
// `make run` puts it (.shardplane/admin.kubeconfig) and the plugins are on PATH.
func TestDocsWalkthroughWorksAsWritten(t *testing.T) {
	requireKubectl(t)
	t.Parallel()
	out, stderr := runWalkthrough(t, docShellBlocks(t, "## Walkthrough"))
	for _, want := range []string{
		"Current workspace is 'root'.\n",
		`Workspace "acme" (type root:organization) created. Waiting for it to be ready...` + "\n",
		`Workspace "acme" (type root:organization) is ready to use.` + "\n",
		"Current workspace is 'root:acme' (type root:organization).\n",
		"Current workspace is 'root:acme:backend'.\n",
		"\nhi\n",
		"Current workspace is 'root' (type root).\n",
		"\nroot:acme:backend\n",
		"workspace.kcp.io/current",
		"workspace.kcp.io/previous",
		"\nrefused\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("docs walkthrough output lacks %q:\n%s\nstderr:\n%s", want, out, stderr)
		}
	}
	// Other tests create workspaces in root at the same time: acme need
	// not be the last branch of the tree.
	if tree := regexp.MustCompile(`(?m)^    [├└]── acme\n    [│ ]   └── backend$`); !tree.MatchString(out) {
		t.Errorf("docs walkthrough tree does not show acme with backend below it:\n%s", out)
	}
	if !strings.Contains(stderr, `workspace "root:nowhere" not found`) {
		t.Errorf("docs walkthrough stderr lacks the refusal of root:nowhere:\n%s", stderr)
	}
}

// TestReadmePluginWalkthroughWorksAsWritten runs the README's section on
// the plugins the same way.
func TestReadmePluginWalkthroughWorksAsWritten(t *testing.T) {
	requireKubectl(t)
	t.Parallel()
	out, stderr := runWalkthrough(t, framework.ShellBlocks(t, "README.md", "## Moving between workspaces with kubectl ws"))
	for _, want := range []string{
		`Workspace "shop" (type root:organization) is ready to use.` + "\n",
		"Current workspace is 'root:shop:web'.\n",
		"Current workspace is 'root:shop' (type root:organization).\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("README plugin walkthrough output lacks %q:\n%s\nstderr:\n%s", want, out, stderr)
		}
	}
}

// runWalkthrough runs shell blocks as a user would after `make run` and
// `make install-plugins` and returns their stdout and stderr.
func runWalkthrough(t *testing.T, blocks []string) (string, string) {
	t.Helper()

	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ".shardplane"), 0o700); err != nil {
		t.Fatal(err)
	}
	kc := kubeconfigFor(t, "")
	data, err := os.ReadFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".shardplane", "admin.kubeconfig"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	script := "set -euo pipefail\n" + strings.Join(blocks, "\n")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = dir
	cmd.Env = pluginEnv("", dir) // the script sets KUBECONFIG itself
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("walkthrough failed: %v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", err, script, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}
