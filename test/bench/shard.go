package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shardplane/shardplane/test/framework"
)

// target is the shard under test.
type target struct {
	masters *rest.Config // system:masters, shard base URL
	admin   *rest.Config // kcp-admin, shard base URL
	pid     int          // 0 when the shard is not ours
	stop    func()
	http    *http.Client
}

// startShard starts the shard binary on free loopback ports in a temporary
// root directory and returns once /readyz answers.
func startShard(ctx context.Context, binary string) (*target, time.Duration, error) {
	dir, err := os.MkdirTemp("", "shardplane-bench-")
	if err != nil {
		return nil, 0, err
	}
	ports, err := framework.FindFreePorts(3)
	if err != nil {
		return nil, 0, err
	}
	proc := &framework.Process{
		Name:   "shard",
		Binary: binary,
		Args: func() []string {
			return []string{"--root-directory=" + filepath.Join(dir, "root"), "--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(ports[0]), "--embedded-etcd-client-port=" + strconv.Itoa(ports[1]),
				"--embedded-etcd-peer-port=" + strconv.Itoa(ports[2])}
		},
		WorkDir:  dir,
		ReadyURL: fmt.Sprintf("https://127.0.0.1:%d/readyz", ports[0]),
		// Start-up is a measured figure: probe often.
		ReadyInterval: 20 * time.Millisecond,
		ReadyTimeout:  3 * time.Minute,
	}
	stop := func() {
		if err := proc.Stop(); errors.Is(err, framework.ErrExited) {
			// It stopped on its own: keep its log.
			fmt.Fprintf(os.Stderr, "bench: the shard exited before the bench stopped it (%v); its log is %s, ending:\n%s\n",
				err, proc.LogPath(), logTail(proc.LogPath(), 40))
			return
		}
		_ = os.RemoveAll(dir)
	}
	start := time.Now()
	if err := proc.StartContext(ctx); err != nil {
		stop()
		return nil, 0, fmt.Errorf("shard not ready after %s (%w), log in %s", time.Since(start), err, proc.LogPath())
	}
	elapsed := time.Since(start)
	t, err := loadTarget(filepath.Join(dir, "root", "admin.kubeconfig"))
	if err != nil {
		stop()
		return nil, 0, err
	}
	t.pid, t.stop = proc.PID(), stop
	return t, elapsed, nil
}

// loadTarget reads the shard-base (system:masters) and base (kcp-admin)
// contexts of an admin.kubeconfig.
func loadTarget(kubeconfig string) (*target, error) {
	load := func(context string) (*rest.Config, error) {
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig},
			&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("context %s of %s: %w", context, kubeconfig, err)
		}
		cfg.QPS, cfg.Burst = -1, 0
		return cfg, nil
	}
	masters, err := load("shard-base")
	if err != nil {
		return nil, err
	}
	admin, err := load("base")
	if err != nil {
		return nil, err
	}
	hc, err := rest.HTTPClientFor(masters)
	if err != nil {
		return nil, err
	}
	return &target{masters: masters, admin: admin, stop: func() {}, http: hc}, nil
}

// rss returns the resident set size of the shard process, or -1.
func (t *target) rss() int64 {
	if t.pid == 0 {
		return -1
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", t.pid))
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), "VmRSS:") {
			fields := strings.Fields(s.Text())
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return -1
}

func (t *target) get(path string) (string, error) {
	resp, err := t.http.Get(strings.TrimSuffix(t.masters.Host, "/") + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return string(b), err
}

// memory runs a GC in the shard (the heap profile endpoint does) and returns
// RSS and the Go heap in use.
func (t *target) memory() (rss, heap int64) {
	rss, heap, _ = t.memoryLive()
	return rss, heap
}

// memoryLive is memory with the live heap after the same GC, both heap
// figures from one read of /metrics.
func (t *target) memoryLive() (rss, heap, live int64) {
	_, _ = t.get("/debug/pprof/heap?gc=1")
	time.Sleep(200 * time.Millisecond)
	heap, live = -1, -1
	if m, err := t.metrics(); err == nil {
		heap = int64(valueOr(m, "go_memstats_heap_inuse_bytes", nil))
		live = int64(valueOr(m, "go_memstats_heap_alloc_bytes", nil))
	}
	return t.rss(), heap, live
}

// metrics reads and parses /metrics.
func (t *target) metrics() (framework.Metrics, error) {
	text, err := t.get("/metrics")
	if err != nil {
		return nil, err
	}
	return framework.ParseMetrics(strings.NewReader(text))
}

// valueOr returns the value of the first series of name with labels, or
// -1 when there is none.
func valueOr(m framework.Metrics, name string, labels map[string]string) float64 {
	if v, ok := m.Value(name, labels); ok {
		return v
	}
	return -1
}

// gauge returns the value of an unlabelled metric on /metrics, or -1.
func (t *target) gauge(name string) int {
	return int(t.value(name))
}

// value returns the value of an unlabelled metric on /metrics, or -1.
func (t *target) value(name string) float64 {
	m, err := t.metrics()
	if err != nil {
		return -1
	}
	return valueOr(m, name, nil)
}

// cpuMsPer returns the shard's CPU milliseconds per unit of work since
// before (process_cpu_seconds_total read then), or 0 when it cannot tell:
// unlike a rate, it does not depend on how fast the machine runs at the
// time, which on shared machines changes from run to run.
func (t *target) cpuMsPer(before float64, units int) float64 {
	after := t.value("process_cpu_seconds_total")
	if before < 0 || after < before || units == 0 {
		return 0
	}
	return (after - before) * 1000 / float64(units)
}

// histogramMark is the sum and count of a histogram on /metrics at one
// moment, over the series whose labels contain labels.
type histogramMark struct {
	name       string
	labels     map[string]string
	sum, count float64
}

// mark reads a histogram, see histogramMark.
func (t *target) mark(name string, labels map[string]string) histogramMark {
	m := histogramMark{name: name, labels: labels}
	if metrics, err := t.metrics(); err == nil {
		m.sum, m.count = metrics.HistogramTotals(name, labels)
	}
	return m
}

// meanMsSince returns the mean in milliseconds of the observations (in
// seconds) made since m, and how many there were.
func (t *target) meanMsSince(m histogramMark) (float64, int) {
	now := t.mark(m.name, m.labels)
	if now.count <= m.count {
		return 0, 0
	}
	return (now.sum - m.sum) / (now.count - m.count) * 1000, int(now.count - m.count)
}

// metricSeries counts the samples on /metrics.
func (t *target) metricSeries() int {
	m, err := t.metrics()
	if err != nil {
		return -1
	}
	return m.Samples()
}

// logTail returns the end of the shard's log at path: from its first panic
// or fatal error, if any (the goroutine dump after it is long), else the
// last n lines; at most n lines either way.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	from := max(0, len(lines)-n)
	for i, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			from = i
			break
		}
	}
	return strings.Join(lines[from:min(len(lines), from+n)], "\n")
}
