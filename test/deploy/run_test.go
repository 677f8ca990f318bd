package deploy

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shardplane/shardplane/test/framework"
)

func TestMain(m *testing.M) {
	code := m.Run()
	framework.RemoveBinary()
	if etcdBuild.path != "" && os.Getenv("SHARDPLANE_E2E_ETCD_BINARY") == "" {
		_ = os.RemoveAll(filepath.Dir(etcdBuild.path))
	}
	os.Exit(code)
}

// startOrder is the order pods start in, as their dependencies need:
// etcd, the cache server, the root shard, the other shards, the
// front-proxy, the virtual-workspaces servers (which authorize through the
// front-proxy). (In a cluster they start together and retry.)
func startOrder(p *localPod) int {
	switch {
	case p.component == "etcd":
		return 0
	case p.component == "cache-server":
		return 1
	case p.component == "shard" && p.instance == "root":
		return 2
	case p.component == "shard":
		return 3
	case p.component == "virtual-workspaces":
		return 5
	default:
		return 4
	}
}

// runRelease renders the chart with a values file, issues its
// certificates, and runs every rendered pod's command line as the real
// binary on loopback, each until its readiness probe passes.
func runRelease(t *testing.T, valuesFile string, given map[string]map[string][]byte) *cluster {
	t.Helper()
	objs := render(t, valuesFile)
	secrets, err := issueCertificates(objs)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range given {
		secrets[name] = data
	}
	c := newCluster(t, objs, secrets)
	pods := append([]*localPod(nil), c.pods...)
	sort.SliceStable(pods, func(i, j int) bool { return startOrder(pods[i]) < startOrder(pods[j]) })
	for _, p := range pods {
		c.materialize(t, p)
		ctr := p.spec.Containers[0]
		if len(ctr.Command) == 0 {
			t.Fatalf("pod %s: the container names no command", p.name)
		}
		args := c.args(t, p)
		proc := &framework.Process{
			Name:     p.name,
			Binary:   commandBinary(t, ctr.Command[0]),
			Args:     func() []string { return args },
			WorkDir:  p.dir,
			ReadyURL: p.probeURL(t, ctr.ReadinessProbe),
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("%s %s\nlog tail:\n%s", ctr.Command[0], strings.Join(args, " "), proc.LogTail(40))
			}
			// etcd ends itself with the signal it got, after a clean
			// shutdown; the others exit 0.
			if err := proc.Stop(); err != nil && !(p.component == "etcd" && strings.HasSuffix(err.Error(), "signal: terminated")) {
				t.Errorf("stop %s: %v", p.name, err)
			}
		})
		if err := proc.Start(); err != nil {
			t.Fatalf("pod %s (%s) did not become ready: %v\n%s", p.name, ctr.Command[0], err, c.verboseProbe(t, proc.ReadyURL))
		}
		for _, probe := range []struct {
			name string
			url  string
		}{{"liveness", p.probeURL(t, ctr.LivenessProbe)}, {"startup", p.probeURL(t, ctr.StartupProbe)}} {
			if code, body := get(t, insecureClient(), probe.url, ""); code != http.StatusOK {
				t.Fatalf("pod %s: %s probe %s answered %d: %s", p.name, probe.name, probe.url, code, body)
			}
		}
	}
	return c
}

// verboseProbe says which checks of a readiness endpoint fail and why, as
// system:masters (the shards' client certificate), which may see reasons.
func (c *cluster) verboseProbe(t *testing.T, url string) string {
	client := insecureClient()
	client.Timeout = time.Minute
	if data, ok := c.secrets[releaseName+"-shardplane-shard-client-tls"]; ok {
		if pair, err := tls.X509KeyPair(data["tls.crt"], data["tls.key"]); err == nil {
			client.Transport.(*http.Transport).TLSClientConfig.Certificates = []tls.Certificate{pair}
		}
	}
	resp, err := client.Get(url + "?verbose")
	if err != nil {
		return fmt.Sprintf("GET %s?verbose: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8192))
	return fmt.Sprintf("GET %s?verbose: %d\n%s", url, resp.StatusCode, body)
}

func insecureClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // probes only
}

// clientWithCert trusts the release's server CA and presents the client
// certificate of a Secret the release issues.
func (c *cluster) clientWithCert(t *testing.T, caSecret, certSecret string) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.secrets[caSecret]["ca.crt"]) {
		t.Fatalf("no CA in Secret %s", caSecret)
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certSecret != "" {
		pair, err := tls.X509KeyPair(c.secrets[certSecret]["tls.crt"], c.secrets[certSecret]["tls.key"])
		if err != nil {
			t.Fatalf("client certificate %s: %v", certSecret, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
}

func get(t *testing.T, client *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body)
}

// frontProxyURL is the loopback URL of the front-proxy Service.
func (c *cluster) frontProxyURL(t *testing.T) string {
	t.Helper()
	return c.serviceURL(t, releaseName+"-shardplane-front-proxy", 443)
}

// serviceURL is the loopback URL of a Service's port.
func (c *cluster) serviceURL(t *testing.T, service string, port int) string {
	t.Helper()
	host := fmt.Sprintf("%s.%s.svc:%d", service, namespace, port)
	local := c.addresses.Replace(host)
	if local == host {
		t.Fatalf("no Service %s with port %d is running", service, port)
	}
	return "https://" + local
}

// shardNames lists the Shards in root through the front-proxy, as the
// release's admin (system:kcp:admin, from its client certificate).
func (c *cluster) shardNames(t *testing.T) []string {
	t.Helper()
	client := c.clientWithCert(t, releaseName+"-shardplane-front-proxy-tls", releaseName+"-shardplane-admin-client-tls")
	code, body := get(t, client, c.frontProxyURL(t)+"/clusters/root/apis/core.kcp.io/v1alpha1/shards", "")
	if code != http.StatusOK {
		t.Fatalf("list shards through the front-proxy as shardplane-admin: %d %s", code, body)
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Metadata.Name)
	}
	sort.Strings(names)
	return names
}

// TestChartComponentsStartAndBecomeReady runs the releases of the
// all-in-one example and of a two-shard system as the chart renders them,
// with the real binaries, and uses them through the front-proxy.
func TestChartComponentsStartAndBecomeReady(t *testing.T) {
	t.Run("all-in-one", func(t *testing.T) {
		c := runRelease(t, repoPath(t, "deploy/examples/all-in-one.yaml"), nil)
		if got := strings.Join(c.shardNames(t), ","); got != "root" {
			t.Fatalf("shards in root: %s, want root", got)
		}
		c.checkDashboardMetrics(t)
		// The example serves the views in-process: no server of their own.
		if n := c.podsOf("virtual-workspaces"); n != 0 {
			t.Fatalf("%d virtual-workspaces pods rendered, want none (in-process views)", n)
		}
		c.initializingViews(t, "root")
	})
	t.Run("two-shards", func(t *testing.T) {
		const token = "alice-token-for-the-chart-check"
		tokens := map[string]map[string][]byte{
			releaseName + "-tokens": {"tokens.csv": []byte(token + `,alice,alice,"team-a"` + "\n")},
		}
		c := runRelease(t, repoPath(t, "test/deploy/testdata/values-two-shards.yaml"), tokens)
		if got := strings.Join(c.shardNames(t), ","); got != "beta,root" {
			t.Fatalf("shards in root: %s, want beta,root", got)
		}
		c.checkDashboardMetrics(t)
		// The token file reaches the front-proxy: alice is authenticated
		// (whatever RBAC then decides), a wrong token is not.
		client := c.clientWithCert(t, releaseName+"-shardplane-front-proxy-tls", "")
		url := c.frontProxyURL(t) + "/clusters/root/api/v1/namespaces"
		if code, body := get(t, client, url, token); code == http.StatusUnauthorized {
			t.Fatalf("alice's token was refused by the front-proxy: %d %s", code, body)
		}
		if code, _ := get(t, client, url, "not-a-token"); code != http.StatusUnauthorized {
			t.Fatalf("an unknown token got %d from the front-proxy, want 401", code)
		}
		// Each shard has its own virtual-workspaces server, and the views
		// through them refuse alice after asking root (a SubjectAccessReview
		// through the front-proxy) whether she may initialize.
		if n := c.podsOf("virtual-workspaces"); n != 2 {
			t.Fatalf("%d virtual-workspaces pods run, want one per shard", n)
		}
		views := c.initializingViews(t, "beta", "root")
		for _, view := range views {
			code, body := get(t, client, view, token)
			if !forbiddenByView(code, body, "alice") {
				t.Fatalf("GET %s as alice: %d %s, want 403 from the view", view, code, body)
			}
		}
		// The shards run with --run-virtual-workspaces=false and still
		// answer /services/ on their own port, as kcp's shards do: they
		// forward to their virtual-workspaces server as the caller.
		admin := c.clientWithCert(t, releaseName+"-shardplane-shard-root-tls", releaseName+"-shardplane-admin-client-tls")
		anyone := c.clientWithCert(t, releaseName+"-shardplane-shard-root-tls", "")
		for _, shard := range []string{"root", "beta"} {
			direct := strings.Replace(views[len(views)-1], c.frontProxyURL(t), c.serviceURL(t, releaseName+"-shardplane-shard-"+shard, 6443), 1)
			code, body := get(t, admin, direct, "")
			if code != http.StatusOK || !strings.Contains(body, `"kind":"LogicalClusterList"`) {
				t.Fatalf("GET %s on shard %s itself as shardplane-admin: %d %.300s, want a LogicalClusterList from its view", direct, shard, code, body)
			}
			if code, body := get(t, anyone, direct, token); !forbiddenByView(code, body, "alice") {
				t.Fatalf("GET %s on shard %s itself as alice: %d %.300s, want 403 from the view", direct, shard, code, body)
			}
		}
	})
}
