package e2ecache

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/cacheserver"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/rootdir"
	"github.com/shardplane/shardplane/test/framework"
)

// TestCacheServerWithSyntheticDelayServes starts a cache server with the
// command line kcp's sharded-test-server gives its cache server
// (cmd/sharded-test-server/cache.go), --synthetic-delay included, which
// holds every request before serving it: it becomes ready, generates its
// serving pair where kcp's harness waits for it, and a writer creates and
// reads a replica through it. The delay itself is checked by the unit test
// of the filter, not by timing here.
func TestCacheServerWithSyntheticDelayServes(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	ports := framework.FreePorts(t, 3)
	rootDir := filepath.Join(t.TempDir(), "root")
	p := &framework.Process{
		Name:    "cache-server-delayed",
		Binary:  framework.CommandBinary(t, "cache-server"),
		WorkDir: t.TempDir(),
		Args: func() []string {
			return []string{
				"--root-directory=" + rootDir,
				"--embedded-etcd-client-port=" + strconv.Itoa(ports[1]),
				"--embedded-etcd-peer-port=" + strconv.Itoa(ports[2]),
				"--secure-port=" + strconv.Itoa(ports[0]),
				"--synthetic-delay=200ms",
			}
		},
		ReadyURL: fmt.Sprintf("https://127.0.0.1:%d/readyz", ports[0]),
		ReadyFiles: func() []string {
			return []string{filepath.Join(rootDir, cacheserver.WriterKubeconfigFile), filepath.Join(rootDir, rootdir.ServingCertPairName+".crt")}
		},
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("tail of %s:\n%s", p.LogPath(), p.LogTail(60))
		}
		if err := p.Stop(); err != nil {
			t.Errorf("stop cache server: %v", err)
		}
	})
	if err := p.Start(); err != nil {
		t.Fatalf("start cache server with --synthetic-delay: %v", err)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(rootDir, cacheserver.WriterKubeconfigFile))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Host = cacheclient.URL(cfg.Host, cacheclient.Shard(uniqueName("s-")), logicalcluster.Name(uniqueName("c-")))
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueName("export-")
	if _, err := client.Resource(apiExports).Create(ctx, apiExport(name, ""), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create a replica through the delayed cache server: %v", err)
	}
	if _, err := client.Resource(apiExports).Get(ctx, name, metav1.GetOptions{}); err != nil {
		t.Errorf("read the replica back: %v", err)
	}
}
