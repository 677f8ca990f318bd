package rootdir

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

func TestGeneratedFilesAreCreatedOnceAndKept(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "root"))
	if err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(d.Path(name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ca, err := d.EnsureClientCA()
	if err != nil {
		t.Fatal(err)
	}
	sa, err := d.EnsureServiceAccountKey()
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := d.EnsureServingCert(ServingHosts("https://shard.example:6443", net.ParseIP("10.0.0.7")))
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := d.EnsureAdminTokens()
	if err != nil {
		t.Fatal(err)
	}
	if tokens.KCPAdmin == "" || tokens.ShardAdmin == "" || tokens.LogicalClusterAdmin == "" || tokens.KCPAdmin == tokens.ShardAdmin {
		t.Fatalf("tokens %+v: want three distinct non-empty tokens", tokens)
	}
	before := map[string]string{}
	for _, f := range []string{ca, sa, cert, key} {
		before[f] = read(filepath.Base(f))
	}

	// A second start reuses everything.
	if _, err := d.EnsureClientCA(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.EnsureServiceAccountKey(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.EnsureServingCert(ServingHosts("https://other.example")); err != nil {
		t.Fatal(err)
	}
	again, err := d.EnsureAdminTokens()
	if err != nil || again != tokens {
		t.Fatalf("tokens changed on the second start: %+v, %v", again, err)
	}
	for f, content := range before {
		if read(filepath.Base(f)) != content {
			t.Errorf("%s changed on the second start", f)
		}
	}
	for _, secret := range []string{ClientCAKeyFile, ServiceAccountKeyFile, ServingCertPairName + ".key", adminTokensFile} {
		if fi, err := os.Stat(d.Path(secret)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", secret, fi.Mode().Perm(), err)
		}
	}

	block, _ := pem.Decode([]byte(before[cert]))
	parsed, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"shard.example", "localhost", "127.0.0.1", "10.0.0.7"} {
		if err := parsed.VerifyHostname(host); err != nil {
			t.Errorf("serving certificate does not cover %s: %v", host, err)
		}
	}
}

func TestAdminKubeconfigHasKCPsContexts(t *testing.T) {
	path := filepath.Join(t.TempDir(), AdminKubeconfigFile)
	tokens := AdminTokens{KCPAdmin: "a", ShardAdmin: "b", LogicalClusterAdmin: "c"}
	if err := WriteAdminKubeconfig(path, "https://127.0.0.1:6443", []byte("ca"), tokens); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "root" {
		t.Errorf("current context %q, want root", cfg.CurrentContext)
	}
	for ctx, want := range map[string][2]string{
		"root":         {"https://127.0.0.1:6443/clusters/root", "a"},
		"base":         {"https://127.0.0.1:6443", "a"},
		"system:admin": {"https://127.0.0.1:6443/clusters/system:admin", "a"},
		"shard-base":   {"https://127.0.0.1:6443", "b"},
	} {
		c := cfg.Contexts[ctx]
		if c == nil {
			t.Errorf("context %s missing", ctx)
			continue
		}
		if got := cfg.Clusters[c.Cluster].Server; got != want[0] {
			t.Errorf("context %s: server %q, want %q", ctx, got, want[0])
		}
		if got := cfg.AuthInfos[c.AuthInfo].Token; got != want[1] {
			t.Errorf("context %s: token %q, want %q", ctx, got, want[1])
		}
	}
}

func TestServingHostsCoverBaseURLLoopbackAndBoundAddresses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		baseURL   string
		addresses []net.IP
		host      string
		ips, dns  []string
	}{
		{name: "defaults", host: "localhost", ips: []string{"127.0.0.1"}, dns: []string{"localhost"}},
		{name: "loopback URL", baseURL: "https://127.0.0.1:6443", addresses: []net.IP{net.ParseIP("127.0.0.1")}, host: "127.0.0.1", ips: []string{"127.0.0.1"}, dns: []string{"localhost"}},
		{name: "DNS URL and bound address", baseURL: "https://shard.example:6443", addresses: []net.IP{net.ParseIP("10.0.0.7"), nil, net.ParseIP("0.0.0.0")}, host: "shard.example", ips: []string{"127.0.0.1", "10.0.0.7"}, dns: []string{"shard.example", "localhost"}},
		{name: "IPv6 URL", baseURL: "https://[::1]:6443", host: "::1", ips: []string{"::1", "127.0.0.1"}, dns: []string{"localhost"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := ServingHosts(tc.baseURL, tc.addresses...)
			var ips []string
			for _, ip := range n.IPs {
				ips = append(ips, ip.String())
			}
			if n.Host != tc.host || !slices.Equal(ips, tc.ips) || !slices.Equal(n.DNSNames, tc.dns) {
				t.Errorf("got host %q, IPs %v, DNS %v; want %q, %v, %v", n.Host, ips, n.DNSNames, tc.host, tc.ips, tc.dns)
			}
		})
	}
}
