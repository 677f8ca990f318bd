package e2eplugins

import (
	"strings"
	"testing"
)

// TestWsGoesHome: a bare `kubectl ws` and `kubectl ws ~` go to the caller's
// home workspace (user:<name>, created on first access), `-` comes back,
// and the home is a workspace like any other: kubectl works there and
// workspaces nest below it. Nobody else may enter it.
func TestWsGoesHome(t *testing.T) {
	requireKubectl(t)
	t.Parallel()
	kc := kubeconfigFor(t, "user-2")
	base := env.shard.BaseURL(t)

	out, errOut, err := kubectl(t, kc, "ws")
	if err != nil {
		t.Fatalf("kubectl ws: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	if out != "Current workspace is 'user:user-2'.\n" {
		t.Errorf("kubectl ws printed %q, want the home user:user-2", out)
	}
	if !strings.Contains(errOut, "Note: 'kubectl ws' now matches 'cd' semantics") {
		t.Errorf("kubectl ws did not print kcp's note on stderr: %q", errOut)
	}
	if cur, prev := servers(t, kc); cur != base+"/clusters/user:user-2" || prev != base+"/clusters/root" {
		t.Errorf("after kubectl ws: current %q previous %q", cur, prev)
	}

	// kubectl works in the home, where user-2 is cluster-admin.
	mustKubectl(t, kc, "create", "configmap", "at-home", "--from-literal=where=home")
	expectKubectl(t, kc, "home", "get", "configmap", "at-home", "-o", "jsonpath={.data.where}")
	expectKubectl(t, kc, "Current workspace is 'user:user-2'.\n", "ws", ".")

	expectKubectl(t, kc, "Current workspace is 'root'.\n", "ws", "-")
	expectKubectl(t, kc, "Current workspace is 'user:user-2'.\n", "ws", "~")
	expectKubectl(t, kc, "Current workspace is 'user:user-2'.\n", "ws", "use", "~")

	// Workspaces nest below the home, by path.
	expectKubectl(t, kc, `Workspace "project" (type root:universal) created. Waiting for it to be ready...
Workspace "project" (type root:universal) is ready to use.
Current workspace is 'user:user-2:project' (type root:universal).
`, "ws", "create", "project", "--enter")
	expectKubectl(t, kc, "Current workspace is 'user:user-2:project' (type root:universal).\n", "ws", ":user:user-2:project")
	expectKubectl(t, kc, "Current workspace is 'user:user-2'.\n", "ws", "~")
	expectKubectl(t, kc, ".\n└── user-2\n    └── project\n\n", "ws", "tree")
	expectKubectl(t, kc, "Current workspace is 'user:user-2:project' (type root:universal).\n", "ws", "~:project")
	if _, _, err := kubectl(t, kc, "get", "configmap", "at-home"); err == nil {
		t.Errorf("the nested workspace sees the home's configmap")
	}

	// Another user has a home of its own and cannot enter user-2's.
	other := kubeconfigFor(t, "user-3")
	expectKubectl(t, other, "Current workspace is 'user:user-3'.\n", "ws", "~")
	expectKubectlFails(t, other, `access to workspace "user:user-2" denied`, "ws", ":user:user-2")
	expectKubectlFails(t, other, `access to workspace "user:user-2:project" denied`, "ws", ":user:user-2:project")
}
