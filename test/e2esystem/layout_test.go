package e2esystem

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shardplane/shardplane/pkg/rootdir"
	"github.com/shardplane/shardplane/pkg/system"
)

// TestSystemDirectoryIsLaidOutLikeKCPs: where kcp's harness conventions
// look (cmd/sharded-test-server, kcp's e2e fixtures), the system directory
// has them: .kcp/admin.kubeconfig reaches the system as kcp-admin, the
// serving pair beside it is one its CA trusts, and the cache server's
// kubeconfig is .kcp-cache/cache.kubeconfig beside .kcp (kcp's fixtures
// read it with context "cache").
func TestSystemDirectoryIsLaidOutLikeKCPs(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	kubeconfigPath := filepath.Join(sys.Dir, system.KCPDir, system.AdminKubeconfigFile)
	raw, err := clientcmd.LoadFromFile(kubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	base, err := clientcmd.NewNonInteractiveClientConfig(*raw, "base", nil, nil).ClientConfig()
	if err != nil {
		t.Fatalf("context base of %s: %v", kubeconfigPath, err)
	}
	root := rest.CopyConfig(base)
	root.Host += "/clusters/root"
	if _, err := kube(t, root).CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{}); err != nil {
		t.Errorf("root's default namespace with %s: %v", kubeconfigPath, err)
	}

	// The serving pair beside it verifies under the kubeconfig's CA.
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw.Clusters[raw.Contexts["base"].Cluster].CertificateAuthorityData) {
		t.Fatalf("%s has no CA data", kubeconfigPath)
	}
	pemData, err := os.ReadFile(filepath.Join(sys.Dir, system.KCPDir, rootdir.ServingCertPairName+".crt"))
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pemData)
	if block == nil {
		t.Fatal("no certificate in .kcp/apiserver.crt")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "localhost"}); err != nil {
		t.Errorf(".kcp/apiserver.crt does not verify under the CA of .kcp/admin.kubeconfig: %v", err)
	}
	if _, err := os.Stat(filepath.Join(sys.Dir, system.KCPDir, rootdir.ServingCertPairName+".key")); err != nil {
		t.Errorf("the key of the serving pair: %v", err)
	}

	// kcp's fixture: Dir(kubeconfig)/../.kcp-cache/cache.kubeconfig, context cache.
	cachePath := filepath.Join(filepath.Dir(kubeconfigPath), "..", ".kcp-cache", "cache.kubeconfig")
	cacheRaw, err := clientcmd.LoadFromFile(cachePath)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := clientcmd.NewNonInteractiveClientConfig(*cacheRaw, "cache", nil, nil).ClientConfig()
	if err != nil {
		t.Fatalf("context cache of %s: %v", cachePath, err)
	}
	client, err := rest.HTTPClientFor(cache)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cache.Host+"/readyz", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("the cache server with %s: %v", cachePath, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || cache.Host != sys.CacheURL(t) {
		t.Errorf("%s: %s answered %d, want the cache server %s answering 200", cachePath, cache.Host, resp.StatusCode, sys.CacheURL(t))
	}
}
