package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/system"
)

// System is the whole system started by the project's launcher
// (cmd/run-system, as `make run-system` starts it): the root shard, more
// shards and the front-proxy.
type System struct {
	Process
	// Dir is the system directory (data, logs, kubeconfigs).
	Dir string
	// FrontProxies is the number of front-proxies to start (default 1).
	FrontProxies int
	// VirtualWorkspacesBinary, when set, runs each shard's views in a
	// virtual-workspaces process of their own.
	VirtualWorkspacesBinary string
	tokenUsers              []TokenUser
}

// StartSystem starts a system of shards shards (root included) that
// accepts users, and stops it when the test ends.
func StartSystem(t testing.TB, shards int, users ...TokenUser) *System {
	t.Helper()
	s, err := NewSystem(t.TempDir(), shards, CommandBinary(t, "run-system"), CommandBinary(t, "shard"), CommandBinary(t, "front-proxy"), CommandBinary(t, "cache-server"), users...)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("%v\n%s", err, s.LogTail(40))
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("stop system: %v", err)
		}
	})
	return s
}

// NewSystem prepares a system in dir without starting it; tests sharing
// one system per package start it from TestMain.
func NewSystem(dir string, shards int, launcher, shardBinary, proxyBinary, cacheBinary string, users ...TokenUser) (*System, error) {
	users, err := completeTokenUsers(users)
	if err != nil {
		return nil, err
	}
	s := &System{Dir: filepath.Join(dir, "system"), tokenUsers: users}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := writeTokenFile(tokens, users); err != nil {
		return nil, err
	}
	s.Process = Process{
		Name:    "run-system",
		Binary:  launcher,
		WorkDir: dir,
		Args: func() []string {
			args := []string{"--dir=" + s.Dir, "--shards=" + strconv.Itoa(shards), "--token-auth-file=" + tokens,
				"--front-proxies=" + strconv.Itoa(max(1, s.FrontProxies)),
				"--shard-binary=" + shardBinary, "--front-proxy-binary=" + proxyBinary, "--cache-server-binary=" + cacheBinary}
			if s.VirtualWorkspacesBinary != "" {
				args = append(args, "--virtual-workspaces-binary="+s.VirtualWorkspacesBinary)
			}
			return args
		},
		ReadyFiles: func() []string { return []string{filepath.Join(s.Dir, system.ReadyFile)} },
	}
	return s, nil
}

// Kubeconfig is admin.kubeconfig of the front-proxy (contexts root, base).
func (s *System) Kubeconfig() string { return filepath.Join(s.Dir, system.AdminKubeconfigFile) }

// ShardDir is the root directory of a shard.
func (s *System) ShardDir(name string) string { return filepath.Join(s.Dir, name) }

// ShardLog is the log of a shard process.
func (s *System) ShardLog(name string) string { return filepath.Join(s.Dir, name+".log") }

type systemPorts struct {
	FrontProxy       int               `json:"frontProxy"`
	MoreFrontProxies []int             `json:"moreFrontProxies"`
	Shards           map[string][3]int `json:"shards"`
	Cache            [3]int            `json:"cache"`
	// VirtualWorkspaces are the ports reserved for a virtual-workspaces
	// process per shard, listening only when the system runs them.
	VirtualWorkspaces map[string]int `json:"virtualWorkspaces"`
}

func (s *System) ports(t testing.TB) systemPorts {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.Dir, "ports.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p systemPorts
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// URL is the front-proxy's URL.
func (s *System) URL(t testing.TB) string {
	return fmt.Sprintf("https://127.0.0.1:%d", s.ports(t).FrontProxy)
}

// ProxyURLs are the URLs of every front-proxy, the first one first.
func (s *System) ProxyURLs(t testing.TB) []string {
	p := s.ports(t)
	urls := []string{fmt.Sprintf("https://127.0.0.1:%d", p.FrontProxy)}
	for _, port := range p.MoreFrontProxies {
		urls = append(urls, fmt.Sprintf("https://127.0.0.1:%d", port))
	}
	return urls
}

// CacheURL is the cache server's URL.
func (s *System) CacheURL(t testing.TB) string {
	return fmt.Sprintf("https://127.0.0.1:%d", s.ports(t).Cache[0])
}

// CacheDir is the cache server's root directory.
func (s *System) CacheDir() string { return filepath.Join(s.Dir, "cache") }

// ViewsURL is the URL of the process serving a shard's views
// (/services/...): its virtual-workspaces process when the views run in
// their own, else the shard. The launcher reserves the views' ports either
// way, so the port alone does not say which.
func (s *System) ViewsURL(t testing.TB, shard string) string {
	if port := s.ports(t).VirtualWorkspaces[shard]; port != 0 && s.VirtualWorkspacesBinary != "" {
		return fmt.Sprintf("https://127.0.0.1:%d", port)
	}
	return s.ShardURL(t, shard)
}

// ShardURL is a shard's own URL.
func (s *System) ShardURL(t testing.TB, name string) string {
	p, ok := s.ports(t).Shards[name]
	if !ok {
		t.Fatalf("no shard %s in the system", name)
	}
	return fmt.Sprintf("https://127.0.0.1:%d", p[0])
}

// ShardEtcdURL is the client URL of a shard's embedded etcd (plain HTTP
// on loopback), for tests that write behind the shard's back.
func (s *System) ShardEtcdURL(t testing.TB, name string) string {
	p, ok := s.ports(t).Shards[name]
	if !ok {
		t.Fatalf("no shard %s in the system", name)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", p[1])
}

// AdminConfig is kcp-admin through the front-proxy, in a workspace (a
// path or a logical cluster name; "" for the base URL).
func (s *System) AdminConfig(t testing.TB, cluster string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: s.Kubeconfig()}, &clientcmd.ConfigOverrides{CurrentContext: "base"}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cluster != "" {
		cfg.Host = logicalcluster.Path(cluster).URL(cfg.Host)
	}
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

// UserConfig is a token user through the front-proxy, in a workspace.
func (s *System) UserConfig(t testing.TB, user, cluster string) *rest.Config {
	t.Helper()
	cfg := s.AdminConfig(t, cluster)
	cfg.BearerToken = ""
	for _, u := range s.tokenUsers {
		if u.Name == user {
			cfg.BearerToken = u.Token
		}
	}
	if cfg.BearerToken == "" {
		t.Fatalf("no token user %q", user)
	}
	return cfg
}

// ShardAdminConfig is system:masters directly on a shard (never through
// the front-proxy), in a logical cluster.
func (s *System) ShardAdminConfig(t testing.TB, shard, cluster string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(s.Dir, "system-admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Host = s.ShardURL(t, shard)
	if cluster != "" {
		cfg.Host = logicalcluster.Path(cluster).URL(cfg.Host)
	}
	cfg.QPS, cfg.Burst = -1, 0
	return cfg
}

// ViewsConfig is system:masters directly on the process that serves a
// shard's views (ViewsURL), never through the front-proxy; its host is the
// server's base URL, below which the views are /services/<view>/...
func (s *System) ViewsConfig(t testing.TB, shard string) *rest.Config {
	t.Helper()
	cfg := s.ShardAdminConfig(t, shard, "")
	cfg.Host = s.ViewsURL(t, shard)
	return cfg
}

// UserToken is the bearer token of a token user.
func (s *System) UserToken(user string) string {
	for _, u := range s.tokenUsers {
		if u.Name == user {
			return u.Token
		}
	}
	return ""
}

// StopProcess stops one process of the system (a shard, the front-proxy)
// by its PID, as an outage would; RestartExited starts it again.
func (s *System) StopProcess(t testing.TB, name string) {
	t.Helper()
	s.signalProcess(t, name, syscall.SIGTERM)
}

// KillProcess kills one process of the system with SIGKILL, as a crash
// would, and waits until it is gone; RestartExited starts it again.
func (s *System) KillProcess(t testing.TB, name string) {
	t.Helper()
	s.signalProcess(t, name, syscall.SIGKILL)
}

func (s *System) signalProcess(t testing.TB, name string, sig syscall.Signal) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.Dir, name+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	proc, err := os.FindProcess(pid)
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Signal(sig); err != nil {
		t.Fatalf("signal %v to %s (pid %d): %v", sig, name, pid, err)
	}
	if err := PollEvery(context.Background(), 100*time.Millisecond, stopTimeout, func(context.Context) error {
		if proc.Signal(syscall.Signal(0)) == nil {
			return errors.New("still running")
		}
		return nil
	}); err != nil {
		t.Fatalf("%s (pid %d) did not exit: %v", name, pid, err)
	}
}

// RestartExited asks the launcher (SIGHUP) to start the exited processes
// again and waits until the named one answers /readyz.
func (s *System) RestartExited(t testing.TB, name, readyURL string) {
	t.Helper()
	s.mu.Lock()
	run := s.proc
	s.mu.Unlock()
	if run == nil {
		t.Fatal("the system is not running")
	}
	if err := run.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// run-system restarts what it has seen exit: a SIGHUP that came just
	// before it noticed this exit is repeated until the process is ready
	// (restarting nothing else: the others have not exited).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		tick := time.NewTicker(3 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = run.cmd.Process.Signal(syscall.SIGHUP)
			}
		}
	}()
	p := Process{Name: name, ReadyURL: readyURL}
	if err := p.waitReady(ctx, run); err != nil {
		t.Fatalf("%s after restart: %v", name, err)
	}
}
