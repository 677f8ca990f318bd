package e2esystem

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shardplane/shardplane/pkg/rootdir"
	"github.com/shardplane/shardplane/pkg/system"
	"github.com/shardplane/shardplane/test/framework"
)

// TestFrontProxyBehindAnAuthenticatingProxy starts one more front-proxy of
// the system, as kcp's front-proxy is run behind another authenticating
// proxy: --root-directory for its generated serving certificate, and
// --requestheader-* trusting the outer proxy's client certificate. A
// request from the outer proxy reaches root as the user its headers name,
// without the privileged groups; the same headers without the outer
// proxy's certificate authenticate no one.
func TestFrontProxyBehindAnAuthenticatingProxy(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	pki, err := rootdir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outerCA, err := pki.EnsureCA("outer-proxy-ca", "outer-proxy-ca")
	if err != nil {
		t.Fatal(err)
	}
	outerCert, outerKey, err := pki.EnsureClientCert("outer-proxy", "outer-proxy-ca", "outer-proxy")
	if err != nil {
		t.Fatal(err)
	}
	strangerCert, strangerKey, err := pki.EnsureClientCert("stranger-proxy", "outer-proxy-ca", "stranger-proxy")
	if err != nil {
		t.Fatal(err)
	}

	port := framework.FreePort(t)
	root := t.TempDir()
	args := system.FrontProxyArgs(sys.Dir, shards, port)
	// Its own serving certificate, generated in --root-directory.
	args = slicesWithout(args, "--tls-cert-file=", "--tls-private-key-file=")
	args = append(args,
		"--root-directory="+root,
		"--requestheader-client-ca-file="+outerCA,
		"--requestheader-allowed-names=outer-proxy",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
	)
	p := &framework.Process{
		Name:     "front-proxy-behind",
		Binary:   framework.CommandBinary(t, "front-proxy"),
		Args:     func() []string { return args },
		WorkDir:  t.TempDir(),
		ReadyURL: fmt.Sprintf("https://127.0.0.1:%d/readyz", port),
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("tail of %s:\n%s", p.LogPath(), p.LogTail(100))
		}
		if err := p.Stop(); err != nil {
			t.Errorf("stop front-proxy: %v", err)
		}
	})
	if err := p.Start(); err != nil {
		t.Fatalf("start front-proxy: %v", err)
	}

	servingCA, err := os.ReadFile(filepath.Join(root, rootdir.ServingCertPairName+".crt"))
	if err != nil {
		t.Fatalf("the serving certificate in --root-directory: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(servingCA)
	client := func(certFile, keyFile string) *http.Client {
		var certs []tls.Certificate
		if certFile != "" {
			cert, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				t.Fatal(err)
			}
			certs = append(certs, cert)
		}
		return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs, MinVersion: tls.VersionTLS12}}}
	}
	url := fmt.Sprintf("https://127.0.0.1:%d", port)
	headers := map[string]string{"X-Remote-User": "alice", "X-Remote-Group": "team-a", "X-Remote-Extra-Team": "blue"}

	code, u := whoamiAt(ctx, t, url, client(outerCert, outerKey), "", headers)
	if code != http.StatusCreated || u.Username != "alice" || !contains(u.Groups, "team-a") || !contains(u.Groups, "system:authenticated") {
		t.Errorf("alice through the outer proxy: %d %+v", code, u)
	}
	if got := u.Extra["team"]; len(got) != 1 || got[0] != "blue" {
		t.Errorf("alice's extra team = %v, want [blue]", got)
	}

	// A privileged group named by the outer proxy does not pass either.
	masters := map[string]string{"X-Remote-User": "alice", "X-Remote-Group": "system:masters"}
	if code, u := whoamiAt(ctx, t, url, client(outerCert, outerKey), "", masters); code != http.StatusCreated || contains(u.Groups, "system:masters") {
		t.Errorf("system:masters through the outer proxy: %d %+v", code, u)
	}
	// A certificate of the CA whose name is not allowed, or none at all:
	// the headers name no one.
	for name, c := range map[string]*http.Client{"stranger-proxy": client(strangerCert, strangerKey), "no certificate": client("", "")} {
		if code, u := whoamiAt(ctx, t, url, c, "", headers); code != http.StatusUnauthorized {
			t.Errorf("headers with %s: %d %+v, want 401", name, code, u)
		}
	}
}

// slicesWithout returns args without the flags that start with a prefix.
func slicesWithout(args []string, prefixes ...string) []string {
	var out []string
	for _, a := range args {
		drop := false
		for _, p := range prefixes {
			drop = drop || strings.HasPrefix(a, p)
		}
		if !drop {
			out = append(out, a)
		}
	}
	return out
}
