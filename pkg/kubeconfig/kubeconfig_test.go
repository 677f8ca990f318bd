package kubeconfig

import (
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestWrittenContextsReachTheirServersWithTheirCredentials(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.kubeconfig")
	contexts := Workspaces("https://127.0.0.1:6443/", "kcp-admin", Token("a"), logicalcluster.Root, logicalcluster.SystemAdmin)
	contexts = append(contexts, Context{Name: "shard-base", Cluster: "base", Server: "https://127.0.0.1:6443/", User: "shard-admin", Auth: Token("b")})
	if err := Write(path, []byte("ca"), contexts...); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "root" {
		t.Errorf("current context %q, want the first, root", cfg.CurrentContext)
	}
	if len(cfg.Contexts) != 4 || len(cfg.Clusters) != 3 || len(cfg.AuthInfos) != 2 {
		t.Errorf("%d contexts, %d clusters, %d users; want 4, 3, 2", len(cfg.Contexts), len(cfg.Clusters), len(cfg.AuthInfos))
	}
	for name, want := range map[string][2]string{
		"root":         {"https://127.0.0.1:6443/clusters/root", "a"},
		"system:admin": {"https://127.0.0.1:6443/clusters/system:admin", "a"},
		"base":         {"https://127.0.0.1:6443/", "a"},
		"shard-base":   {"https://127.0.0.1:6443/", "b"},
	} {
		c := cfg.Contexts[name]
		if c == nil {
			t.Errorf("context %s missing", name)
			continue
		}
		cluster := cfg.Clusters[c.Cluster]
		if cluster.Server != want[0] || string(cluster.CertificateAuthorityData) != "ca" {
			t.Errorf("context %s: server %q, CA %q; want %q, ca", name, cluster.Server, cluster.CertificateAuthorityData, want[0])
		}
		if got := cfg.AuthInfos[c.AuthInfo].Token; got != want[1] {
			t.Errorf("context %s: token %q, want %q", name, got, want[1])
		}
	}
}

func TestWriteRefusesAKubeconfigWithoutContexts(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), "k"), nil); err == nil {
		t.Fatal("want an error")
	}
}
