package workspace

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestUseMovesThroughWorkspacesAndRecordsThemInTheKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	f := newFakeKCP(t)
	f.add("root:org", "organization")
	f.add("root:org:team", "team")
	kc := f.writeKubeconfig(t, 0o640)

	steps := []struct {
		args       []string
		wantOut    string
		wantServer string
	}{
		{args: []string{"."}, wantOut: "Current workspace is 'root'.\n", wantServer: "/clusters/root"},
		{args: []string{"use", "org"}, wantOut: "Current workspace is 'root:org' (type root:organization).\n", wantServer: "/clusters/root:org"},
		{args: []string{"team"}, wantOut: "Current workspace is 'root:org:team' (type root:team).\n", wantServer: "/clusters/root:org:team"},
		{args: []string{"current"}, wantOut: "Current workspace is 'root:org:team'.\n", wantServer: "/clusters/root:org:team"},
		{args: []string{".."}, wantOut: "Current workspace is 'root:org' (type root:organization).\n", wantServer: "/clusters/root:org"},
		{args: []string{"-"}, wantOut: "Current workspace is 'root:org:team'.\n", wantServer: "/clusters/root:org:team"},
		{args: []string{"-"}, wantOut: "Current workspace is 'root:org'.\n", wantServer: "/clusters/root:org"},
		{args: []string{":root:org:team", "--short"}, wantOut: "root:org:team\n", wantServer: "/clusters/root:org:team"},
		{args: []string{":"}, wantOut: "Current workspace is 'root' (type root).\n", wantServer: "/clusters/root"},
		{args: []string{"cd", "org:team"}, wantOut: "Current workspace is 'root:org:team' (type root:team).\n", wantServer: "/clusters/root:org:team"},
		{args: []string{"..:.."}, wantOut: "Current workspace is 'root' (type root).\n", wantServer: "/clusters/root"},
	}
	for _, s := range steps {
		out, errOut, err := runWS(t, kc, s.args...)
		if err != nil {
			t.Fatalf("kubectl ws %v: %v\n%s", s.args, err, errOut)
		}
		if out != s.wantOut {
			t.Errorf("kubectl ws %v printed %q, want %q", s.args, out, s.wantOut)
		}
		if got := currentServer(t, kc); got != f.srv.URL+s.wantServer {
			t.Errorf("after kubectl ws %v the current server is %q, want %q", s.args, got, f.srv.URL+s.wantServer)
		}
	}

	info, err := os.Stat(kc)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o640 {
		t.Errorf("kubeconfig mode = %v, want 0640 kept", info.Mode().Perm())
	}
	c, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	if c.CurrentContext != CurrentContextName {
		t.Errorf("current-context = %q", c.CurrentContext)
	}
	if got := c.Clusters["root"].Server; got != f.srv.URL+"/clusters/root" {
		t.Errorf("cluster root was changed to %q", got)
	}
	if got := c.Contexts["base"]; got.Cluster != "base" || got.AuthInfo != "kcp-admin" {
		t.Errorf("context base was changed: %+v", got)
	}
	if prev, err := ServerOf(c, PreviousContextName); err != nil || prev != f.srv.URL+"/clusters/root:org:team" {
		t.Errorf("previous workspace = %q, %v; want root:org:team", prev, err)
	}
}

func TestUseGoesHomeThroughRootsTildeWorkspace(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", "/home/alice")
	f := newFakeKCP(t)
	f.add(homeCluster.Join("project"), "universal")
	kc := f.writeKubeconfig(t, 0o600)

	out, errOut, err := runWS(t, kc)
	if err != nil {
		t.Fatalf("kubectl ws: %v\n%s", err, errOut)
	}
	if want := "Current workspace is '" + homeCluster.String() + "'.\n"; out != want {
		t.Errorf("kubectl ws printed %q, want %q", out, want)
	}
	if !strings.Contains(errOut, cdNote) {
		t.Errorf("bare kubectl ws should explain the cd semantics on stderr, got %q", errOut)
	}
	if got := currentServer(t, kc); got != homeCluster.URL(f.srv.URL) {
		t.Errorf("current server = %q, want the home workspace", got)
	}

	if _, _, err := runWS(t, kc, ":root"); err != nil {
		t.Fatal(err)
	}
	// The shell turns ~/project into /home/alice/project.
	out, errOut, err = runWS(t, kc, "/home/alice/project")
	if err != nil {
		t.Fatalf("kubectl ws ~/project: %v\n%s", err, errOut)
	}
	if want := "Current workspace is '" + homeCluster.String() + ":project' (type root:universal).\n"; out != want {
		t.Errorf("kubectl ws ~/project printed %q, want %q", out, want)
	}
	if _, _, err := runWS(t, kc, "use", "~"); err != nil {
		t.Fatal(err)
	}
	if got := currentServer(t, kc); got != homeCluster.URL(f.srv.URL) {
		t.Errorf("after use ~ the current server is %q, want the home workspace", got)
	}
}

func TestUseRefusesMissingOrForbiddenWorkspacesAndLeavesTheKubeconfigAlone(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	f := newFakeKCP(t)
	f.add("root:secret", "organization")
	f.add("root:org", "organization")
	f.add("root:org:hidden", "team")
	f.denied["root:secret"] = true
	f.denied["root:org:hidden"] = true
	f.hidden["root:org"] = true
	// A server answers 403 for a path below a workspace that does not exist.
	f.denied["root:gone:deeper"] = true
	f.hidden["root:gone"] = true
	f.mu.Lock()
	f.workspaces["root:slow"] = f.newWorkspace("root", "slow", nil, "Initializing")
	f.mu.Unlock()
	kc := f.writeKubeconfig(t, 0o600)
	before, err := os.ReadFile(kc)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{args: []string{"nope"}, wantErr: `workspace "root:nope" not found`},
		{args: []string{":root:org:nope"}, wantErr: `workspace "root:org:nope" not found`}, // discovery 404, parent 403
		{args: []string{"secret"}, wantErr: `access to workspace "root:secret" denied`},
		{args: []string{"gone:deeper"}, wantErr: `workspace "root:gone:deeper" not found: "root:gone" does not exist`},
		{args: []string{":root:org:hidden"}, wantErr: `access to workspace "root:org:hidden" denied`},
		{args: []string{"slow"}, wantErr: `workspace "root:slow" is not ready yet (phase Initializing)`},
		{args: []string{".."}, wantErr: "cannot go up from the top-level workspace"},
		{args: []string{"-"}, wantErr: "no previous workspace found in kubeconfig"},
		{args: []string{"Bad_Name"}, wantErr: `invalid workspace path "Bad_Name"`},
		{args: []string{"a", "b"}, wantErr: "accepts at most 1 arg"},
	} {
		_, errOut, err := runWS(t, kc, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("kubectl ws %v: error %v, want one containing %q", tc.args, err, tc.wantErr)
		}
		if !strings.Contains(errOut, "Error: ") {
			t.Errorf("kubectl ws %v should print the error on stderr, got %q", tc.args, errOut)
		}
		after, err := os.ReadFile(kc)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before, after) {
			t.Errorf("kubectl ws %v changed the kubeconfig", tc.args)
		}
	}
}

func TestUseOutsideAWorkspaceTakesAbsolutePathsOnly(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	f := newFakeKCP(t)
	f.add("root:org", "organization")
	kc := f.writeKubeconfig(t, 0o600)

	out, _, err := runWS(t, kc, "--context=base", ".")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Current workspace is the URL \"" + f.srv.URL + "\".\n"; out != want {
		t.Errorf("kubectl ws . on the base URL printed %q, want %q", out, want)
	}
	if _, _, err := runWS(t, kc, "--context=base", "org"); err == nil || !strings.Contains(err.Error(), "does not point to a workspace") {
		t.Errorf("relative path outside a workspace: %v", err)
	}
	out, _, err = runWS(t, kc, "--context=base", ":root:org")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Current workspace is 'root:org' (type root:organization).\n"; out != want {
		t.Errorf("printed %q, want %q", out, want)
	}
	c, err := clientcmd.LoadFromFile(kc)
	if err != nil {
		t.Fatal(err)
	}
	if prev := c.Contexts[PreviousContextName]; prev == nil || prev.Cluster != "base" {
		t.Errorf("previous context should be base's, got %+v", prev)
	}
}

func TestCreateWaitsUntilReadyAndEnters(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	f := newFakeKCP(t)
	f.readyAfter = 2
	kc := f.writeKubeconfig(t, 0o600)

	out, errOut, err := runWS(t, kc, "create", "org", "--type=root:Organization", "--enter")
	if err != nil {
		t.Fatalf("kubectl ws create: %v\n%s", err, errOut)
	}
	want := `Workspace "org" (type root:organization) created. Waiting for it to be ready...
Workspace "org" (type root:organization) is ready to use.
Current workspace is 'root:org' (type root:organization).
`
	if out != want {
		t.Errorf("kubectl ws create printed\n%s\nwant\n%s", out, want)
	}
	if got := currentServer(t, kc); got != f.srv.URL+"/clusters/root:org" {
		t.Errorf("current server = %q", got)
	}

	// kubectl create workspace, in the workspace entered above.
	var stdout, stderr bytes.Buffer
	cmd := NewCreateWorkspaceCommand(IOStreams{Out: &stdout, ErrOut: &stderr})
	cmd.SetArgs([]string{"--kubeconfig=" + kc, "team"})
	cmd.SetErr(&stderr)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("kubectl create workspace: %v\n%s", err, stderr.String())
	}
	if !strings.HasSuffix(stdout.String(), "Workspace \"team\" (type root:universal) is ready to use.\n") {
		t.Errorf("kubectl create workspace printed %q", stdout.String())
	}
	if got := currentServer(t, kc); got != f.srv.URL+"/clusters/root:org" {
		t.Errorf("without --enter the current workspace must stay root:org, is %q", got)
	}

	for _, tc := range []struct {
		args    []string
		wantOut string
		wantErr string
	}{
		{args: []string{"create", "team"}, wantErr: `workspaces.tenancy.kcp.io "team" already exists`},
		{args: []string{"create", "team", "--ignore-existing"}, wantOut: "Workspace \"team\" (type root:universal) already exists.\nWorkspace \"team\" (type root:universal) is ready to use.\n"},
		{args: []string{"create", "team", "--ignore-existing", "--type=universal"}, wantErr: "--ignore-existing must not be used with non-absolute type path"},
		{args: []string{"create", "team", "--ignore-existing", "--type=root:team"}, wantErr: `workspace "team" cannot be created with type root:team, it already exists with different type root:universal`},
		{args: []string{"create", "late", "--ready-timeout=0"}, wantErr: `Workspace "late" (type root:universal) created but is not ready to use`},
		{args: []string{"create"}, wantErr: "accepts 1 arg(s), received 0"},
	} {
		out, _, err := runWS(t, kc, tc.args...)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("kubectl ws %v: error %v, want one containing %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || out != tc.wantOut {
			t.Errorf("kubectl ws %v: %v, printed %q, want %q", tc.args, err, out, tc.wantOut)
		}
	}
}

func TestCreateReportsAWorkspaceThatDoesNotBecomeReady(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	f := newFakeKCP(t)
	f.readyAfter = 1 << 30
	kc := f.writeKubeconfig(t, 0o600)
	_, _, err := runWS(t, kc, "create", "stuck", "--ready-timeout="+(600*time.Millisecond).String())
	if err == nil || !strings.Contains(err.Error(), `workspace "root:stuck" is not ready after 600ms (phase Scheduling)`) {
		t.Errorf("error = %v", err)
	}
}

func TestTreePrintsTheWorkspacesBelowTheCurrentOne(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	f := newFakeKCP(t)
	f.add("root:org", "organization")
	f.add("root:org:a", "team")
	f.add("root:org:b", "team")
	f.add("root:org:b:c", "universal")
	f.add("root:other", "organization")
	kc := f.writeKubeconfig(t, 0o600)

	out, _, err := runWS(t, kc, "tree")
	if err != nil {
		t.Fatal(err)
	}
	want := `.
└── root
    ├── org
    │   ├── a
    │   └── b
    │       └── c
    └── other

`
	if out != want {
		t.Errorf("tree =\n%s\nwant\n%s", out, want)
	}
	if _, _, err := runWS(t, kc, "org"); err != nil {
		t.Fatal(err)
	}
	out, _, err = runWS(t, kc, "tree", "--full")
	if err != nil {
		t.Fatal(err)
	}
	want = `.
└── root:org
    ├── root:org:a
    └── root:org:b
        └── root:org:b:c

`
	if out != want {
		t.Errorf("tree --full =\n%s\nwant\n%s", out, want)
	}
}

func TestUseWritesIntoTheKubeconfigFilesOfKUBECONFIG(t *testing.T) {
	f := newFakeKCP(t)
	f.add("root:org", "organization")
	first := f.writeKubeconfig(t, 0o600)
	other := clientcmdapi.NewConfig()
	other.Clusters["elsewhere"] = &clientcmdapi.Cluster{Server: "https://elsewhere.invalid"}
	other.Contexts["elsewhere"] = &clientcmdapi.Context{Cluster: "elsewhere"}
	second := filepath.Join(t.TempDir(), "second")
	if err := clientcmd.WriteToFile(*other, second); err != nil {
		t.Fatal(err)
	}
	secondBefore, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", first+string(os.PathListSeparator)+second)

	var out, errOut bytes.Buffer
	cmd := NewWorkspaceCommand(IOStreams{Out: &out, ErrOut: &errOut})
	cmd.SetArgs([]string{"org"})
	cmd.SetErr(&errOut)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("kubectl ws org: %v\n%s", err, errOut.String())
	}
	if got := currentServer(t, first); got != f.srv.URL+"/clusters/root:org" {
		t.Errorf("first file's current server = %q", got)
	}
	secondAfter, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(secondBefore, secondAfter) {
		t.Errorf("the second file of KUBECONFIG was rewritten:\n%s", secondAfter)
	}
}
