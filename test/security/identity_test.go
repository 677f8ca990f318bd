package security

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shardplane/shardplane/pkg/rootdir"
)

// TestForgedIdentitiesDoNotCrossWorkspaces: X-Remote-* headers, the
// Impersonate-* headers to privileged groups and to the other tenant,
// extras under *.kcp.io, client certificates claiming privileged groups
// and the victim's own service account token used elsewhere: none of
// them opens the victim's workspace, through the front-proxy or directly
// at a shard.
func TestForgedIdentitiesDoNotCrossWorkspaces(t *testing.T) {
	ctx := testContext(t)
	a, b := twoTenants(t)
	var probes []probe
	for _, d := range directions(a, b) {
		attacker, victim := d[0], d[1]
		token := sys.UserToken(attacker.user)
		remote := [][]string{
			{"X-Remote-User", victim.user},
			{"X-Remote-User", "system:admin", "X-Remote-Group", "system:masters"},
			{"X-Remote-Group", "system:masters"},
			{"X-Remote-Group", "system:kcp:admin"},
			{"X-Remote-Group", "system:kcp:logical-cluster-admin"},
			{"X-Remote-Extra-Authentication.kcp.io%2fscopes", "cluster:" + victim.cluster.String()},
			{"X-Remote-Extra-Authentication.kcp.io%2fcluster-name", victim.cluster.String()},
			{"x-remote-user", victim.user, "x-remote-group", "system:masters"},
		}
		impersonate := [][]string{
			{"Impersonate-User", victim.user},
			{"Impersonate-User", "admin", "Impersonate-Group", "system:masters"},
			{"Impersonate-User", attacker.user, "Impersonate-Group", "system:masters"},
			{"Impersonate-User", attacker.user, "Impersonate-Group", "system:kcp:admin"},
			{"Impersonate-User", attacker.user, "Impersonate-Group", "system:kcp:logical-cluster-admin"},
			{"Impersonate-User", attacker.user, "Impersonate-Group", "system:kcp:external-logical-cluster-admin"},
			{"Impersonate-User", "system:kcp:logical-cluster-admin"},
			{"Impersonate-User", "system:serviceaccount:default:x", "Impersonate-Extra-Authentication.kcp.io%2fcluster-name", victim.cluster.String()},
			{"Impersonate-User", victim.user, "Impersonate-Extra-Authentication.kcp.io%2fscopes", "cluster:" + victim.cluster.String()},
			{"Impersonate-User", attacker.user, "Impersonate-Extra-Authentication.kcp.io%2fcluster-name", victim.cluster.String()},
			{"Impersonate-User", attacker.user, "Impersonate-Extra-Authorization.kcp.io%2fwarrant", `{"user":"admin","groups":["system:masters"]}`},
			{"Impersonate-Uid", "x", "Impersonate-User", victim.user},
		}
		targets := []struct{ base, cluster string }{
			{sys.URL(t), victim.path.String()},
			{sys.ShardURL(t, victim.shard), victim.cluster.String()},
		}
		for _, in := range targets {
			for _, h := range append(remote, impersonate...) {
				for _, p := range []string{"/api/v1/namespaces/default/configmaps", "/api/v1/namespaces/default/secrets/" + "sec-probe"} {
					probes = append(probes, probe{what: attacker.user + " forged headers " + strings.Join(h, " "), method: http.MethodGet, base: in.base,
						path: "/clusters/" + in.cluster + p, header: bearer(token, h...), victim: victim, expect: refused})
				}
			}
			// Forged headers without any credential.
			for _, h := range remote {
				hdr := http.Header{}
				for i := 0; i+1 < len(h); i += 2 {
					hdr.Add(h[i], h[i+1])
				}
				probes = append(probes, probe{what: "anonymous forged headers", method: http.MethodGet, base: in.base,
					path: "/clusters/" + in.cluster + "/api/v1/namespaces/default/configmaps", header: hdr, victim: victim, expect: refused})
			}
			// The victim's service account token is the victim's only in
			// its own workspace: the attacker's workspace is refused.
		}
		// Privileged impersonation in the attacker's own workspace, where
		// the attacker is cluster-admin: still refused.
		for _, h := range impersonate[1:7] {
			probes = append(probes, probe{what: attacker.user + " impersonates in own workspace " + strings.Join(h, " "), method: http.MethodGet, base: sys.URL(t),
				path: "/clusters/" + attacker.path.String() + "/api/v1/namespaces/default/secrets", header: bearer(token, h...), victim: victim, expect: refused})
		}
		// The victim's service account in the attacker's workspace.
		for _, in := range []struct{ base, cluster string }{{sys.URL(t), attacker.path.String()}, {sys.ShardURL(t, attacker.shard), attacker.cluster.String()}} {
			for _, p := range []string{"/api/v1/namespaces/default/secrets", "/api/v1/namespaces/default/configmaps"} {
				probes = append(probes, probe{what: victim.user + "'s service account in " + attacker.user + "'s workspace", method: http.MethodGet, base: in.base,
					path: "/clusters/" + in.cluster + p, header: bearer(victim.saToken), victim: attacker, expect: refused})
			}
		}
		// The attacker's service account in the victim's workspace.
		for _, in := range targets {
			probes = append(probes, probe{what: attacker.user + "'s service account in the victim's workspace", method: http.MethodGet, base: in.base,
				path: "/clusters/" + in.cluster + "/api/v1/namespaces/default/configmaps", header: bearer(attacker.saToken), victim: victim, expect: refused})
		}
	}

	// Client certificates: signed by the root shard's client CA (which
	// the front-proxy trusts) and claiming privileged groups, and signed
	// by a CA nobody trusts.
	root, err := rootdir.Open(sys.ShardDir("root"))
	if err != nil {
		t.Fatal(err)
	}
	evil, err := rootdir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := evil.EnsureCA("evil-ca", "evil"); err != nil {
		t.Fatal(err)
	}
	load := func(d rootdir.Dir, name, ca, cn string, groups ...string) *tls.Certificate {
		certFile, keyFile, err := d.EnsureClientCert(name, ca, cn, groups...)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		return &cert
	}
	privileged := []string{"system:masters", "system:kcp:logical-cluster-admin", "system:kcp:external-logical-cluster-admin"}
	var viaProxy []*tls.Certificate
	for _, g := range privileged {
		viaProxy = append(viaProxy, load(root, "sec-"+strings.ReplaceAll(g, ":", "-"), "client-ca", "sec-cert-user", g))
	}
	for _, c := range viaProxy {
		probes = append(probes, probe{what: "root client CA certificate with a privileged group through the proxy", method: http.MethodGet, base: sys.URL(t),
			path: "/clusters/" + b.path.String() + "/api/v1/namespaces/default/secrets", cert: c, victim: b, expect: refused})
	}
	evilCert := load(evil, "evil", "evil-ca", "admin", "system:masters")
	for _, base := range []string{sys.URL(t), sys.ShardURL(t, "root"), sys.ShardURL(t, "shard-1")} {
		for _, cluster := range []string{b.path.String(), b.cluster.String()} {
			probes = append(probes, probe{what: "untrusted CA certificate claiming system:masters", method: http.MethodGet, base: base,
				path: "/clusters/" + cluster + "/api/v1/namespaces/default/secrets", cert: evilCert, victim: b, expect: refused})
		}
	}
	// A certificate of root's client CA directly at shard-1 is refused
	// unless shard-1 shares the CA.
	rootCA, _ := os.ReadFile(filepath.Join(sys.ShardDir("root"), rootdir.ClientCACertFile))
	shard1CA, _ := os.ReadFile(filepath.Join(sys.ShardDir("shard-1"), rootdir.ClientCACertFile))
	if string(rootCA) != string(shard1CA) {
		probes = append(probes, probe{what: "root client CA certificate at shard-1", method: http.MethodGet, base: sys.ShardURL(t, "shard-1"),
			path: "/clusters/" + b.cluster.String() + "/api/v1/namespaces/default/secrets", cert: viaProxy[0], victim: b, expect: refused})
	}
	runAll(ctx, t, probes)

	// Who the proxy says the privileged certificate is: the groups are gone.
	for _, c := range viaProxy {
		ans := check(ctx, t, probe{what: "whoami with a privileged certificate", method: http.MethodPost, base: sys.URL(t),
			path: "/clusters/root/apis/authentication.k8s.io/v1/selfsubjectreviews", body: []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`),
			cert: c, expect: served})
		var review struct {
			Status struct {
				UserInfo struct {
					Groups []string `json:"groups"`
				} `json:"userInfo"`
			} `json:"status"`
		}
		_ = json.Unmarshal([]byte(ans.body), &review)
		for _, g := range review.Status.UserInfo.Groups {
			for _, p := range privileged {
				if g == p {
					t.Errorf("the front-proxy passed the privileged group %s of a client certificate", g)
				}
			}
		}
	}
	victimsIntact(ctx, t, a, b)
}

// TestUpgradeRequestsAreRefusedBeforeUpgrading: an upgrade request into
// the victim's workspace is answered 403, never 101.
func TestUpgradeRequestsAreRefusedBeforeUpgrading(t *testing.T) {
	ctx := testContext(t)
	a, b := twoTenants(t)
	for _, in := range []struct{ base, cluster string }{{sys.URL(t), b.path.String()}, {sys.ShardURL(t, b.shard), b.cluster.String()}} {
		for _, upgrade := range []string{"SPDY/3.1", "websocket"} {
			check(ctx, t, probe{what: "upgrade " + upgrade, method: http.MethodGet, base: in.base,
				path:   "/clusters/" + in.cluster + "/api/v1/namespaces/default/configmaps",
				query:  "watch=1",
				header: bearer(sys.UserToken(a.user), "Connection", "Upgrade", "Upgrade", upgrade, "Sec-WebSocket-Version", "13", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
				victim: b, expect: refused})
		}
	}
}
