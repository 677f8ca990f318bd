package main

// The system mode (--mode=system, issue 14) starts the root shard, more
// shards and the front-proxy with pkg/system, as `make run-system` does,
// and measures what the front-proxy adds: request latency directly on a
// shard against through the proxy in the same run, watch events through
// the proxy, how fast the proxy's index follows a workspace's creation and
// deletion, the proxy's memory with many workspaces, and workspaces per
// second over several shards.

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/system"
	"github.com/shardplane/shardplane/test/framework"
)

const (
	// pollPeriod is how often the index convergence run asks the proxy.
	pollPeriod = 5 * time.Millisecond
	// convergenceTimeout bounds one convergence sample.
	convergenceTimeout = time.Minute
	// latencyWorkspace holds the configmaps of the latency and watch runs.
	latencyWorkspace = "proxy-latency"
	// rssGoal is the workspace count of issue 14's proxy memory target.
	rssGoal = 10000
)

// systemOptions are the flags of the system mode.
type systemOptions struct {
	frontProxyBinary  string
	cacheServerBinary string
	shards            int
	// workspaces are created flat through the proxy for workspaces/s and
	// the proxy's memory reading.
	workspaces         int
	latencyConcurrency int
	watchEvents        int
	convergence        int
	keepDir            bool
}

func (s *systemOptions) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.frontProxyBinary, "front-proxy-binary", "bin/front-proxy", "front-proxy binary for --mode=system")
	fs.StringVar(&s.cacheServerBinary, "cache-server-binary", "", "cache-server binary for --mode=system, started before the shards as make run-system does (empty: none)")
	fs.IntVar(&s.shards, "system-shards", 2, "shards of --mode=system, root included")
	fs.IntVar(&s.workspaces, "system-workspaces", 2000, "workspaces created flat through the front-proxy in --mode=system (workspaces/s and proxy memory; issue 14's memory point is 10000)")
	fs.IntVar(&s.latencyConcurrency, "system-latency-concurrency", 1, "clients of the direct-vs-proxy latency run of --mode=system (each sends one request directly and one through the proxy in turn)")
	fs.IntVar(&s.watchEvents, "system-watch-events", 2000, "configmaps created while watching through the proxy in --mode=system")
	fs.IntVar(&s.convergence, "system-convergence-samples", 100, "workspaces created and deleted one at a time for the index convergence of --mode=system")
	fs.BoolVar(&s.keepDir, "system-keep-dir", false, "keep the system's directory (logs, kubeconfigs) after --mode=system")
}

// systemResults are the numbers of the system mode; keys are prefixed
// proxy_ (the front-proxy) or system_ (the shards, or the system as a
// whole).
type systemResults struct {
	Shards              int     `json:"system_shards"`
	Concurrency         int     `json:"system_concurrency"`
	StartToReadySeconds float64 `json:"system_start_to_ready_seconds"`

	// Direct on the shard of the latency workspace against through the
	// proxy, interleaved.
	LatencyShard string `json:"system_latency_shard"`
	// LatencyMisplaced counts latency workspaces skipped because their
	// LogicalCluster was not on exactly the shard they name.
	LatencyMisplaced   int     `json:"system_latency_workspaces_misplaced"`
	LatencyRequests    int     `json:"system_latency_requests"`
	LatencyConcurrency int     `json:"system_latency_concurrency"`
	DirectGetP50Ms     float64 `json:"system_direct_get_p50_ms"`
	DirectGetP99Ms     float64 `json:"system_direct_get_p99_ms"`
	ProxyGetP50Ms      float64 `json:"proxy_get_p50_ms"`
	ProxyGetP99Ms      float64 `json:"proxy_get_p99_ms"`
	ProxyGetAddedP50Ms float64 `json:"proxy_get_added_p50_ms"`
	ProxyGetAddedPct   float64 `json:"proxy_get_added_p50_pct"`
	// ProxyCPUPerGetUs is the proxy's CPU time (user and system, /proc)
	// over the GET run divided by its proxied GETs.
	ProxyCPUPerGetUs   float64 `json:"proxy_cpu_per_get_us"`
	DirectCreateP50Ms  float64 `json:"system_direct_create_p50_ms"`
	DirectCreateP99Ms  float64 `json:"system_direct_create_p99_ms"`
	ProxyCreateP50Ms   float64 `json:"proxy_create_p50_ms"`
	ProxyCreateP99Ms   float64 `json:"proxy_create_p99_ms"`
	ProxyCreateAddedMs float64 `json:"proxy_create_added_p50_ms"`
	ProxyCreateAddPct  float64 `json:"proxy_create_added_p50_pct"`
	// The bare proxy (bareproxy.go) in the same run: what a hop that only
	// terminates TLS and HTTP/2 adds, the floor of the proxy's figures.
	BareGetP50Ms      float64 `json:"bare_proxy_get_p50_ms"`
	BareGetAddedP50Ms float64 `json:"bare_proxy_get_added_p50_ms"`
	BareGetAddedPct   float64 `json:"bare_proxy_get_added_p50_pct"`
	BareCreateP50Ms   float64 `json:"bare_proxy_create_p50_ms"`
	BareCreateAddedMs float64 `json:"bare_proxy_create_added_p50_ms"`
	BareCreateAddPct  float64 `json:"bare_proxy_create_added_p50_pct"`

	// Watch: configmaps created directly on the shard, watched directly
	// and through the proxy at once.
	WatchEvents             int     `json:"proxy_watch_events"`
	ProxyWatchEventsPerSec  float64 `json:"proxy_watch_events_per_sec"`
	DirectWatchEventsPerSec float64 `json:"system_direct_watch_events_per_sec"`
	ProxyWatchDelayP50Ms    float64 `json:"proxy_watch_delay_p50_ms"`
	ProxyWatchDelayP99Ms    float64 `json:"proxy_watch_delay_p99_ms"`

	// Workspaces created flat through the proxy.
	Workspaces         int            `json:"system_workspaces"`
	WSPerSecFlat       float64        `json:"system_ws_per_sec_flat"`
	WSReadyP50Ms       float64        `json:"system_ws_ready_p50_ms"`
	WSReadyP99Ms       float64        `json:"system_ws_ready_p99_ms"`
	WorkspacesPerShard map[string]int `json:"system_workspaces_per_shard"`
	// ClustersOnSeveralShards counts root's Workspaces whose logical
	// cluster has a LogicalCluster on more than one shard;
	// WorkspacesNotOnNamedShard those whose named shard has none.
	ClustersOnSeveralShards   int `json:"system_clusters_on_several_shards"`
	WorkspacesNotOnNamedShard int `json:"system_workspaces_not_on_named_shard"`

	// Proxy memory: idle, and with the workspaces (all shards' Workspaces
	// and LogicalClusters in its index).
	ProxyRSSIdleBytes  int64 `json:"proxy_rss_idle_bytes"`
	ProxyHeapIdleBytes int64 `json:"proxy_heap_idle_bytes"`
	// ProxyRSSBeforeWSBytes is read after the latency and watch runs,
	// before the workspaces: the base of the per-workspace slope.
	ProxyRSSBeforeWSBytes   int64            `json:"proxy_rss_before_workspaces_bytes"`
	ProxyRSSBytes           int64            `json:"proxy_rss_bytes"`
	ProxyHeapBytes          int64            `json:"proxy_heap_bytes"`
	ProxyRSSBytesPerWS      float64          `json:"proxy_rss_bytes_per_workspace"`
	ProxyRSSAt10kEstimate   int64            `json:"proxy_rss_10k_estimate_bytes,omitempty"`
	ProxyGoroutines         int              `json:"proxy_goroutines"`
	ShardRSSBytes           map[string]int64 `json:"system_shard_rss_bytes"`
	IndexSamples            int              `json:"proxy_index_samples"`
	IndexCreateP50Ms        float64          `json:"proxy_index_create_p50_ms"`
	IndexCreateP99Ms        float64          `json:"proxy_index_create_p99_ms"`
	IndexCreateMaxMs        float64          `json:"proxy_index_create_max_ms"`
	IndexServedBeforeReady  int              `json:"proxy_index_served_before_ready"`
	IndexDeleteP50Ms        float64          `json:"proxy_index_delete_p50_ms"`
	IndexDeleteP99Ms        float64          `json:"proxy_index_delete_p99_ms"`
	IndexDeleteMaxMs        float64          `json:"proxy_index_delete_max_ms"`
	IndexUnexpectedStatuses int              `json:"proxy_index_unexpected_statuses"`
}

// systemRun holds the started system and its clients.
type systemRun struct {
	sys    *system.System
	dir    string
	shards int
	// proxy is kcp-admin through the front-proxy (admin.kubeconfig, base).
	proxy *rest.Config
	// masters is system:masters on the root shard; shardConfig moves it.
	masters *rest.Config
	// proxyHTTP reads the front-proxy's /metrics.
	proxyHTTP *http.Client
}

// shardConfig returns system:masters on a shard.
func (s *systemRun) shardConfig(shard string) *rest.Config {
	cfg := rest.CopyConfig(s.masters)
	cfg.Host = s.sys.ShardURL(shard)
	return cfg
}

// directConfig returns kcp-admin (the proxy's user) directly on a shard:
// the shards accept the same token, so both paths authorize the same user.
func (s *systemRun) directConfig(shard string) *rest.Config {
	cfg := s.shardConfig(shard)
	cfg.BearerToken = s.proxy.BearerToken
	return cfg
}

func runSystem(ctx context.Context, o options) (results, error) {
	sr := &systemResults{Shards: o.system.shards, Concurrency: o.concurrency}
	r := results{systemResults: sr}
	step := func(s string) { fmt.Fprintf(os.Stderr, "bench: %s\n", s) }

	dir, err := os.MkdirTemp("", "shardplane-bench-system-")
	if err != nil {
		return r, err
	}
	if o.system.keepDir {
		step("system directory " + dir)
	} else {
		defer os.RemoveAll(dir)
	}
	step(fmt.Sprintf("starting %d shards and the front-proxy", o.system.shards))
	start := time.Now()
	sys, err := system.Start(ctx, system.Options{Dir: dir, Shards: o.system.shards, FrontProxies: 1,
		ShardBinary: o.shardBinary, FrontProxyBinary: o.system.frontProxyBinary, CacheServerBinary: o.system.cacheServerBinary})
	if err != nil {
		return r, err
	}
	defer sys.Stop()
	sr.StartToReadySeconds = time.Since(start).Seconds()

	s := &systemRun{sys: sys, dir: dir, shards: o.system.shards}
	if s.proxy, err = contextConfig(filepath.Join(dir, system.AdminKubeconfigFile), "base"); err != nil {
		return r, err
	}
	if s.masters, err = contextConfig(filepath.Join(dir, "system-admin.kubeconfig"), ""); err != nil {
		return r, err
	}
	if s.proxyHTTP, err = rest.HTTPClientFor(s.proxy); err != nil {
		return r, err
	}

	// Workspaces are created through the proxy and seen Ready on a wildcard
	// watch of the root shard, which holds the Workspaces of root.
	b, err := newBench(&target{admin: s.proxy, masters: s.masters}, o.concurrency)
	if err != nil {
		return r, err
	}
	defer b.stopWatch()

	time.Sleep(2 * time.Second)
	sr.ProxyRSSIdleBytes, sr.ProxyHeapIdleBytes, _ = s.proxyMemory()

	step("direct and proxied configmap GET and CREATE, interleaved")
	lat, err := s.newLatencyRun(ctx, b, sr)
	if err != nil {
		return r, err
	}
	if err := lat.requests(ctx, sr, o.requests, o.system.latencyConcurrency); err != nil {
		return r, err
	}

	step(fmt.Sprintf("watching %d configmap creations directly and through the proxy", o.system.watchEvents))
	if err := lat.watchRun(ctx, sr, o.system.watchEvents, o.concurrency); err != nil {
		return r, err
	}

	step(fmt.Sprintf("creating %d workspaces flat under root through the proxy", o.system.workspaces))
	sr.Workspaces = o.system.workspaces
	sr.ProxyRSSBeforeWSBytes, _, _ = s.proxyMemory()
	rate, ready, err := b.createFlat(ctx, b.names("sys", o.system.workspaces))
	if err != nil {
		return r, err
	}
	sr.WSPerSecFlat, sr.WSReadyP50Ms, sr.WSReadyP99Ms = rate, percentile(ready, 50), percentile(ready, 99)
	p, err := s.placements(ctx)
	if err != nil {
		return r, err
	}
	sr.WorkspacesPerShard, sr.ClustersOnSeveralShards, sr.WorkspacesNotOnNamedShard = p.perShard, p.onSeveral, p.notOnNamed
	time.Sleep(2 * time.Second)
	sr.ProxyRSSBytes, sr.ProxyHeapBytes, sr.ProxyGoroutines = s.proxyMemory()
	if sr.Workspaces > 0 {
		sr.ProxyRSSBytesPerWS = float64(sr.ProxyRSSBytes-sr.ProxyRSSBeforeWSBytes) / float64(sr.Workspaces)
		// Below a thousand, page and heap growth steps dominate the slope.
		if sr.Workspaces >= 1000 && sr.Workspaces < rssGoal {
			sr.ProxyRSSAt10kEstimate = sr.ProxyRSSBytes + int64(sr.ProxyRSSBytesPerWS*float64(rssGoal-sr.Workspaces))
		}
	}
	sr.ShardRSSBytes = map[string]int64{}
	for i := 0; i < o.system.shards; i++ {
		name := system.ShardName(i)
		sr.ShardRSSBytes[name] = pidRSS(filepath.Join(dir, name+".pid"))
	}

	step(fmt.Sprintf("index convergence: %d workspaces created and deleted one at a time", o.system.convergence))
	if err := s.convergence(ctx, b, sr, o.system.convergence); err != nil {
		return r, err
	}
	return r, nil
}

// contextConfig loads one context of a kubeconfig (the current one for
// ""), with client-side rate limiting off.
func contextConfig(kubeconfig, context string) (*rest.Config, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("context %q of %s: %w", context, kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	return cfg, nil
}

// pidRSS returns the resident set size of the process whose PID is in
// file, or -1.
func pidRSS(file string) int64 {
	data, err := os.ReadFile(file)
	if err != nil {
		return -1
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return -1
	}
	return (&target{pid: pid}).rss()
}

// pidCPU returns the user and system CPU time of the process whose PID is
// in file (/proc/<pid>/stat, in clock ticks of 10 ms), or 0.
func pidCPU(file string) time.Duration {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	return procCPU(strings.TrimSpace(string(data)))
}

// procCPU is pidCPU of a PID ("self" for the bench).
func procCPU(pid string) time.Duration {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses: utime and
	// stime are the 12th and 13th.
	_, after, _ := strings.Cut(string(stat), ") ")
	fields := strings.Fields(after)
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// proxyMemory reads the front-proxy's RSS (/proc) and its Go heap in use
// and goroutines (its /metrics, which needs no credentials). The proxy
// offers no forced GC: the heap includes garbage not yet collected.
func (s *systemRun) proxyMemory() (rss, heap int64, goroutines int) {
	rss = pidRSS(filepath.Join(s.dir, "front-proxy.pid"))
	heap, goroutines = -1, -1
	m, err := framework.ScrapeMetrics(context.Background(), s.proxyHTTP, s.sys.URL()+"/metrics", "")
	if err != nil {
		return rss, heap, goroutines
	}
	if v, ok := m.Value("go_memstats_heap_inuse_bytes", nil); ok {
		heap = int64(v)
	}
	if v, ok := m.Value("go_goroutines", nil); ok {
		goroutines = int(v)
	}
	return rss, heap, goroutines
}

// placement is where the Workspaces of root and the LogicalClusters of
// every shard are.
type placement struct {
	// hosts are the shards that have a LogicalCluster, by cluster.
	hosts map[logicalcluster.Name][]string
	// perShard counts the Workspaces of root by the shard they name.
	perShard map[string]int
	// onSeveral counts the clusters of root's Workspaces that have a
	// LogicalCluster on more than one shard; notOnNamed those whose named
	// shard has none.
	onSeveral, notOnNamed int
}

// placements lists the LogicalClusters of every shard and the Workspaces
// of root (as system:masters on each shard).
func (s *systemRun) placements(ctx context.Context) (*placement, error) {
	p := &placement{hosts: map[logicalcluster.Name][]string{}, perShard: map[string]int{}}
	for i := 0; i < s.shards; i++ {
		name := system.ShardName(i)
		c, err := kcpclient.New(s.shardConfig(name))
		if err != nil {
			return nil, err
		}
		list := &corev1alpha1.LogicalClusterList{}
		if err := c.List(ctx, logicalcluster.Wildcard, kcpclient.LogicalClusters, list); err != nil {
			return nil, fmt.Errorf("list LogicalClusters of shard %s: %w", name, err)
		}
		for _, lc := range list.Items {
			if cluster, ok := logicalcluster.ObjectCluster(lc.Annotations); ok {
				p.hosts[cluster] = append(p.hosts[cluster], name)
			}
		}
	}
	root, err := kcpclient.New(s.masters)
	if err != nil {
		return nil, err
	}
	list := &tenancyv1alpha1.WorkspaceList{}
	if err := root.List(ctx, logicalcluster.Root, kcpclient.Workspaces, list); err != nil {
		return nil, err
	}
	for _, ws := range list.Items {
		named := ws.Annotations[corev1alpha1.ShardAnnotationKey]
		p.perShard[named]++
		hosts := p.hosts[logicalcluster.Name(ws.Spec.Cluster)]
		if len(hosts) > 1 {
			p.onSeveral++
		}
		if !slices.Contains(hosts, named) {
			p.notOnNamed++
		}
	}
	return p, nil
}

// latencyRun is one workspace reached directly on its shard and through
// the proxy.
type latencyRun struct {
	// proxyCPU is the front-proxy's CPU time so far.
	proxyCPU      func() time.Duration
	shard         string
	cluster       logicalcluster.Name
	direct, proxy kubernetes.Interface
	// bare goes to the shard through a reverse proxy that does nothing
	// else (bareproxy.go): the floor of what a proxy hop adds.
	bare           kubernetes.Interface
	directWatchCfg *rest.Config
}

// newLatencyRun creates the latency workspace through the proxy and
// clients for it: directly on its shard by logical cluster name, and
// through the proxy by path, as a user addresses it. A workspace whose
// LogicalCluster is not on exactly the shard it names (see placements) is
// skipped for another.
func (s *systemRun) newLatencyRun(ctx context.Context, b *bench, sr *systemResults) (*latencyRun, error) {
	l := &latencyRun{proxyCPU: func() time.Duration { return pidCPU(filepath.Join(s.dir, "front-proxy.pid")) }}
	var name string
	for attempt := 0; l.shard == ""; attempt++ {
		if attempt == 5 {
			return nil, fmt.Errorf("no latency workspace placed on exactly one shard in %d attempts", attempt)
		}
		name = fmt.Sprintf("%s-%d", latencyWorkspace, attempt)
		ws, _, err := b.createOne(ctx, logicalcluster.Root, name)
		if err != nil {
			return nil, err
		}
		p, err := s.placements(ctx)
		if err != nil {
			return nil, err
		}
		l.cluster = logicalcluster.Name(ws.Spec.Cluster)
		named, hosts := ws.Annotations[corev1alpha1.ShardAnnotationKey], p.hosts[l.cluster]
		if len(hosts) == 1 && hosts[0] == named {
			l.shard = named
			continue
		}
		sr.LatencyMisplaced++
		fmt.Fprintf(os.Stderr, "bench: workspace %s (cluster %s) names shard %q, its LogicalCluster is on %v; trying another\n", name, l.cluster, named, hosts)
	}
	direct := s.directConfig(l.shard)
	direct.Host = l.cluster.Path().URL(direct.Host)
	proxy := rest.CopyConfig(s.proxy)
	proxy.Host = strings.TrimSuffix(proxy.Host, "/") + "/clusters/" + logicalcluster.Root.Path().Join(name).String()
	var err error
	if l.direct, err = kubernetes.NewForConfig(direct); err != nil {
		return nil, err
	}
	if l.proxy, err = kubernetes.NewForConfig(proxy); err != nil {
		return nil, err
	}
	bare, err := startBareProxy(ctx, direct, s.dir)
	if err != nil {
		return nil, err
	}
	if l.bare, err = kubernetes.NewForConfig(bare); err != nil {
		return nil, err
	}
	// The proxy serves the workspace once its index has it.
	if err := framework.PollEvery(ctx, pollPeriod, convergenceTimeout, func(ctx context.Context) error {
		_, err := l.proxy.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err
	}); err != nil {
		return nil, fmt.Errorf("proxy does not serve %s: %w", name, err)
	}
	return l, nil
}

// requests times configmap GETs and CREATEs directly on the shard and
// through the proxy: every client sends one of each in turn (which one
// first alternates), so both see the same load on the machine.
func (l *latencyRun) requests(ctx context.Context, sr *systemResults, n, concurrency int) error {
	sr.LatencyShard, sr.LatencyRequests, sr.LatencyConcurrency = l.shard, n, concurrency
	const objects = 10
	for i := 0; i < objects; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("get-%d", i)}, Data: map[string]string{"k": "v"}}
		if _, err := l.direct.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	type op func(c kubernetes.Interface, i int, via string) error
	get := func(c kubernetes.Interface, i int, _ string) error {
		_, err := c.CoreV1().ConfigMaps("default").Get(ctx, fmt.Sprintf("get-%d", i%objects), metav1.GetOptions{})
		return err
	}
	create := func(c kubernetes.Interface, i int, via string) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", via, i)}, Data: map[string]string{"k": "v"}}
		_, err := c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	// rounds has every client send one request of each path in turn, the
	// order rotating; it returns the times of each path.
	paths := []struct {
		via    string
		client kubernetes.Interface
	}{{"direct", l.direct}, {"proxy", l.proxy}, {"bare", l.bare}}
	rounds := func(n int, fn op, prefix string) (times [][]time.Duration, err error) {
		items := make(chan int, n)
		for i := 0; i < n; i++ {
			items <- i
		}
		close(items)
		times = make([][]time.Duration, len(paths))
		var mu sync.Mutex
		err = parallel(ctx, concurrency, items, func(i int) error {
			round := make([]time.Duration, len(paths))
			for k := range paths {
				p := (i + k) % len(paths)
				start := time.Now()
				if err := fn(paths[p].client, i, prefix+paths[p].via); err != nil {
					return fmt.Errorf("%s %d via %s: %w", prefix, i, paths[p].via, err)
				}
				round[p] = time.Since(start)
			}
			mu.Lock()
			for p := range paths {
				times[p] = append(times[p], round[p])
			}
			mu.Unlock()
			return nil
		})
		return times, err
	}
	// Warm every path up: connections, the proxies' and the shard's caches.
	if _, err := rounds(100, get, "warm"); err != nil {
		return err
	}
	cpu := l.proxyCPU()
	times, err := rounds(n, get, "get")
	if err != nil {
		return err
	}
	sr.ProxyCPUPerGetUs = float64((l.proxyCPU() - cpu).Microseconds()) / float64(n)
	direct, proxy, bare := times[0], times[1], times[2]
	sr.DirectGetP50Ms, sr.DirectGetP99Ms = percentile(direct, 50), percentile(direct, 99)
	sr.ProxyGetP50Ms, sr.ProxyGetP99Ms = percentile(proxy, 50), percentile(proxy, 99)
	sr.ProxyGetAddedP50Ms, sr.ProxyGetAddedPct = added(sr.DirectGetP50Ms, sr.ProxyGetP50Ms)
	sr.BareGetP50Ms = percentile(bare, 50)
	sr.BareGetAddedP50Ms, sr.BareGetAddedPct = added(sr.DirectGetP50Ms, sr.BareGetP50Ms)
	if times, err = rounds(n, create, "cm-"); err != nil {
		return err
	}
	direct, proxy, bare = times[0], times[1], times[2]
	sr.BareCreateP50Ms = percentile(bare, 50)
	sr.BareCreateAddedMs, sr.BareCreateAddPct = added(percentile(direct, 50), sr.BareCreateP50Ms)
	sr.DirectCreateP50Ms, sr.DirectCreateP99Ms = percentile(direct, 50), percentile(direct, 99)
	sr.ProxyCreateP50Ms, sr.ProxyCreateP99Ms = percentile(proxy, 50), percentile(proxy, 99)
	sr.ProxyCreateAddedMs, sr.ProxyCreateAddPct = added(sr.DirectCreateP50Ms, sr.ProxyCreateP50Ms)
	return nil
}

// added returns what proxied adds to direct, in ms and percent.
func added(direct, proxied float64) (float64, float64) {
	if direct <= 0 {
		return proxied - direct, 0
	}
	return proxied - direct, (proxied - direct) / direct * 100
}

// watchRun creates n labelled configmaps directly on the shard as fast as
// concurrency clients can, while one watch directly on the shard and one
// through the proxy receive them; it reports events per second of each
// (first create to last event) and what the proxy adds to each event.
func (l *latencyRun) watchRun(ctx context.Context, sr *systemResults, n, concurrency int) error {
	sr.WatchEvents = n
	if n == 0 {
		return nil
	}
	const label = "bench-watch"
	selector := label + "=1"
	list, err := l.direct.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	watchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	type arrival struct {
		direct, proxy time.Time
	}
	var mu sync.Mutex
	arrivals := map[string]*arrival{}
	var directDone, proxyDone int
	all := make(chan struct{})
	var allOnce sync.Once
	receive := func(w watch.Interface, proxied bool) {
		for e := range w.ResultChan() {
			now := time.Now()
			cm, ok := e.Object.(*corev1.ConfigMap)
			if !ok || e.Type != watch.Added {
				continue
			}
			mu.Lock()
			a := arrivals[cm.Name]
			if a == nil {
				a = &arrival{}
				arrivals[cm.Name] = a
			}
			if proxied && a.proxy.IsZero() {
				a.proxy = now
				proxyDone++
			} else if !proxied && a.direct.IsZero() {
				a.direct = now
				directDone++
			}
			if directDone == n && proxyDone == n {
				allOnce.Do(func() { close(all) })
			}
			mu.Unlock()
		}
	}
	opts := metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true}
	for _, c := range []struct {
		client  kubernetes.Interface
		proxied bool
	}{{l.direct, false}, {l.proxy, true}} {
		w, err := c.client.CoreV1().ConfigMaps("default").Watch(watchCtx, opts)
		if err != nil {
			return fmt.Errorf("watch (proxied %t): %w", c.proxied, err)
		}
		go receive(w, c.proxied)
	}
	items := make(chan int, n)
	for i := 0; i < n; i++ {
		items <- i
	}
	close(items)
	start := time.Now()
	if err := parallel(ctx, concurrency, items, func(i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("watch-%d", i), Labels: map[string]string{label: "1"}}, Data: map[string]string{"k": "v"}}
		_, err := l.direct.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	select {
	case <-all:
	case <-time.After(2 * time.Minute):
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("watch: %d direct and %d proxied events of %d after 2m", directDone, proxyDone, n)
	}
	mu.Lock()
	defer mu.Unlock()
	var lastDirect, lastProxy time.Time
	delays := make([]time.Duration, 0, n)
	for _, a := range arrivals {
		if a.direct.After(lastDirect) {
			lastDirect = a.direct
		}
		if a.proxy.After(lastProxy) {
			lastProxy = a.proxy
		}
		delays = append(delays, max(0, a.proxy.Sub(a.direct)))
	}
	sr.DirectWatchEventsPerSec = float64(n) / lastDirect.Sub(start).Seconds()
	sr.ProxyWatchEventsPerSec = float64(n) / lastProxy.Sub(start).Seconds()
	sr.ProxyWatchDelayP50Ms, sr.ProxyWatchDelayP99Ms = percentile(delays, 50), percentile(delays, 99)
	return nil
}

// convergence creates and deletes workspaces through the proxy one at a
// time. After a create it asks the proxy every pollPeriod for the
// workspace's namespaces until the answer is neither 403 (unknown path)
// nor 429 (still scheduling), and takes the time from the workspace's
// Ready (on the root shard's watch) to that answer; after the delete call
// returns it asks until the answer is 403.
func (s *systemRun) convergence(ctx context.Context, b *bench, sr *systemResults, n int) error {
	sr.IndexSamples = n
	if n == 0 {
		return nil
	}
	hc, err := rest.HTTPClientFor(s.proxy)
	if err != nil {
		return err
	}
	base := strings.TrimSuffix(s.proxy.Host, "/")
	// poll asks until done(status) and returns when it was first true.
	poll := func(ctx context.Context, url string, done func(int) bool) (time.Time, int, error) {
		deadline := time.Now().Add(convergenceTimeout)
		for {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return time.Time{}, 0, err
			}
			resp, err := hc.Do(req)
			if err == nil {
				resp.Body.Close()
				if done(resp.StatusCode) {
					return time.Now(), resp.StatusCode, nil
				}
			}
			if time.Now().After(deadline) {
				return time.Time{}, 0, fmt.Errorf("GET %s: not converged after %s (last error %v)", url, convergenceTimeout, err)
			}
			select {
			case <-ctx.Done():
				return time.Time{}, 0, ctx.Err()
			case <-time.After(pollPeriod):
			}
		}
	}
	var created, deleted []time.Duration
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("conv-%03d", i)
		url := base + "/clusters/" + logicalcluster.Root.Path().Join(name).String() + "/api/v1/namespaces"
		ready := b.expect(logicalcluster.Root, name)
		ws := &tenancyv1alpha1.Workspace{
			TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
		}
		if err := b.kcp.Create(ctx, logicalcluster.Root, kcpclient.Workspaces, ws, &tenancyv1alpha1.Workspace{}); err != nil {
			return fmt.Errorf("create workspace %s: %w", name, err)
		}
		type served struct {
			at     time.Time
			status int
			err    error
		}
		servedCh := make(chan served, 1)
		go func() {
			at, status, err := poll(ctx, url, func(code int) bool {
				return code != http.StatusForbidden && code != http.StatusTooManyRequests
			})
			servedCh <- served{at, status, err}
		}()
		var readyAt time.Time
		select {
		case <-ready:
			readyAt = time.Now()
		case <-time.After(convergenceTimeout):
			return fmt.Errorf("workspace %s not Ready after %s", name, convergenceTimeout)
		}
		got := <-servedCh
		if got.err != nil {
			return got.err
		}
		if got.status != http.StatusOK {
			sr.IndexUnexpectedStatuses++
		}
		if got.at.Before(readyAt) {
			sr.IndexServedBeforeReady++
		}
		created = append(created, max(0, got.at.Sub(readyAt)))

		if err := b.kcp.Delete(ctx, logicalcluster.Root, kcpclient.Workspaces, name, nil); err != nil {
			return fmt.Errorf("delete workspace %s: %w", name, err)
		}
		returned := time.Now()
		gone, _, err := poll(ctx, url, func(code int) bool { return code == http.StatusForbidden })
		if err != nil {
			return err
		}
		deleted = append(deleted, gone.Sub(returned))
	}
	sr.IndexCreateP50Ms, sr.IndexCreateP99Ms, sr.IndexCreateMaxMs = percentile(created, 50), percentile(created, 99), percentile(created, 100)
	sr.IndexDeleteP50Ms, sr.IndexDeleteP99Ms, sr.IndexDeleteMaxMs = percentile(deleted, 50), percentile(deleted, 99), percentile(deleted, 100)
	return nil
}

// print writes the system mode's table rows.
func (sr *systemResults) print(tw *tabwriter.Writer) {
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	row("shards / concurrency", fmt.Sprintf("%d / %d", sr.Shards, sr.Concurrency))
	row("system start to ready", fmt.Sprintf("%.2f s (every shard and the front-proxy)", sr.StartToReadySeconds))
	row("latency workspace", fmt.Sprintf("on shard %s; %d requests of each kind per path, %d client(s), direct, proxied and bare in turn", sr.LatencyShard, sr.LatencyRequests, sr.LatencyConcurrency))
	row("configmap GET direct", fmt.Sprintf("p50 %.2f ms, p99 %.2f ms", sr.DirectGetP50Ms, sr.DirectGetP99Ms))
	row("configmap GET via proxy", fmt.Sprintf("p50 %.2f ms, p99 %.2f ms (adds %.2f ms, %.0f%% at p50)", sr.ProxyGetP50Ms, sr.ProxyGetP99Ms, sr.ProxyGetAddedP50Ms, sr.ProxyGetAddedPct))
	row("proxy CPU per proxied GET", fmt.Sprintf("%.0f µs (user+system, /proc)", sr.ProxyCPUPerGetUs))
	row("configmap CREATE direct", fmt.Sprintf("p50 %.2f ms, p99 %.2f ms", sr.DirectCreateP50Ms, sr.DirectCreateP99Ms))
	row("configmap CREATE via proxy", fmt.Sprintf("p50 %.2f ms, p99 %.2f ms (adds %.2f ms, %.0f%% at p50)", sr.ProxyCreateP50Ms, sr.ProxyCreateP99Ms, sr.ProxyCreateAddedMs, sr.ProxyCreateAddPct))
	row("GET / CREATE via a bare proxy", fmt.Sprintf("p50 %.2f / %.2f ms (adds %.2f ms, %.0f%% / %.2f ms, %.0f%%): the floor of any TLS and HTTP/2 hop here",
		sr.BareGetP50Ms, sr.BareCreateP50Ms, sr.BareGetAddedP50Ms, sr.BareGetAddedPct, sr.BareCreateAddedMs, sr.BareCreateAddPct))
	row("watch events/s", fmt.Sprintf("%.0f via proxy, %.0f direct (%d creates on the shard; proxy adds p50 %.2f ms, p99 %.2f ms per event)",
		sr.ProxyWatchEventsPerSec, sr.DirectWatchEventsPerSec, sr.WatchEvents, sr.ProxyWatchDelayP50Ms, sr.ProxyWatchDelayP99Ms))
	row("workspaces/s flat via proxy", fmt.Sprintf("%.1f (ready p50 %.0f ms, p99 %.0f ms), per shard %v", sr.WSPerSecFlat, sr.WSReadyP50Ms, sr.WSReadyP99Ms, sr.WorkspacesPerShard))
	row("placement check", fmt.Sprintf("%d workspaces of root with a LogicalCluster on several shards, %d without one on the shard they name (%d latency workspaces skipped for that)",
		sr.ClustersOnSeveralShards, sr.WorkspacesNotOnNamedShard, sr.LatencyMisplaced))
	row("proxy idle RSS / heap", mib(sr.ProxyRSSIdleBytes)+" / "+mib(sr.ProxyHeapIdleBytes)+"; RSS before the workspaces "+mib(sr.ProxyRSSBeforeWSBytes))
	row(fmt.Sprintf("proxy at %d workspaces", sr.Workspaces), fmt.Sprintf("RSS %s, heap %s (no forced GC), %d goroutines; %.1f KiB RSS per workspace",
		mib(sr.ProxyRSSBytes), mib(sr.ProxyHeapBytes), sr.ProxyGoroutines, sr.ProxyRSSBytesPerWS/1024))
	if sr.ProxyRSSAt10kEstimate > 0 {
		row("proxy RSS at 10,000 (linear from here)", mib(sr.ProxyRSSAt10kEstimate))
	}
	for i := 0; i < sr.Shards; i++ {
		name := system.ShardName(i)
		row("shard "+name+" RSS", mib(sr.ShardRSSBytes[name]))
	}
	row("index after create", fmt.Sprintf("p50 %.0f ms, p99 %.0f ms, max %.0f ms over %d: Ready on the root shard to the first proxied namespace LIST that is not 403/429 (%d served before Ready, counted 0; %d non-200)",
		sr.IndexCreateP50Ms, sr.IndexCreateP99Ms, sr.IndexCreateMaxMs, sr.IndexSamples, sr.IndexServedBeforeReady, sr.IndexUnexpectedStatuses))
	row("index after delete", fmt.Sprintf("p50 %.0f ms, p99 %.0f ms, max %.0f ms: the delete call's return to the first proxied 403", sr.IndexDeleteP50Ms, sr.IndexDeleteP99Ms, sr.IndexDeleteMaxMs))
}
