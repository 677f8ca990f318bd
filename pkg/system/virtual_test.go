package system

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shardplane/shardplane/pkg/frontproxy"
	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/rootdir"
)

// TestPrepareWithVirtualWorkspacesWritesTheirRoutesAndKubeconfigs: with a
// virtual-workspaces program, every shard gets a port, a serving
// certificate the front-proxy trusts and a privileged kubeconfig, the
// mapping routes /services/ and /shards/<shard>/ to them, and the shards
// stop serving the views themselves.
func TestPrepareWithVirtualWorkspacesWritesTheirRoutesAndKubeconfigs(t *testing.T) {
	dir, err := rootdir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &System{o: Options{Dir: string(dir), Shards: 2, FrontProxies: 1, VirtualWorkspacesBinary: "/bin/true"}, dir: dir}
	if err := s.prepare(); err != nil {
		t.Fatal(err)
	}
	routes, err := frontproxy.LoadMappings(dir.Path("mapping.yaml"))
	if err != nil {
		t.Fatalf("the front-proxy cannot load the mapping: %v", err)
	}
	var paths []string
	for _, r := range routes {
		paths = append(paths, r.Path+" "+r.Backend)
	}
	for _, want := range []string{
		"/services/ " + s.VirtualWorkspacesURL("root"),
		"/shards/root/ " + s.VirtualWorkspacesURL("root"),
		"/shards/shard-1/ " + s.VirtualWorkspacesURL("shard-1"),
	} {
		if !slices.Contains(paths, want) {
			t.Errorf("mapping lacks %q: %v", want, paths)
		}
	}
	if s.VirtualWorkspacesURL("shard-1") == s.ShardURL("shard-1") {
		t.Errorf("shard-1's virtual workspaces are served by the shard")
	}
	for _, f := range []string{"virtual-workspaces-root.kubeconfig", "virtual-workspaces-shard-1.kubeconfig", externalAdminKubeconfig} {
		if _, err := os.Stat(dir.Path(f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	args := strings.Join(s.shardArgs("shard-1"), " ")
	if !strings.Contains(args, "--run-virtual-workspaces=false") {
		t.Errorf("shard args %s keep the in-process virtual workspaces", args)
	}
	vwArgs := strings.Join(s.virtualWorkspacesArgs("shard-1"), " ")
	for _, want := range []string{"--kubeconfig=" + dir.Path("virtual-workspaces-shard-1.kubeconfig"), "--client-ca-file=" + filepath.Join(string(dir), "shard-1", rootdir.ClientCACertFile), "--requestheader-allowed-names=" + identities.FrontProxyUser} {
		if !strings.Contains(vwArgs, want) {
			t.Errorf("virtual-workspaces args %s lack %s", vwArgs, want)
		}
	}
}

// TestPrepareWithoutVirtualWorkspacesRoutesToTheShards: without the
// program the shards serve the views and the mapping points there.
func TestPrepareWithoutVirtualWorkspacesRoutesToTheShards(t *testing.T) {
	dir, err := rootdir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &System{o: Options{Dir: string(dir), Shards: 2, FrontProxies: 1}, dir: dir}
	if err := s.prepare(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(dir.Path("mapping.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "path: /shards/shard-1/\n  backend: "+s.ShardURL("shard-1")) {
		t.Errorf("mapping does not route /shards/shard-1/ to the shard:\n%s", data)
	}
	if strings.Contains(strings.Join(s.shardArgs("root"), " "), "run-virtual-workspaces") {
		t.Errorf("shards are told about virtual workspaces without the program")
	}
}
