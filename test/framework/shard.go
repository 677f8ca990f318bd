// Package framework starts shardplane processes for end-to-end tests (a Shard,
// or any binary of the project as a Process) and hands out clients for
// them. It only ever talks to loopback addresses and only ends processes it
// started, by their PID.
package framework

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

const (
	// readyTimeout bounds how long a shard may take to answer /readyz.
	readyTimeout = 3 * time.Minute
	// stopTimeout is how long a shard may take to exit after SIGTERM before
	// it is killed.
	stopTimeout = 20 * time.Second
	// logTailLines is how much of the shard log a failing test prints.
	logTailLines = 200
)

// Option configures a shard before it starts.
type Option func(*Shard)

// WithTokenUsers makes the shard accept the given users from a static token
// file (--token-auth-file). Users without a token get a random one.
func WithTokenUsers(users ...TokenUser) Option {
	return func(s *Shard) { s.tokenUsers = append(s.tokenUsers, users...) }
}

// WithBinary runs the shard from path instead of the shared binary.
func WithBinary(path string) Option {
	return func(s *Shard) { s.Binary = path }
}

// WithArgs appends extra command-line flags.
func WithArgs(args ...string) Option {
	return func(s *Shard) { s.extraArgs = append(s.extraArgs, args...) }
}

// WithSubcommand runs the binary with a subcommand before the flags, as
// `shard start` for command lines written for `kcp start`.
func WithSubcommand(name string) Option {
	return func(s *Shard) { s.subcommand = name }
}

// WithKubeconfigPath tells the framework that the shard writes its admin
// kubeconfig to path (--kubeconfig-path) instead of its root directory.
func WithKubeconfigPath(path string) Option {
	return func(s *Shard) { s.kubeconfigPath = path }
}

// WithCommandLine replaces the shard's flags (everything after the
// subcommand) by what build returns, for command lines written for another
// harness, such as kcp's; build sees the root directory and free ports.
func WithCommandLine(build func(s *Shard) []string) Option {
	return func(s *Shard) { s.commandLine = build }
}

// WithReadinessFromKubeconfig makes the shard count as started once it has
// written its admin kubeconfig, for a command line that chooses its own
// port (kcp's --experimental-bind-free-port): poll its readiness through
// the kubeconfig then.
func WithReadinessFromKubeconfig() Option {
	return func(s *Shard) { s.readyFromKubeconfig = true }
}

// Shard is a shard process with embedded etcd under its root directory.
type Shard struct {
	*Process
	rootDir  string // --root-directory; holds admin.kubeconfig and etcd data
	ownsDirs bool   // Close removes rootDir and the work directory

	securePort, etcdClientPort, etcdPeerPort int

	tokenUsers     []TokenUser
	extraArgs      []string
	subcommand     string
	kubeconfigPath string
	commandLine    func(*Shard) []string

	readyFromKubeconfig bool
}

// StartShard starts a shard for one test: its root directory is a t.TempDir,
// and a t.Cleanup stops it with SIGTERM (killing it after 20s) and prints the
// tail of its log when the test failed.
func StartShard(t testing.TB, opts ...Option) *Shard {
	t.Helper()
	s, err := newShard(Binary(t), t.TempDir(), t.TempDir(), opts...)
	if err != nil {
		t.Fatalf("prepare shard: %v", err)
	}
	// Registered after the TempDirs, so it runs before they are removed.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("tail of shard log %s:\n%s", s.LogPath(), s.LogTail(logTailLines))
		}
		if err := s.Stop(); err != nil {
			t.Errorf("stop shard: %v", err)
		}
	})
	if err := s.Start(); err != nil {
		t.Fatalf("start shard: %v", err) // the cleanup prints the log
	}
	return s
}

// Start starts a shard that is not tied to a test, for sharing one process
// between the tests of a package (from TestMain or a sync.Once). Its
// directories are temporary; the caller must call Close.
func Start(opts ...Option) (*Shard, error) {
	bin, err := binary()
	if err != nil {
		return nil, fmt.Errorf("shard binary: %w", err)
	}
	rootDir, err := os.MkdirTemp("", "shardplane-e2e-root-")
	if err != nil {
		return nil, fmt.Errorf("create root directory: %w", err)
	}
	workDir, err := os.MkdirTemp("", "shardplane-e2e-work-")
	if err != nil {
		_ = os.RemoveAll(rootDir)
		return nil, fmt.Errorf("create work directory: %w", err)
	}
	s, err := newShard(bin, rootDir, workDir, opts...)
	if err != nil {
		_ = os.RemoveAll(rootDir)
		_ = os.RemoveAll(workDir)
		return nil, fmt.Errorf("prepare shard: %w", err)
	}
	s.ownsDirs = true
	if err := s.Start(); err != nil {
		tail := s.LogTail(logTailLines)
		_ = s.Close()
		return nil, fmt.Errorf("start shard: %w\ntail of shard log:\n%s", err, tail)
	}
	return s, nil
}

func newShard(bin, rootDir, workDir string, opts ...Option) (*Shard, error) {
	s := &Shard{rootDir: rootDir}
	s.Process = &Process{Name: "shard", Binary: bin, Args: s.args, WorkDir: workDir}
	for _, o := range opts {
		o(s)
	}
	ports, err := FindFreePorts(3)
	if err != nil {
		return nil, err
	}
	s.securePort, s.etcdClientPort, s.etcdPeerPort = ports[0], ports[1], ports[2]
	if !s.readyFromKubeconfig {
		s.ReadyURL = fmt.Sprintf("https://127.0.0.1:%d/readyz", s.securePort)
	}
	s.ReadyFiles = func() []string { return []string{s.Kubeconfig()} }
	if len(s.tokenUsers) > 0 {
		if s.tokenUsers, err = completeTokenUsers(s.tokenUsers); err != nil {
			return nil, err
		}
		if err := writeTokenFile(s.tokenFile(), s.tokenUsers); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// RootDir returns the shard's --root-directory.
func (s *Shard) RootDir() string { return s.rootDir }

// Kubeconfig returns the path of the admin.kubeconfig the shard writes.
func (s *Shard) Kubeconfig() string {
	if s.kubeconfigPath != "" {
		return s.kubeconfigPath
	}
	return filepath.Join(s.rootDir, "admin.kubeconfig")
}

// SecurePort returns the port the shard serves HTTPS on.
func (s *Shard) SecurePort() int { return s.securePort }

// EtcdPorts returns the client and peer ports of the embedded etcd.
func (s *Shard) EtcdPorts() (client, peer int) { return s.etcdClientPort, s.etcdPeerPort }

func (s *Shard) tokenFile() string { return filepath.Join(s.WorkDir, "tokens.csv") }

func (s *Shard) args() []string {
	var args []string
	if s.subcommand != "" {
		args = append(args, s.subcommand)
	}
	if s.commandLine != nil {
		return append(args, s.commandLine(s)...)
	}
	args = append(args,
		"--root-directory="+s.rootDir,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(s.securePort),
		"--embedded-etcd-client-port="+strconv.Itoa(s.etcdClientPort),
		"--embedded-etcd-peer-port="+strconv.Itoa(s.etcdPeerPort),
	)
	if len(s.tokenUsers) > 0 {
		args = append(args, "--token-auth-file="+s.tokenFile())
	}
	return append(args, s.extraArgs...)
}

// Restart stops the shard and starts it again on the same root directory and
// ports. A failure to start fails the test.
func (s *Shard) Restart(t testing.TB) {
	t.Helper()
	if err := s.Stop(); err != nil {
		t.Errorf("stop shard for restart: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("restart shard: %v", err) // a StartShard cleanup prints the log
	}
}

// Close stops the shard and, for a shard from Start, removes its directories.
func (s *Shard) Close() error {
	err := s.Stop()
	if s.ownsDirs {
		err = errors.Join(err, os.RemoveAll(s.rootDir), os.RemoveAll(s.WorkDir))
	}
	return err
}
