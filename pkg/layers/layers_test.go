package layers

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// servers are the packages that assemble binaries: they alone, besides
// cmd/ and test/ (which this test does not read), import a server package,
// an admission plugin or a controller. Everything under pkg/virtual belongs
// to the virtual-workspaces binary (its framework, the builtin assembly and
// the views, which the shard also serves in-process).
var servers = []string{"pkg/shard", "pkg/frontproxy", "pkg/cacheserver", "pkg/system", "pkg/virtual"}

// belowServers sit inside a server's folder but are for anyone:
// pkg/virtual/viewurl only spells the views' URLs, for the controllers that
// publish them.
var belowServers = []string{"pkg/virtual/viewurl"}

// edge is one import, by paths relative to the module.
type edge struct{ from, to string }

// in tells whether package p is root or below it.
func in(p, root string) bool { return p == root || strings.HasPrefix(p, root+"/") }

func inAny(p string, roots []string) bool {
	for _, r := range roots {
		if in(p, r) {
			return true
		}
	}
	return false
}

func isServer(p string) bool { return inAny(p, servers) && !inAny(p, belowServers) }

// upward returns why an import of to by from runs the wrong way, or "".
// Imports of tests are not judged: a test may wire packages as a binary
// does.
func upward(from, to string) string {
	switch {
	case in(from, "pkg/controllers") && in(to, "pkg/admission"):
		return "controllers do not import admission plugins"
	case in(from, "pkg/admission") && in(to, "pkg/controllers"):
		return "admission plugins do not import controllers"
	case in(from, "pkg/authentication") && in(to, "pkg/authorization"),
		in(from, "pkg/authorization") && in(to, "pkg/authentication"):
		return "authentication and authorization do not import each other; what both need lives below them (pkg/scope)"
	case in(from, "pkg/storage") && in(to, "pkg/exepages"):
		return "storage does not page the process; the binaries set its hooks (storage.OnMemoryReturned, embeddedetcd.Options.PageOut)"
	case isServer(from):
		return ""
	case isServer(to):
		return "only the server packages import a server package"
	case in(to, "pkg/admission") && !in(from, "pkg/admission"):
		return "only the server packages assemble admission plugins"
	case in(to, "pkg/controllers") && !in(from, "pkg/controllers"):
		return "only the server packages run controllers"
	}
	return ""
}

func TestUpwardNamesTheRule(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		upward   bool
	}{
		{"pkg/controllers/apibinding", "pkg/admission/apibinding", true},
		{"pkg/admission/resourcequota", "pkg/controllers/resourcequota", true},
		{"pkg/authorization/warrants", "pkg/authentication/serviceaccount", true},
		{"pkg/authentication/scope", "pkg/authorization", true},
		{"pkg/storage/embeddedetcd", "pkg/exepages", true},
		{"pkg/home", "pkg/admission/workspace", true},
		{"pkg/globalinformers", "pkg/cacheserver", true},
		{"pkg/controllers/workspacetype", "pkg/virtual/framework", true},
		{"pkg/controllers/workspacetype", "pkg/virtual/viewurl", false},
		{"pkg/controllers/apibinding", "pkg/controllers/loop", false},
		{"pkg/admission/policy", "pkg/admission/percluster", false},
		{"pkg/shard", "pkg/admission/workspace", false},
		{"pkg/shard", "pkg/cacheserver", false},
		{"pkg/shard", "pkg/exepages", false},
		{"pkg/virtual/apiexport", "pkg/virtual/framework", false},
		{"pkg/frontproxy", "pkg/authorization/workspacecontent", false},
		{"pkg/authorization/warrants", "pkg/scope", false},
		{"pkg/authentication/serviceaccount", "pkg/scope", false},
		{"pkg/controllers/replication", "pkg/authorization/clusterrbac", false},
		{"pkg/storagex", "pkg/exepages", false},
	} {
		if got := upward(tc.from, tc.to) != ""; got != tc.upward {
			t.Errorf("upward(%s → %s) = %v, want %v", tc.from, tc.to, got, tc.upward)
		}
	}
}

// TestImportsRunOneWay reads the imports of every package under pkg/ with
// go list and fails on each that runs upward.
func TestImportsRunOneWay(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH: the imports are read with go list")
	}
	cmd := exec.Command("go", "list", "-f", `{{.Module.Path}} {{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./pkg/...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list: %v\n%s", err, exit.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	seen := map[edge]bool{}
	packages := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		prefix := f[0] + "/"
		from := strings.TrimPrefix(f[1], prefix)
		packages++
		for _, imp := range f[2:] {
			to, ours := strings.CutPrefix(imp, prefix)
			if !ours {
				continue
			}
			e := edge{from, to}
			seen[e] = true
			if why := upward(from, to); why != "" {
				t.Errorf("%s imports %s: %s", from, to, why)
			}
		}
	}
	if packages == 0 || !seen[edge{"pkg/shard", "pkg/storage"}] {
		t.Fatalf("go list read %d packages, and not pkg/shard's import of pkg/storage: the test reads the wrong tree", packages)
	}
}
