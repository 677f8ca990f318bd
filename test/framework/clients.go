package framework

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// RawKubeconfig loads the shard's admin.kubeconfig. It is read on every call
// because a restarted shard may rewrite it.
func (s *Shard) RawKubeconfig(t testing.TB) *clientcmdapi.Config {
	t.Helper()
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: s.Kubeconfig()}
	cfg, err := rules.Load()
	if err != nil {
		t.Fatalf("load %s: %v", s.Kubeconfig(), err)
	}
	return cfg
}

// ClientConfig returns the rest.Config of a context of admin.kubeconfig
// ("root", "base", "system:admin" or "shard-base").
func (s *Shard) ClientConfig(t testing.TB, context string) *rest.Config {
	t.Helper()
	raw := s.RawKubeconfig(t)
	if _, ok := raw.Contexts[context]; !ok {
		t.Fatalf("context %q is not in %s", context, s.Kubeconfig())
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, context, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		t.Fatalf("client config of context %q: %v", context, err)
	}
	requireLoopback(t, cfg.Host)
	cfg.QPS, cfg.Burst = 100, 200
	cfg.UserAgent = "shardplane-e2e"
	return cfg
}

// ClusterConfig returns the rest.Config of a context with its host set to
// <base>/clusters/<cluster>, where <base> is the server of the kubeconfig's
// "base" cluster. cluster may be "*" for wildcard requests.
func (s *Shard) ClusterConfig(t testing.TB, context, cluster string) *rest.Config {
	t.Helper()
	cfg := s.ClientConfig(t, context)
	cfg.Host = s.BaseURL(t) + "/clusters/" + cluster
	return cfg
}

// TokenUserConfig returns a rest.Config for a token user of WithTokenUsers in
// the given logical cluster ("*" for wildcard requests).
func (s *Shard) TokenUserConfig(t testing.TB, user, cluster string) *rest.Config {
	t.Helper()
	cfg := rest.AnonymousClientConfig(s.ClusterConfig(t, "base", cluster))
	cfg.BearerToken = s.UserToken(t, user)
	return cfg
}

// UserToken returns the bearer token of a token user of WithTokenUsers.
func (s *Shard) UserToken(t testing.TB, user string) string {
	t.Helper()
	for _, u := range s.tokenUsers {
		if u.Name == user {
			return u.Token
		}
	}
	t.Fatalf("token user %q is not configured; start the shard WithTokenUsers", user)
	return ""
}

// KubeconfigToken returns the bearer token of a user of admin.kubeconfig
// ("kcp-admin" or "shard-admin").
func (s *Shard) KubeconfigToken(t testing.TB, user string) string {
	t.Helper()
	info, ok := s.RawKubeconfig(t).AuthInfos[user]
	switch {
	case !ok:
		t.Fatalf("user %q is not in %s", user, s.Kubeconfig())
	case info.Token != "":
		return info.Token
	case info.TokenFile != "":
		b, err := os.ReadFile(info.TokenFile)
		if err != nil {
			t.Fatalf("token file of user %q: %v", user, err)
		}
		return strings.TrimSpace(string(b))
	}
	t.Fatalf("user %q in %s has no token", user, s.Kubeconfig())
	return ""
}

// BaseURL returns the server of the kubeconfig's "base" cluster, without a
// trailing slash.
func (s *Shard) BaseURL(t testing.TB) string {
	t.Helper()
	c, ok := s.RawKubeconfig(t).Clusters["base"]
	if !ok {
		t.Fatalf("cluster %q is not in %s", "base", s.Kubeconfig())
	}
	requireLoopback(t, c.Server)
	return strings.TrimSuffix(c.Server, "/")
}

// HTTPClient returns a client without credentials that trusts the CA of the
// kubeconfig's "base" cluster, never uses a proxy and does not follow
// redirects, for raw requests. Add an Authorization header where needed.
func (s *Shard) HTTPClient(t testing.TB) *http.Client {
	t.Helper()
	tlsConfig, err := rest.TLSConfigFor(rest.AnonymousClientConfig(s.ClientConfig(t, "base")))
	if err != nil {
		t.Fatalf("TLS config of context base: %v", err)
	}
	if tlsConfig == nil || tlsConfig.RootCAs == nil {
		t.Fatalf("context base of %s carries no certificate authority", s.Kubeconfig())
	}
	transport := &http.Transport{Proxy: nil, TLSClientConfig: tlsConfig}
	t.Cleanup(transport.CloseIdleConnections)
	return &http.Client{
		Transport:     transport,
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// requireLoopback fails the test when server is not a loopback URL: the
// tests must never reach beyond this machine.
func requireLoopback(t testing.TB, server string) {
	t.Helper()
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("parse server %q: %v", server, err)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		t.Fatalf("refusing to contact %s: not a loopback address", server)
	}
}

// ClusterURL returns <base>/clusters/<cluster><path>.
func (s *Shard) ClusterURL(t testing.TB, cluster, path string) string {
	t.Helper()
	return fmt.Sprintf("%s/clusters/%s%s", s.BaseURL(t), cluster, path)
}
