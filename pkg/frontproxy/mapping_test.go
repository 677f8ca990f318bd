package frontproxy

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/shardplane/shardplane/pkg/rootdir"
)

// TestMappingRoutesServicesAndShardPrefixesToVirtualWorkspaceServers loads
// a mapping as run-system writes it — /clusters/ by the index, /services/
// to one virtual workspace server, /shards/<shard>/ to each shard's — and
// checks that each path goes to its backend with its full path.
func TestMappingRoutesServicesAndShardPrefixesToVirtualWorkspaceServers(t *testing.T) {
	dir, err := rootdir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dir.EnsureCA("proxy-ca", "proxy-ca"); err != nil {
		t.Fatal(err)
	}
	cert, key, err := dir.EnsureClientCert("proxy", "proxy-ca", "front-proxy")
	if err != nil {
		t.Fatal(err)
	}
	serving, _, err := dir.EnsureServingCert(rootdir.ServingHosts("https://127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	entry := func(path, backend string) string {
		return fmt.Sprintf("- path: %s\n  backend: %s\n  backend_server_ca: %s\n  proxy_client_cert: %s\n  proxy_client_key: %s\n", path, backend, serving, cert, key)
	}
	mapping := entry("/clusters/", "https://root:1") + entry("/services/", "https://vw-root:2") +
		entry("/shards/root/", "https://vw-root:2") + entry("/shards/shard-1/", "https://vw-1:3")
	file := filepath.Join(t.TempDir(), "mapping.yaml")
	if err := os.WriteFile(file, []byte(mapping), 0o600); err != nil {
		t.Fatal(err)
	}
	routes, err := LoadMappings(file)
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(routes, nil, nil, nil)
	for path, want := range map[string]string{
		"/services/apiexport/a/e/clusters/*/apis/g/v/r":                 "https://vw-root:2/services/apiexport/a/e/clusters/*/apis/g/v/r",
		"/shards/shard-1/services/apiexport/a/e/clusters/*/apis/g/v/r":  "https://vw-1:3/shards/shard-1/services/apiexport/a/e/clusters/*/apis/g/v/r",
		"/shards/root/services/initializingworkspaces/x/clusters/*/api": "https://vw-root:2/shards/root/services/initializingworkspaces/x/clusters/*/api",
		"/clusters/root/api": "", // routed by the index
	} {
		r := p.match(path)
		if r == nil {
			t.Errorf("%s: no route", path)
			continue
		}
		got := ""
		if r.Path != ClustersPath {
			u := withPath(r.backend, path)
			got = u.Scheme + "://" + u.Host + u.Path
		}
		if got != want {
			t.Errorf("%s: routed to %q, want %q", path, got, want)
		}
	}
	if r := p.match("/shards/shard-2/services/apiexport/a/e"); r != nil {
		t.Errorf("a shard without a mapping is routed to %s", r.Backend)
	}
}
