// Package framework starts kplane shard processes for end-to-end tests and
// hands out clients for them. It only ever talks to loopback addresses and
// only ends processes it started, by their PID.
package framework

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
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

// Shard is a shard process with embedded etcd under its root directory.
type Shard struct {
	binary   string
	rootDir  string // --root-directory; holds admin.kubeconfig and etcd data
	workDir  string // the framework's own files: log, token file, kubectl cache
	ownsDirs bool   // Close removes rootDir and workDir

	securePort, etcdClientPort, etcdPeerPort int

	tokenUsers     []TokenUser
	extraArgs      []string
	subcommand     string
	kubeconfigPath string

	mu     sync.Mutex
	proc   *process // the running process, nil when stopped
	starts int
}

// process is one run of the shard binary.
type process struct {
	cmd     *exec.Cmd
	log     *os.File
	exited  chan struct{} // closed when cmd has exited
	waitErr error         // cmd.Wait's result; read only after exited is closed
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
	if err := s.start(); err != nil {
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
	rootDir, err := os.MkdirTemp("", "kplane-e2e-root-")
	if err != nil {
		return nil, fmt.Errorf("create root directory: %w", err)
	}
	workDir, err := os.MkdirTemp("", "kplane-e2e-work-")
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
	if err := s.start(); err != nil {
		tail := s.LogTail(logTailLines)
		_ = s.Close()
		return nil, fmt.Errorf("start shard: %w\ntail of shard log:\n%s", err, tail)
	}
	return s, nil
}

func newShard(bin, rootDir, workDir string, opts ...Option) (*Shard, error) {
	s := &Shard{binary: bin, rootDir: rootDir, workDir: workDir}
	for _, o := range opts {
		o(s)
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	s.securePort, s.etcdClientPort, s.etcdPeerPort = ports[0], ports[1], ports[2]
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

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		// Held open until all are picked, so the ports differ.
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
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

// LogPath returns the file that receives the shard's stdout and stderr.
func (s *Shard) LogPath() string { return filepath.Join(s.workDir, "shard.log") }

// SecurePort returns the port the shard serves HTTPS on.
func (s *Shard) SecurePort() int { return s.securePort }

func (s *Shard) tokenFile() string { return filepath.Join(s.workDir, "tokens.csv") }

func (s *Shard) args() []string {
	var args []string
	if s.subcommand != "" {
		args = append(args, s.subcommand)
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

// start runs the binary and waits until it is ready.
func (s *Shard) start() error {
	p, err := s.spawn()
	if err != nil {
		return err
	}
	return s.waitReady(p)
}

func (s *Shard) spawn() (*process, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return nil, errors.New("shard is already running")
	}
	logFile, err := os.OpenFile(s.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open shard log: %w", err)
	}
	s.starts++
	args := s.args()
	fmt.Fprintf(logFile, "=== e2e framework: start #%d: %s %s\n", s.starts, s.binary, strings.Join(args, " "))

	cmd := exec.Command(s.binary, args...)
	cmd.Dir = s.workDir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("run %s: %w", s.binary, err)
	}
	p := &process{cmd: cmd, log: logFile, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	s.proc = p
	return p, nil
}

// waitReady polls /readyz until it answers 200 and admin.kubeconfig exists.
// Only this probe skips TLS verification: the CA is not known before the
// shard has written its kubeconfig.
func (s *Shard) waitReady(p *process) error {
	client := &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			Proxy:           nil,
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // readiness probe only
		},
	}
	defer client.CloseIdleConnections()
	url := fmt.Sprintf("https://127.0.0.1:%d/readyz", s.securePort)
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-p.exited:
			return false, fmt.Errorf("shard exited before it was ready: %v", p.waitErr)
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			last = fmt.Sprintf("%d: %s", resp.StatusCode, body)
			return false, nil
		}
		if _, err := os.Stat(s.Kubeconfig()); err != nil {
			last = fmt.Sprintf("ready, but no kubeconfig: %v", err)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("wait for %s (last answer: %s): %w", url, last, err)
	}
	return nil
}

// Stop sends SIGTERM to the shard and waits for it to exit, killing it after
// 20s. It returns an error when the shard had already exited on its own, did
// not stop in time, or exited unsuccessfully.
func (s *Shard) Stop() error {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	defer p.log.Close()
	pid := p.cmd.Process.Pid

	select {
	case <-p.exited:
		return fmt.Errorf("shard (pid %d) had exited before it was stopped: %v", pid, p.waitErr)
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("send SIGTERM to shard (pid %d): %w", pid, err)
	}
	select {
	case <-p.exited:
		if p.waitErr != nil {
			return fmt.Errorf("shard (pid %d) exited unsuccessfully after SIGTERM: %w", pid, p.waitErr)
		}
		return nil
	case <-time.After(stopTimeout):
	}
	killErr := p.cmd.Process.Kill()
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
	}
	return fmt.Errorf("shard (pid %d) did not exit within %s of SIGTERM and was killed (kill: %v)", pid, stopTimeout, killErr)
}

// Restart stops the shard and starts it again on the same root directory and
// ports. A failure to start fails the test.
func (s *Shard) Restart(t testing.TB) {
	t.Helper()
	if err := s.Stop(); err != nil {
		t.Errorf("stop shard for restart: %v", err)
	}
	if err := s.start(); err != nil {
		t.Fatalf("restart shard: %v", err) // a StartShard cleanup prints the log
	}
}

// Close stops the shard and, for a shard from Start, removes its directories.
func (s *Shard) Close() error {
	err := s.Stop()
	if s.ownsDirs {
		err = errors.Join(err, os.RemoveAll(s.rootDir), os.RemoveAll(s.workDir))
	}
	return err
}

// LogSize returns the current length of the shard log, to be passed to
// LogTailSince later.
func (s *Shard) LogSize() int64 {
	fi, err := os.Stat(s.LogPath())
	if err != nil {
		return 0
	}
	return fi.Size()
}

// LogTail returns the last n lines of the shard log.
func (s *Shard) LogTail(n int) string { return s.LogTailSince(0, n) }

// LogTailSince returns the last n lines that the shard logged after the log
// had the given size.
func (s *Shard) LogTailSince(offset int64, n int) string {
	const maxRead = 1 << 20
	f, err := os.Open(s.LogPath())
	if err != nil {
		return fmt.Sprintf("(no shard log: %v)", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(shard log: %v)", err)
	}
	offset = max(offset, fi.Size()-maxRead)
	if offset < 0 || offset > fi.Size() {
		offset = 0
	}
	b, err := io.ReadAll(io.NewSectionReader(f, offset, fi.Size()-offset))
	if err != nil {
		return fmt.Sprintf("(shard log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
