package framework

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Process is one server binary of the project run by a test: the shard, and
// the other binaries as they come. It is started with its arguments, is
// ready when its readiness URL answers 200 and its ready files exist, logs
// to a file in its work directory, and is stopped by PID.
type Process struct {
	// Name names the process in messages and its log file (<name>.log).
	Name string
	// Binary is the executable.
	Binary string
	// Args returns the command line; it is called on every start.
	Args func() []string
	// WorkDir is the process's working directory and holds its log.
	WorkDir string
	// ReadyURL is polled (without TLS verification: the CA may not exist
	// yet) until it answers 200; empty waits for ReadyFiles alone.
	ReadyURL string
	// ReadyFiles must exist before the process counts as ready (an admin
	// kubeconfig the process writes, say).
	ReadyFiles func() []string
	// ReadyInterval is how often readiness is probed (default 250 ms); the
	// benchmark probes more often because it times start-up.
	ReadyInterval time.Duration
	// ReadyTimeout bounds the wait for readiness (default 3 minutes).
	ReadyTimeout time.Duration
	// StopTimeout is how long Stop waits after SIGTERM before it kills
	// (default 20 seconds).
	StopTimeout time.Duration

	mu     sync.Mutex
	proc   *runningProcess // nil when stopped
	starts int
}

// runningProcess is one run of the binary.
type runningProcess struct {
	cmd     *exec.Cmd
	log     *os.File
	exited  chan struct{} // closed when cmd has exited
	waitErr error         // cmd.Wait's result; read only after exited is closed
}

// LogPath returns the file that receives the process's stdout and stderr.
func (p *Process) LogPath() string { return filepath.Join(p.WorkDir, p.Name+".log") }

// ErrExited is what Stop returns (wrapped) when the process had exited on
// its own before it was stopped.
var ErrExited = errors.New("exited before it was stopped")

// Start runs the binary and waits until it is ready.
func (p *Process) Start() error { return p.StartContext(context.Background()) }

// StartContext is Start that stops waiting for readiness when ctx ends.
// A process that does not become ready keeps running until Stop or Kill.
func (p *Process) StartContext(ctx context.Context) error {
	run, err := p.spawn()
	if err != nil {
		return err
	}
	return p.waitReady(ctx, run)
}

// PID is the process ID of the running process, 0 when it is stopped.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc == nil {
		return 0
	}
	return p.proc.cmd.Process.Pid
}

func (p *Process) spawn() (*runningProcess, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.proc != nil {
		return nil, fmt.Errorf("%s is already running", p.Name)
	}
	logFile, err := os.OpenFile(p.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", p.Name, err)
	}
	p.starts++
	args := p.Args()
	fmt.Fprintf(logFile, "=== e2e framework: start #%d: %s %s\n", p.starts, p.Binary, strings.Join(args, " "))

	binary := p.Binary
	if strings.ContainsRune(binary, filepath.Separator) {
		// exec would resolve a relative path against WorkDir.
		if binary, err = filepath.Abs(binary); err != nil {
			logFile.Close()
			return nil, fmt.Errorf("locate %s: %w", p.Binary, err)
		}
	}
	cmd := exec.Command(binary, args...)
	cmd.Dir = p.WorkDir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("run %s: %w", p.Binary, err)
	}
	run := &runningProcess{cmd: cmd, log: logFile, exited: make(chan struct{})}
	go func() {
		run.waitErr = cmd.Wait()
		close(run.exited)
	}()
	p.proc = run
	return run, nil
}

// waitReady polls the readiness URL until it answers 200 and the ready
// files exist. Only this probe skips TLS verification.
func (p *Process) waitReady(ctx context.Context, run *runningProcess) error {
	client := &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			Proxy:           nil,
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // readiness probe only
		},
	}
	defer client.CloseIdleConnections()
	var last string
	err := wait.PollUntilContextTimeout(ctx, cmp.Or(p.ReadyInterval, 250*time.Millisecond), cmp.Or(p.ReadyTimeout, readyTimeout), true, func(ctx context.Context) (bool, error) {
		select {
		case <-run.exited:
			return false, fmt.Errorf("%s exited before it was ready: %v", p.Name, run.waitErr)
		default:
		}
		if p.ReadyURL != "" {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.ReadyURL, nil)
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
		}
		if p.ReadyFiles != nil {
			for _, f := range p.ReadyFiles() {
				if _, err := os.Stat(f); err != nil {
					last = fmt.Sprintf("ready, but %v", err)
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("wait for %s (last answer: %s): %w", p.ReadyURL, last, err)
	}
	return nil
}

// take returns the running process, if any, and forgets it: only one of
// Stop and Kill ends it.
func (p *Process) take() *runningProcess {
	p.mu.Lock()
	defer p.mu.Unlock()
	run := p.proc
	p.proc = nil
	return run
}

// Stop sends SIGTERM to the process and waits for it to exit, killing it
// after stopTimeout. It returns an error when the process had already
// exited on its own, did not stop in time, or exited unsuccessfully.
func (p *Process) Stop() error {
	run := p.take()
	if run == nil {
		return nil
	}
	defer run.log.Close()
	pid := run.cmd.Process.Pid

	select {
	case <-run.exited:
		return fmt.Errorf("%s (pid %d) %w: %v", p.Name, pid, ErrExited, run.waitErr)
	default:
	}
	if err := run.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("send SIGTERM to %s (pid %d): %w", p.Name, pid, err)
	}
	select {
	case <-run.exited:
		if run.waitErr != nil {
			return fmt.Errorf("%s (pid %d) exited unsuccessfully after SIGTERM: %w", p.Name, pid, run.waitErr)
		}
		return nil
	case <-time.After(cmp.Or(p.StopTimeout, stopTimeout)):
	}
	killErr := run.cmd.Process.Kill()
	select {
	case <-run.exited:
	case <-time.After(10 * time.Second):
	}
	return fmt.Errorf("%s (pid %d) did not exit within %s of SIGTERM and was killed (kill: %v)", p.Name, pid, cmp.Or(p.StopTimeout, stopTimeout), killErr)
}

// Kill kills the process with SIGKILL, as a crash would, and waits until
// it is gone; Start runs it again.
func (p *Process) Kill() error {
	run := p.take()
	if run == nil {
		return nil
	}
	defer run.log.Close()
	select {
	case <-run.exited:
		return nil
	default:
	}
	if err := run.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s (pid %d): %w", p.Name, run.cmd.Process.Pid, err)
	}
	<-run.exited
	return nil
}

// LogSize returns the current length of the log, to be passed to
// LogTailSince later.
func (p *Process) LogSize() int64 {
	fi, err := os.Stat(p.LogPath())
	if err != nil {
		return 0
	}
	return fi.Size()
}

// LogTail returns the last n lines of the log.
func (p *Process) LogTail(n int) string { return p.LogTailSince(0, n) }

// LogTailSince returns the last n lines logged after the log had the given
// size.
func (p *Process) LogTailSince(offset int64, n int) string {
	const maxRead = 1 << 20
	f, err := os.Open(p.LogPath())
	if err != nil {
		return fmt.Sprintf("(no %s log: %v)", p.Name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(%s log: %v)", p.Name, err)
	}
	offset = max(offset, fi.Size()-maxRead)
	if offset < 0 || offset > fi.Size() {
		offset = 0
	}
	b, err := io.ReadAll(io.NewSectionReader(f, offset, fi.Size()-offset))
	if err != nil {
		return fmt.Sprintf("(%s log: %v)", p.Name, err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
