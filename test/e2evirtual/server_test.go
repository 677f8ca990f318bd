package e2evirtual

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shardplane/shardplane/pkg/rootdir"
	"github.com/shardplane/shardplane/pkg/system"
)

// TestVirtualWorkspaceServersServeHealthToAllAndMetricsToAdmins: each
// shard's virtual-workspaces process answers /healthz /livez /readyz to
// anyone, /metrics to system:masters only.
func TestVirtualWorkspaceServersServeHealthToAllAndMetricsToAdmins(t *testing.T) {
	var ports struct {
		VirtualWorkspaces map[string]int `json:"virtualWorkspaces"`
	}
	var tokens struct {
		SystemAdmin string `json:"systemAdmin"`
	}
	for file, into := range map[string]interface{}{"ports.json": &ports, "system-tokens.json": &tokens} {
		data, err := os.ReadFile(filepath.Join(sys.Dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, into); err != nil {
			t.Fatal(err)
		}
	}
	for _, shard := range []string{system.ShardName(0), system.ShardName(1)} {
		port := ports.VirtualWorkspaces[shard]
		if port == 0 {
			t.Fatalf("no virtual-workspaces port for shard %s in ports.json", shard)
		}
		pem, err := os.ReadFile(filepath.Join(sys.Dir, "virtual-workspaces-"+shard, rootdir.ServingCertPairName+".crt"))
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
		get := func(path, token string) int {
			req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", port, path), nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("GET %s of %s: %v", path, shard, err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		for _, path := range []string{"/healthz", "/livez", "/readyz"} {
			if code := get(path, ""); code != http.StatusOK {
				t.Errorf("%s %s: %d, want 200", shard, path, code)
			}
		}
		if code := get("/metrics", ""); code != http.StatusForbidden {
			t.Errorf("%s /metrics anonymously: %d, want 403", shard, code)
		}
		if code := get("/metrics", tokens.SystemAdmin); code != http.StatusOK {
			t.Errorf("%s /metrics as system:masters: %d, want 200", shard, code)
		}
	}
}
