// Package system starts the whole system on one machine: the root shard,
// more shards, and the front-proxy in front of them, each as its own
// process on free loopback ports, with their data under one directory. It
// is what `make run-system`, the multi-process e2e tests and the benchmark
// run.
//
// The directory holds, besides one root directory per shard:
//   - front-proxy-client-ca and the front-proxy's client certificate, which
//     the shards trust for authenticating-proxy headers (a CA of its own:
//     a client certificate of the shards' client CA would be a user);
//   - front-proxy-serving, the front-proxy's serving certificate;
//   - tokens: shard-tokens.csv (the system's privileged tokens plus the
//     user's TOKEN_AUTH_FILE) for the shards, proxy-tokens.csv (kcp-admin
//     plus the user's) for the front-proxy;
//   - ports.json, so that a restart keeps every URL;
//   - admin.kubeconfig (through the front-proxy; contexts root and base as
//     kcp-admin), and ready once every process is ready.
package system

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/cacheserver"
	"github.com/shardplane/shardplane/pkg/features"
	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/kubeconfig"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/rootdir"
)

// Files of the system directory.
const (
	AdminKubeconfigFile = "admin.kubeconfig"
	ReadyFile           = "ready"
	portsFile           = "ports.json"
	tokensFile          = "system-tokens.json"
	proxyClientCA       = "front-proxy-client-ca"
	proxyClientCert     = "front-proxy-client"
	frontProxyDir       = "front-proxy"
	cacheServerName     = "cache"

	// KCPDir holds, where kcp's harnesses and fixtures look for them, a
	// copy of admin.kubeconfig and the front-proxy's serving pair
	// (apiserver.crt, apiserver.key), which that kubeconfig's CA trusts.
	KCPDir = ".kcp"
	// KCPCacheKubeconfig is the cache server's admin kubeconfig (context
	// cache) where kcp's fixtures look for it: .kcp-cache beside KCPDir.
	KCPCacheKubeconfig = ".kcp-cache/cache.kubeconfig"
)

// Options say what to start.
type Options struct {
	// Dir holds every process's data.
	Dir string
	// Shards is the number of shards, root included.
	Shards int
	// TokenAuthFile (optional) is given to the front-proxy and every shard.
	TokenAuthFile string
	// FrontProxies is the number of front-proxies (default 1); they are
	// stateless and interchangeable, admin.kubeconfig names the first.
	FrontProxies int
	// ShardBinary and FrontProxyBinary are the programs to run.
	ShardBinary, FrontProxyBinary string
	// CacheServerBinary, when set, runs a cache server too (in
	// <dir>/cache; its writer kubeconfig is <dir>/cache/cache-writer.kubeconfig).
	CacheServerBinary string
	// ShardArgs are extra flags for every shard.
	ShardArgs []string
	// VirtualWorkspacesBinary, when set, runs one virtual-workspaces
	// process per shard (and the shards without in-process virtual
	// workspaces); empty: every shard serves them in-process.
	VirtualWorkspacesBinary string
	// LateShards of the Shards, the last ones, are prepared (ports,
	// certificates, keys the others trust) but not started: StartShard
	// starts one later, as a shard that joins a running system.
	LateShards int
}

// loopbackServingNames are the names of the serving certificates the
// system creates for its processes, which it reaches on 127.0.0.1.
var loopbackServingNames = rootdir.ServingHosts("https://127.0.0.1")

// ShardName is the name of the i-th shard: root, then shard-1, shard-2, ...
func ShardName(i int) string {
	if i == 0 {
		return "root"
	}
	return "shard-" + strconv.Itoa(i)
}

// ports are the loopback ports of every process, kept across restarts.
type ports struct {
	FrontProxy int `json:"frontProxy"`
	// MoreFrontProxies are the ports of the second and later front-proxies.
	MoreFrontProxies []int             `json:"moreFrontProxies,omitempty"`
	Shards           map[string][3]int `json:"shards"` // secure, etcd client, etcd peer
	// Cache are the cache server's ports (secure, etcd client, etcd peer).
	Cache [3]int `json:"cache"`
	// VirtualWorkspaces are the secure ports of the virtual-workspaces
	// process of each shard.
	VirtualWorkspaces map[string]int `json:"virtualWorkspaces,omitempty"`
}

// tokens are the system's own bearer tokens.
type tokens struct {
	// SystemAdmin is system:masters on every shard (the front-proxy's index
	// and the launcher's readiness checks); never accepted by the proxy.
	SystemAdmin string `json:"systemAdmin"`
	// KCPAdmin is kcp-admin (system:kcp:admin), on the shards and the proxy.
	KCPAdmin string `json:"kcpAdmin"`
	// LogicalClusterAdmin (system:kcp:logical-cluster-admin) lets a shard
	// create LogicalClusters on another.
	LogicalClusterAdmin string `json:"logicalClusterAdmin"`
}

// System is a started system.
type System struct {
	o        Options
	dir      rootdir.Dir
	ports    ports
	tokens   tokens
	mu       sync.Mutex
	children []*child
}

type child struct {
	name   string
	binary string
	args   []string
	cmd    *exec.Cmd
	done   chan struct{}
}

// URL is the front-proxy's URL.
func (s *System) URL() string { return fmt.Sprintf("https://127.0.0.1:%d", s.ports.FrontProxy) }

// FrontProxyURLs are the URLs of every front-proxy, URL first.
func (s *System) FrontProxyURLs() []string {
	var urls []string
	for _, p := range s.proxyPorts() {
		urls = append(urls, fmt.Sprintf("https://127.0.0.1:%d", p))
	}
	return urls
}

// proxyPorts are the ports of every front-proxy, the first one first.
func (s *System) proxyPorts() []int {
	return append([]int{s.ports.FrontProxy}, s.ports.MoreFrontProxies...)
}

// proxyName names the i-th front-proxy: front-proxy, front-proxy-2, ...
func proxyName(i int) string {
	if i == 0 {
		return "front-proxy"
	}
	return "front-proxy-" + strconv.Itoa(i+1)
}

// ShardURL is a shard's base URL.
func (s *System) ShardURL(name string) string {
	return fmt.Sprintf("https://127.0.0.1:%d", s.ports.Shards[name][0])
}

// Start starts every process and returns once all are ready.
func Start(ctx context.Context, o Options) (*System, error) {
	if o.Shards < 1 {
		return nil, errors.New("at least one shard (root) is needed")
	}
	if o.FrontProxies < 1 {
		o.FrontProxies = 1
	}
	dir, err := rootdir.Open(o.Dir)
	if err != nil {
		return nil, err
	}
	_ = os.Remove(dir.Path(ReadyFile))
	s := &System{o: o, dir: dir}
	if err := s.prepare(); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()
	if o.CacheServerBinary != "" {
		if err := s.start(ctx, cacheServerName, o.CacheServerBinary, s.cacheArgs()); err != nil {
			return nil, err
		}
		if err := s.waitReady(ctx, cacheServerName, s.CacheURL(), dir.Path(filepath.Join(cacheServerName, rootdir.ServingCertPairName+".crt")), ""); err != nil {
			return nil, err
		}
	}
	// Every shard verifies the tokens every shard signs, so that a
	// workspace that moves keeps its service accounts' tokens.
	for i := 0; i < o.Shards; i++ {
		if err := os.MkdirAll(dir.Path(ShardName(i)), 0o700); err != nil {
			return nil, err
		}
		if _, err := rootdir.Dir(dir.Path(ShardName(i))).EnsureServiceAccountKey(); err != nil {
			return nil, fmt.Errorf("service account key of shard %s: %w", ShardName(i), err)
		}
	}
	if o.LateShards < 0 || o.LateShards >= o.Shards {
		return nil, errors.New("late shards must be fewer than the shards, root starts first")
	}
	if o.LateShards > 0 && o.VirtualWorkspacesBinary != "" {
		return nil, errors.New("late shards run their virtual workspaces in-process only")
	}
	for i := 0; i < o.Shards-o.LateShards; i++ {
		name := ShardName(i)
		if err := s.start(ctx, name, o.ShardBinary, s.shardArgs(name)); err != nil {
			return nil, err
		}
		// Root first: the other shards register with it.
		if i == 0 {
			if err := s.waitReady(ctx, name, s.ShardURL(name), dir.Path(filepath.Join(name, rootdir.ServingCertPairName+".crt")), s.tokens.SystemAdmin); err != nil {
				return nil, err
			}
		}
	}
	for i := 1; i < o.Shards-o.LateShards; i++ {
		if err := s.waitShardReady(ctx, ShardName(i)); err != nil {
			return nil, err
		}
	}
	if err := s.startVirtualWorkspaces(ctx); err != nil {
		return nil, err
	}
	for i, port := range s.proxyPorts() {
		if err := s.start(ctx, proxyName(i), o.FrontProxyBinary, s.proxyArgs(port)); err != nil {
			return nil, err
		}
	}
	for i, port := range s.proxyPorts() {
		if err := s.waitReady(ctx, proxyName(i), fmt.Sprintf("https://127.0.0.1:%d", port), s.proxyServingCert(), ""); err != nil {
			return nil, err
		}
	}
	if err := s.writeAdminKubeconfig(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(dir.Path(ReadyFile), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

// StartShard starts a shard of Options.LateShards and returns once it is
// ready; it registers its Shard with root as any shard does.
func (s *System) StartShard(ctx context.Context, name string) error {
	late := false
	for i := s.o.Shards - s.o.LateShards; i < s.o.Shards; i++ {
		late = late || ShardName(i) == name
	}
	if !late {
		return fmt.Errorf("shard %q is not one of the late shards", name)
	}
	if err := s.start(ctx, name, s.o.ShardBinary, s.shardArgs(name)); err != nil {
		return err
	}
	return s.waitShardReady(ctx, name)
}

func (s *System) waitShardReady(ctx context.Context, name string) error {
	return s.waitReady(ctx, name, s.ShardURL(name), s.dir.Path(filepath.Join(name, rootdir.ServingCertPairName+".crt")), s.tokens.SystemAdmin)
}

// prepare creates the certificates, tokens and port assignments once.
func (s *System) prepare() error {
	d := s.dir
	if _, err := d.EnsureCA(proxyClientCA, "shardplane-front-proxy-client-ca"); err != nil {
		return err
	}
	if _, _, err := d.EnsureClientCert(proxyClientCert, proxyClientCA, identities.FrontProxyUser); err != nil {
		return err
	}
	proxyDir, err := rootdir.Open(d.Path(frontProxyDir))
	if err != nil {
		return err
	}
	if _, _, err := proxyDir.EnsureServingCert(loopbackServingNames); err != nil {
		return err
	}
	if err := readOrCreate(d.Path(tokensFile), &s.tokens, func() error {
		for _, t := range []*string{&s.tokens.SystemAdmin, &s.tokens.KCPAdmin, &s.tokens.LogicalClusterAdmin} {
			b := make([]byte, 32)
			if _, err := rand.Read(b); err != nil {
				return err
			}
			*t = hex.EncodeToString(b)
		}
		return nil
	}); err != nil {
		return err
	}
	if err := readOrCreate(d.Path(portsFile), &s.ports, func() error { return s.pickPorts() }); err != nil {
		return err
	}
	for i := 0; i < s.o.Shards; i++ {
		if _, ok := s.ports.Shards[ShardName(i)]; !ok || len(s.ports.MoreFrontProxies) < s.o.FrontProxies-1 || s.ports.VirtualWorkspaces[ShardName(i)] == 0 {
			// More shards or front-proxies than last time.
			if err := s.pickPorts(); err != nil {
				return err
			}
			data, _ := json.Marshal(s.ports)
			if err := os.WriteFile(d.Path(portsFile), data, 0o600); err != nil {
				return err
			}
			break
		}
	}
	userTokens, err := readTokenFile(s.o.TokenAuthFile)
	if err != nil {
		return err
	}
	shardTokens := []string{
		csvLine(s.tokens.SystemAdmin, identities.SystemAdminUser, user.SystemPrivilegedGroup),
		csvLine(s.tokens.KCPAdmin, identities.KCPAdminUser, identities.KCPAdminGroup),
		csvLine(s.tokens.LogicalClusterAdmin, identities.LogicalClusterAdminUser, identities.LogicalClusterAdminGroup),
	}
	if err := os.WriteFile(d.Path("shard-tokens.csv"), []byte(strings.Join(append(shardTokens, userTokens...), "\n")+"\n"), 0o600); err != nil {
		return err
	}
	proxyTokens := []string{csvLine(s.tokens.KCPAdmin, identities.KCPAdminUser, identities.KCPAdminGroup)}
	if err := os.WriteFile(d.Path("proxy-tokens.csv"), []byte(strings.Join(append(proxyTokens, userTokens...), "\n")+"\n"), 0o600); err != nil {
		return err
	}
	// Each shard's serving certificate, created here as the shard would,
	// so that the front-proxy and the shards can trust all of them.
	var bundle []byte
	for i := 0; i < s.o.Shards; i++ {
		shardDir, err := rootdir.Open(d.Path(ShardName(i)))
		if err != nil {
			return err
		}
		certFile, _, err := shardDir.EnsureServingCert(loopbackServingNames)
		if err != nil {
			return err
		}
		pem, err := os.ReadFile(certFile)
		if err != nil {
			return err
		}
		bundle = append(bundle, pem...)
	}
	// The virtual workspace servers' certificates too: the front-proxy
	// routes to them with the same bundle.
	vwBundle, err := s.prepareVirtualWorkspaces()
	if err != nil {
		return err
	}
	bundle = append(bundle, vwBundle...)
	if err := os.WriteFile(d.Path("shards-ca.crt"), bundle, 0o644); err != nil {
		return err
	}
	if s.o.CacheServerBinary != "" {
		cacheDir, err := rootdir.Open(d.Path(cacheServerName))
		if err != nil {
			return err
		}
		if _, _, err := cacheDir.EnsureServingCert(loopbackServingNames); err != nil {
			return err
		}
	}
	if err := s.writeMapping(); err != nil {
		return err
	}
	return s.writeSystemKubeconfigs()
}

// writeMapping writes the front-proxies' mapping file: /clusters/ routes
// by the index, with the front-proxy's client certificate and every
// shard's serving certificate.
func (s *System) writeMapping() error {
	mapping := fmt.Sprintf(`- path: %s
  backend: %s
  backend_server_ca: %s
  proxy_client_cert: %s
  proxy_client_key: %s
`, logicalcluster.ClustersPrefix, s.ShardURL("root"), s.dir.Path("shards-ca.crt"), s.dir.Path(proxyClientCert+".crt"), s.dir.Path(proxyClientCert+".key"))
	mapping += s.virtualWorkspacesMapping()
	return os.WriteFile(s.dir.Path("mapping.yaml"), []byte(mapping), 0o644)
}

func csvLine(token, user, group string) string {
	return fmt.Sprintf("%s,%s,%s,%q", token, user, user, group)
}

// readTokenFile returns the lines of a kube-apiserver token file.
func readTokenFile(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token auth file: %w", err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines, sc.Err()
}

func readOrCreate(path string, into interface{}, create func() error) error {
	if data, err := os.ReadFile(path); err == nil {
		return json.Unmarshal(data, into)
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := create(); err != nil {
		return err
	}
	data, err := json.Marshal(into)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// pickPorts assigns free loopback ports to what has none.
func (s *System) pickPorts() error {
	free := func() (int, error) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port, nil
	}
	var listeners []int
	next := func() (int, error) {
		for {
			p, err := free()
			if err != nil {
				return 0, err
			}
			dup := false
			for _, q := range listeners {
				dup = dup || q == p
			}
			if !dup {
				listeners = append(listeners, p)
				return p, nil
			}
		}
	}
	if s.ports.Shards == nil {
		s.ports.Shards = map[string][3]int{}
	}
	var err error
	if s.ports.FrontProxy == 0 {
		if s.ports.FrontProxy, err = next(); err != nil {
			return err
		}
	}
	if s.ports.Cache[0] == 0 {
		for j := range s.ports.Cache {
			if s.ports.Cache[j], err = next(); err != nil {
				return err
			}
		}
	}
	if s.ports.VirtualWorkspaces == nil {
		s.ports.VirtualWorkspaces = map[string]int{}
	}
	for i := 0; i < s.o.Shards; i++ {
		if s.ports.VirtualWorkspaces[ShardName(i)] == 0 {
			if s.ports.VirtualWorkspaces[ShardName(i)], err = next(); err != nil {
				return err
			}
		}
	}
	for len(s.ports.MoreFrontProxies) < s.o.FrontProxies-1 {
		p, err := next()
		if err != nil {
			return err
		}
		s.ports.MoreFrontProxies = append(s.ports.MoreFrontProxies, p)
	}
	for i := 0; i < s.o.Shards; i++ {
		name := ShardName(i)
		if _, ok := s.ports.Shards[name]; ok {
			continue
		}
		var p [3]int
		for j := range p {
			if p[j], err = next(); err != nil {
				return err
			}
		}
		s.ports.Shards[name] = p
	}
	return nil
}

// writeSystemKubeconfigs writes the kubeconfigs the processes use among
// themselves: system-admin.kubeconfig (system:masters, root shard) for the
// front-proxy's index, and logical-cluster-admin.kubeconfig for shards
// creating LogicalClusters on each other (servers are replaced per shard).
func (s *System) writeSystemKubeconfigs() error {
	ca, err := os.ReadFile(s.dir.Path("shards-ca.crt"))
	if err != nil {
		return err
	}
	write := func(file, token string) error {
		return kubeconfig.Write(s.dir.Path(file), ca, kubeconfig.Context{Name: "default", Cluster: "root-shard", Server: s.ShardURL("root"), User: "user", Auth: kubeconfig.Token(token)})
	}
	if err := write("system-admin.kubeconfig", s.tokens.SystemAdmin); err != nil {
		return err
	}
	if err := s.writeVirtualWorkspacesKubeconfigs(ca); err != nil {
		return err
	}
	return write("logical-cluster-admin.kubeconfig", s.tokens.LogicalClusterAdmin)
}

func (s *System) shardArgs(name string) []string {
	p := s.ports.Shards[name]
	args := []string{
		"--root-directory=" + s.dir.Path(name),
		"--shard-name=" + name,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(p[0]),
		"--embedded-etcd-client-port=" + strconv.Itoa(p[1]),
		"--embedded-etcd-peer-port=" + strconv.Itoa(p[2]),
		"--shard-base-url=" + s.ShardURL(name),
		"--shard-external-url=" + s.URL(),
		"--token-auth-file=" + s.dir.Path("shard-tokens.csv"),
		"--requestheader-client-ca-file=" + s.dir.Path(proxyClientCA+".crt"),
		"--requestheader-allowed-names=" + identities.FrontProxyUser,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--logical-cluster-admin-kubeconfig=" + s.dir.Path("logical-cluster-admin.kubeconfig"),
		kcpGates,
		"--service-account-signing-key-file=" + s.dir.Path(filepath.Join(name, rootdir.ServiceAccountKeyFile)),
	}
	// Upstream's flag takes one file per occurrence.
	for _, f := range serviceAccountKeyFiles(string(s.dir), s.o.Shards) {
		args = append(args, "--service-account-key-file="+f)
	}
	if name != ShardName(0) {
		args = append(args, "--root-shard-kubeconfig="+s.dir.Path("system-admin.kubeconfig"))
	}
	args = append(args, s.viewArgs(name)...)
	// Every shard replicates to and reads from the cache server; without
	// one, from the cache the root shard serves in-process.
	if s.o.CacheServerBinary != "" || name != ShardName(0) {
		args = append(args, "--cache-kubeconfig="+s.cacheKubeconfig())
	}
	return append(args, s.o.ShardArgs...)
}

// cacheKubeconfig reaches the cache server as a writer: its own process's,
// or the one the root shard serves in-process (system-admin.kubeconfig
// names the root shard).
func (s *System) cacheKubeconfig() string {
	if s.o.CacheServerBinary != "" {
		return s.dir.Path(filepath.Join(cacheServerName, cacheserver.WriterKubeconfigFile))
	}
	return s.dir.Path("system-admin.kubeconfig")
}

func (s *System) proxyArgs(port int) []string {
	return FrontProxyArgs(string(s.dir), s.o.Shards, port)
}

// FrontProxyArgs is the command line of a front-proxy of the system in dir
// with shards shards, serving on port: its mapping, kubeconfigs, tokens,
// client CA and the shards' service account keys. Another front-proxy (one
// behind an authenticating proxy, say) starts from it.
func FrontProxyArgs(dir string, shards, port int) []string {
	d := rootdir.Dir(dir)
	saKeys := serviceAccountKeyFiles(dir, shards)
	return []string{
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + d.Path(filepath.Join(frontProxyDir, rootdir.ServingCertPairName+".crt")),
		"--tls-private-key-file=" + d.Path(filepath.Join(frontProxyDir, rootdir.ServingCertPairName+".key")),
		"--mapping-file=" + d.Path("mapping.yaml"),
		"--root-kubeconfig=" + d.Path("system-admin.kubeconfig"),
		"--token-auth-file=" + d.Path("proxy-tokens.csv"),
		"--client-ca-file=" + d.Path(filepath.Join(ShardName(0), rootdir.ClientCACertFile)),
		"--service-account-key-file=" + strings.Join(saKeys, ","),
		kcpGates,
	}
}

// kcpGates turns on kcp's alpha gates in every shard and front-proxy of
// the system, as kcp's test servers do: per-workspace authentication (the
// shards authenticate the tokens, the front-proxies ask them) and
// workspace mounts (the shards reconcile them, the front-proxies route
// them) and cached resources (the shards serve and replicate them).
var kcpGates = features.EnableFlag(features.WorkspaceAuthentication, features.WorkspaceMounts, features.CacheAPIs)

// serviceAccountKeyFiles are the keys of the shards of the system in dir.
func serviceAccountKeyFiles(dir string, shards int) []string {
	var files []string
	for i := 0; i < shards; i++ {
		files = append(files, rootdir.Dir(dir).Path(filepath.Join(ShardName(i), rootdir.ServiceAccountKeyFile)))
	}
	return files
}

// CacheURL is the cache server's URL.
func (s *System) CacheURL() string { return fmt.Sprintf("https://127.0.0.1:%d", s.ports.Cache[0]) }

func (s *System) cacheArgs() []string {
	return []string{
		"--root-directory=" + s.dir.Path(cacheServerName),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(s.ports.Cache[0]),
		"--embedded-etcd-client-port=" + strconv.Itoa(s.ports.Cache[1]),
		"--embedded-etcd-peer-port=" + strconv.Itoa(s.ports.Cache[2]),
	}
}

// proxyServingCert is the front-proxy's self-signed serving certificate.
func (s *System) proxyServingCert() string {
	return s.dir.Path(filepath.Join(frontProxyDir, rootdir.ServingCertPairName+".crt"))
}

// writeAdminKubeconfig writes admin.kubeconfig for the front-proxy.
func (s *System) writeAdminKubeconfig() error {
	ca, err := os.ReadFile(s.proxyServingCert())
	if err != nil {
		return err
	}
	contexts := kubeconfig.Workspaces(s.URL(), identities.KCPAdminUser, kubeconfig.Token(s.tokens.KCPAdmin), logicalcluster.Root)
	if err := kubeconfig.Write(s.dir.Path(AdminKubeconfigFile), ca, contexts...); err != nil {
		return err
	}
	return s.writeKCPLayout()
}

// writeKCPLayout copies what kcp's harness conventions look for into
// KCPDir and beside it (see KCPDir, KCPCacheKubeconfig), so that tools and
// tests written for kcp's sharded-test-server find the system.
func (s *System) writeKCPLayout() error {
	copies := map[string]string{
		AdminKubeconfigFile: filepath.Join(KCPDir, AdminKubeconfigFile),
		filepath.Join(frontProxyDir, rootdir.ServingCertPairName+".crt"): filepath.Join(KCPDir, rootdir.ServingCertPairName+".crt"),
		filepath.Join(frontProxyDir, rootdir.ServingCertPairName+".key"): filepath.Join(KCPDir, rootdir.ServingCertPairName+".key"),
	}
	if s.o.CacheServerBinary != "" {
		copies[filepath.Join(cacheServerName, rootdir.AdminKubeconfigFile)] = KCPCacheKubeconfig
	}
	for from, to := range copies {
		data, err := os.ReadFile(s.dir.Path(from))
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(s.dir.Path(to)), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(s.dir.Path(to), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// start runs a process with its output in <dir>/<name>.log and its PID in
// <dir>/<name>.pid.
func (s *System) start(ctx context.Context, name, binary string, args []string) error {
	c := &child{name: name, binary: binary, args: args}
	if err := s.run(ctx, c); err != nil {
		return err
	}
	s.mu.Lock()
	s.children = append(s.children, c)
	s.mu.Unlock()
	return nil
}

func (s *System) run(ctx context.Context, c *child) error {
	log, err := os.OpenFile(s.dir.Path(c.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.binary, c.args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start %s: %w", c.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(done)
	}()
	s.mu.Lock()
	c.cmd, c.done = cmd, done
	s.mu.Unlock()
	if err := os.WriteFile(s.dir.Path(c.name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Started", "process", c.name, "pid", cmd.Process.Pid, "log", s.dir.Path(c.name+".log"))
	return nil
}

// RestartExited starts again every process that has exited.
func (s *System) RestartExited(ctx context.Context) error {
	s.mu.Lock()
	children := append([]*child(nil), s.children...)
	s.mu.Unlock()
	for _, c := range children {
		if !s.exited(c.name) {
			continue
		}
		if err := s.run(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// waitReady polls /readyz of a process until it answers 200.
func (s *System) waitReady(ctx context.Context, name, url, caFile, token string) error {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if s.exited(name) {
			return fmt.Errorf("%s exited; see %s", name, s.dir.Path(name+".log"))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 3 minutes; see %s", name, s.dir.Path(name+".log"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *System) exited(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.children {
		if c.name == name && c.done != nil {
			select {
			case <-c.done:
				return true
			default:
			}
		}
	}
	return false
}

// Wait supervises the processes until ctx ends: a process that exits is
// reported (the others keep serving, as in a real deployment), and every
// exited process is started again when restart receives a value.
func (s *System) Wait(ctx context.Context, restart <-chan struct{}) {
	reported := map[*exec.Cmd]bool{}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-restart:
			if err := s.RestartExited(ctx); err != nil {
				klog.FromContext(ctx).Error(err, "Restarting exited processes failed")
			}
		case <-tick.C:
			s.mu.Lock()
			for _, c := range s.children {
				select {
				case <-c.done:
					if !reported[c.cmd] {
						reported[c.cmd] = true
						code := c.cmd.ProcessState.ExitCode()
						klog.FromContext(ctx).Info("Process exited; send SIGHUP to start it again", "process", c.name, "exitCode", code, "log", s.dir.Path(c.name+".log"))
					}
				default:
				}
			}
			s.mu.Unlock()
		}
	}
}

// Stop ends every process with SIGTERM (SIGKILL after 30 s), proxy first.
func (s *System) Stop() {
	s.mu.Lock()
	children := append([]*child(nil), s.children...)
	s.children = nil
	s.mu.Unlock()
	_ = os.Remove(s.dir.Path(ReadyFile))
	for i := len(children) - 1; i >= 0; i-- {
		c := children[i]
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	}
}
