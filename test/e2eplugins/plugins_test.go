package e2eplugins

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/shardplane/shardplane/pkg/cliplugins/workspace"
	"github.com/shardplane/shardplane/test/framework"
)

// kubectlTimeout bounds one kubectl run; creating a workspace waits for it
// to become Ready.
const kubectlTimeout = 2 * time.Minute

// requireKubectl skips the test when kubectl is not installed.
func requireKubectl(t *testing.T) {
	t.Helper()
	if env.kubectl == "" {
		t.Skip("kubectl not found on PATH; install it (README: Quick start) to test the kubectl plugins")
	}
}

// unique returns prefix with a random suffix: the shard is shared by all
// tests of the package.
func unique(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// kubeconfigFor writes a copy of the shard's admin.kubeconfig into a
// directory of the test, with file mode 0640. For a token user its root
// context acts as that user. It returns the path.
func kubeconfigFor(t *testing.T, user string) string {
	t.Helper()
	cfg := env.shard.RawKubeconfig(t)
	if user != "" {
		cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: env.shard.UserToken(t, user)}
		cfg.Contexts["root"].AuthInfo = user
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	return path
}

// pluginEnv is the environment kubectl runs in: the plugins first on PATH,
// HOME next to the kubeconfig (kubectl's caches stay in the test), and
// KUBECONFIG as given.
func pluginEnv(kubeconfig, home string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "PATH=") {
			out = append(out, kv)
		}
	}
	return append(out,
		"KUBECONFIG="+kubeconfig,
		"HOME="+home,
		"PATH="+env.binDir+string(os.PathListSeparator)+filepath.Dir(env.kubectl)+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
}

// kubectl runs kubectl with args against kubeconfig.
func kubectl(t *testing.T, kubeconfig string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.kubectl, args...)
	cmd.Env = pluginEnv(kubeconfig, filepath.Dir(kubeconfig))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// mustKubectl runs kubectl and fails the test when it fails.
func mustKubectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, errOut, err := kubectl(t, kubeconfig, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// expectKubectl runs kubectl and checks its stdout exactly.
func expectKubectl(t *testing.T, kubeconfig, want string, args ...string) {
	t.Helper()
	if got := mustKubectl(t, kubeconfig, args...); got != want {
		t.Errorf("kubectl %s printed\n%q\nwant\n%q", strings.Join(args, " "), got, want)
	}
}

// expectKubectlFails runs kubectl, expects it to fail with wantErr on
// stderr, and checks that the kubeconfig was not touched.
func expectKubectlFails(t *testing.T, kubeconfig, wantErr string, args ...string) {
	t.Helper()
	before, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, err := kubectl(t, kubeconfig, args...)
	if err == nil {
		t.Errorf("kubectl %s succeeded, want it to fail with %q\nstdout:\n%s", strings.Join(args, " "), wantErr, out)
	} else if !strings.Contains(errOut, wantErr) {
		t.Errorf("kubectl %s failed with stderr\n%s\nwant it to contain %q", strings.Join(args, " "), errOut, wantErr)
	}
	after, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("kubectl %s changed the kubeconfig although it failed", strings.Join(args, " "))
	}
}

// servers returns the servers of the current and the previous workspace
// context of a kubeconfig.
func servers(t *testing.T, kubeconfig string) (current, previous string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != workspace.CurrentContextName {
		t.Errorf("current-context = %q, want %q", cfg.CurrentContext, workspace.CurrentContextName)
	}
	current, err = workspace.ServerOf(cfg, workspace.CurrentContextName)
	if err != nil {
		t.Fatal(err)
	}
	previous, err = workspace.ServerOf(cfg, workspace.PreviousContextName)
	if err != nil {
		t.Fatal(err)
	}
	return current, previous
}

func TestWsMovesThroughWorkspacesAndWritesTheKubeconfig(t *testing.T) {
	requireKubectl(t)
	t.Parallel()
	kc := kubeconfigFor(t, "")
	base := env.shard.BaseURL(t)
	org := unique("org")

	expectKubectl(t, kc, "Current workspace is 'root'.\n", "ws", ".")
	expectKubectl(t, kc, `Workspace "`+org+`" (type root:organization) created. Waiting for it to be ready...
Workspace "`+org+`" (type root:organization) is ready to use.
Current workspace is 'root:`+org+`' (type root:organization).
`, "create", "workspace", org, "--type", "root:organization", "--enter")

	out := mustKubectl(t, kc, "ws", "create", "team", "--enter")
	want := regexp.MustCompile(`^Workspace "team" \(type (root:[a-z]+)\) created\. Waiting for it to be ready\.\.\.
Workspace "team" \(type root:[a-z]+\) is ready to use\.
Current workspace is 'root:` + org + `:team' \(type root:[a-z]+\)\.
$`)
	if !want.MatchString(out) {
		t.Fatalf("kubectl ws create team --enter printed\n%s\nwant it to match %s", out, want)
	}
	teamType := want.FindStringSubmatch(out)[1]

	// kubectl itself now works in the workspace the plugin entered.
	mustKubectl(t, kc, "create", "configmap", "hello", "--from-literal=greeting=hi")
	expectKubectl(t, kc, "hi", "get", "configmap", "hello", "-o", "jsonpath={.data.greeting}")

	expectKubectl(t, kc, "Current workspace is 'root:"+org+":team'.\n", "ws", ".")
	expectKubectl(t, kc, "Current workspace is 'root:"+org+"' (type root:organization).\n", "ws", "..")
	expectKubectl(t, kc, "Current workspace is 'root:"+org+":team'.\n", "ws", "-")
	if cur, prev := servers(t, kc); cur != base+"/clusters/root:"+org+":team" || prev != base+"/clusters/root:"+org {
		t.Errorf("after ws -: current %q previous %q", cur, prev)
	}
	expectKubectl(t, kc, "hi", "get", "configmap", "hello", "-o", "jsonpath={.data.greeting}")
	expectKubectl(t, kc, "Current workspace is 'root:"+org+"' (type root:organization).\n", "ws", ":root:"+org)
	expectKubectl(t, kc, ".\n└── "+org+"\n    └── team\n\n", "ws", "tree")
	expectKubectl(t, kc, ".\n└── root:"+org+"\n    └── root:"+org+":team\n\n", "ws", "tree", "--full")
	expectKubectl(t, kc, "root:"+org+":team\n", "ws", "use", "team", "--short")
	expectKubectl(t, kc, "Current workspace is 'root:"+org+":team' (type "+teamType+").\n", "ws", "cd", "..:team")
	expectKubectl(t, kc, "Current workspace is 'root' (type root).\n", "ws", "..:..")
	if out := mustKubectl(t, kc, "ws", "tree"); !strings.Contains(out, "\n    ├── "+org+"\n    │   └── team\n") && !strings.Contains(out, "\n    └── "+org+"\n        └── team\n") {
		t.Errorf("tree from root does not show %s with team below it:\n%s", org, out)
	}
	if _, errOut, err := kubectl(t, kc, "get", "configmap", "hello"); err == nil || !strings.Contains(errOut, "NotFound") {
		t.Errorf("root must not see team's configmap: %v\n%s", err, errOut)
	}

	// The kubeconfig: the plugin's two contexts, everything else as the
	// shard wrote it, the file mode kept.
	cur, prev := servers(t, kc)
	if cur != base+"/clusters/root" || prev != base+"/clusters/root:"+org+":team" {
		t.Errorf("kubeconfig: current %q previous %q", cur, prev)
	}
	got, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	orig := env.shard.RawKubeconfig(t)
	for name := range orig.Contexts {
		if !equality.Semantic.DeepEqual(got.Contexts[name].Cluster, orig.Contexts[name].Cluster) || got.Contexts[name].AuthInfo != orig.Contexts[name].AuthInfo {
			t.Errorf("context %q changed: %+v", name, got.Contexts[name])
		}
	}
	for name := range orig.Clusters {
		if got.Clusters[name].Server != orig.Clusters[name].Server {
			t.Errorf("cluster %q changed its server to %q", name, got.Clusters[name].Server)
		}
	}
	if c := got.Contexts[workspace.CurrentContextName]; c.AuthInfo != "kcp-admin" {
		t.Errorf("the plugin's context acts as %q, want kcp-admin (the user of the context it came from)", c.AuthInfo)
	}
	info, err := os.Stat(kc)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o640 {
		t.Errorf("kubeconfig mode = %v, want 0640 kept", info.Mode().Perm())
	}
}

func TestWsRefusesAMissingWorkspaceAndKeepsTheKubeconfig(t *testing.T) {
	requireKubectl(t)
	t.Parallel()
	kc := kubeconfigFor(t, "")
	missing := unique("missing")

	expectKubectlFails(t, kc, `workspace "root:`+missing+`" not found`, "ws", missing)
	expectKubectlFails(t, kc, `workspace "root:`+missing+`:deeper" not found`, "ws", "use", ":root:"+missing+":deeper")
	expectKubectlFails(t, kc, "cannot go up from the top-level workspace", "ws", "..")
	expectKubectlFails(t, kc, "no previous workspace found in kubeconfig", "ws", "-")
	expectKubectlFails(t, kc, `invalid workspace path "No_Such"`, "ws", "No_Such")

	org := unique("org")
	mustKubectl(t, kc, "create", "workspace", org)
	expectKubectlFails(t, kc, `workspaces.tenancy.kcp.io "`+org+`" already exists`, "create", "workspace", org)
	expectKubectl(t, kc, `Workspace "`+org+`" (type root:organization) already exists.
Workspace "`+org+`" (type root:organization) is ready to use.
`, "ws", "create", org, "--ignore-existing", "--type=root:organization")
	expectKubectlFails(t, kc, "it already exists with different type root:organization", "ws", "create", org, "--ignore-existing", "--type=root:universal")
}

func TestWsTellsAUserWithoutAccessThatItHasNone(t *testing.T) {
	requireKubectl(t)
	t.Parallel()
	admin := kubeconfigFor(t, "")
	org := unique("org")
	mustKubectl(t, admin, "create", "workspace", org, "--type", "root:organization")

	user := kubeconfigFor(t, "user-1")
	expectKubectl(t, user, "Current workspace is 'root'.\n", "ws", ".")
	expectKubectlFails(t, user, `access to workspace "root:`+org+`" denied`, "ws", org)
	expectKubectlFails(t, user, `access to workspace "root:`+org+`" denied`, "ws", "use", ":root:"+org)

	// Once the admin lets user-1 in, the same command works.
	mustKubectl(t, admin, "ws", org)
	mustKubectl(t, admin, "create", "clusterrolebinding", "user-1-admin", "--clusterrole=cluster-admin", "--user=user-1")
	var out string
	framework.EventuallyWithin(t, 30*time.Second, func(context.Context) error {
		var errOut string
		var err error
		if out, errOut, err = kubectl(t, user, "ws", org); err != nil {
			return fmt.Errorf("%w\n%s", err, errOut)
		}
		return nil
	}, "user-1 still cannot enter %s after being made its cluster-admin", org)
	if want := "Current workspace is 'root:" + org + "'"; !strings.HasPrefix(out, want) {
		t.Errorf("user-1 entering %s printed %q, want it to start with %q", org, out, want)
	}
}
