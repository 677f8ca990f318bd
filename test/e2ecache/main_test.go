// Package e2ecache tests the cache server as a process: one cache-server
// with embedded etcd, started once for the package, written to and read by
// token users as shards and their readers would.
package e2ecache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

// Token users of the shared cache server.
const (
	writer   = "writer"   // in the writer group: a shard
	reader   = "reader"   // in the reader group
	stranger = "stranger" // authenticated, in neither group
)

// cache is the cache server every test of the package shares.
var cache struct {
	proc     *framework.Process
	rootDir  string
	port     int
	etcdPort int
	tokens   map[string]string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	defer framework.RemoveBinary()
	bin, err := framework.BuildCommand("cache-server")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "shardplane-e2e-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ports, err := framework.FindFreePorts(3)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cache.port, cache.etcdPort = ports[0], ports[1]
	cache.rootDir = filepath.Join(dir, "root")
	tokenFile := filepath.Join(dir, "tokens.csv")
	if cache.tokens, err = writeTokens(tokenFile, map[string]string{
		writer: identities.CacheWriterGroup, reader: identities.CacheReaderGroup, stranger: "",
	}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cache.proc = &framework.Process{
		Name:    "cache-server",
		Binary:  bin,
		WorkDir: dir,
		Args: func() []string {
			return []string{
				"--root-directory=" + cache.rootDir,
				"--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(ports[0]),
				"--embedded-etcd-client-port=" + strconv.Itoa(ports[1]),
				"--embedded-etcd-peer-port=" + strconv.Itoa(ports[2]),
				"--token-auth-file=" + tokenFile,
			}
		},
		ReadyURL:   fmt.Sprintf("https://127.0.0.1:%d/readyz", ports[0]),
		ReadyFiles: func() []string { return []string{filepath.Join(cache.rootDir, "admin.kubeconfig")} },
	}
	if err := cache.proc.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "start cache server: %v\n%s\n", err, cache.proc.LogTail(60))
		return 1
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "tail of the cache server log:\n%s\n", cache.proc.LogTail(100))
	}
	if err := cache.proc.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop cache server:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// writeTokens writes a static token file (token,user,uid,"groups") with a
// random token per user, and returns the tokens by user.
func writeTokens(path string, groups map[string]string) (map[string]string, error) {
	tokens := map[string]string{}
	var b strings.Builder
	for user, group := range groups {
		raw := make([]byte, 16)
		if _, err := rand.Read(raw); err != nil {
			return nil, err
		}
		tokens[user] = hex.EncodeToString(raw)
		fmt.Fprintf(&b, "%s,%s,%s", tokens[user], user, user)
		if group != "" {
			fmt.Fprintf(&b, ",%q", group)
		}
		b.WriteString("\n")
	}
	return tokens, os.WriteFile(path, []byte(b.String()), 0o600)
}

// baseURL is the cache server's URL.
func baseURL() string { return fmt.Sprintf("https://127.0.0.1:%d", cache.port) }

// config is a token user's client of the replicas of one shard and one
// cluster (either may be the wildcard), trusting the serving certificate
// the admin kubeconfig carries.
func config(t *testing.T, user string, shard cacheclient.Shard, cluster logicalcluster.Name) *rest.Config {
	t.Helper()
	admin, err := clientcmd.BuildConfigFromFlags("", filepath.Join(cache.rootDir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if admin.Host != baseURL() {
		t.Fatalf("admin kubeconfig names %s, want %s", admin.Host, baseURL())
	}
	return &rest.Config{
		Host:            cacheclient.URL(admin.Host, shard, cluster),
		BearerToken:     cache.tokens[user],
		TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData},
		QPS:             -1,
		UserAgent:       "shardplane-e2e-cache",
	}
}

func dynamicClient(t *testing.T, user string, shard cacheclient.Shard, cluster logicalcluster.Name) *dynamic.DynamicClient {
	t.Helper()
	c, err := dynamic.NewForConfig(config(t, user, shard, cluster))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// uniqueName returns a name no other test uses.
func uniqueName(prefix string) string {
	return prefix + strings.TrimPrefix(framework.UniqueClusterName("t"), "e2e-t")
}

// testContext ends with the test.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}
