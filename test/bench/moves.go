package main

// The moves modes (issue 42) start the system with pkg/system, as
// --mode=system does, and measure live moves of workspaces between shards
// through the front-proxy with client-go:
//
//   - --mode=moves: moves per minute of empty workspaces (several at once)
//     and of workspaces of --moves-objects configmaps (one at a time, while
//     a writer loops creates into the moving workspace through the
//     front-proxy): the cut-over pause as the writer sees it (the longest
//     gap between two acknowledged writes during the move) and as the
//     migration reports it (WritesHeld True to DataCopied True, as the
//     bench's watch sees them), the writer's failed requests;
//   - --mode=drain: a shard of --drain-workspaces workspaces is cordoned and
//     drained onto the two others; time until Drained True;
//   - --mode=scale: --scale-shards shards and two front-proxies, the
//     workspaces' spread (counting capacity), a late shard joins, the
//     drain of one shard moves its workspaces onto it.
//
// Drain and scale also time, after each move completes, until a request
// through every front-proxy is served by the destination, and count the
// failed requests of writers spread over the moving workspaces.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/system"
)

// moveTimeout bounds one move, and a drain's moves one after the other.
const moveTimeout = 5 * time.Minute

// movesOptions are the flags of the moves, drain and scale modes.
type movesOptions struct {
	empty       int
	loaded      int
	objects     int
	parallel    int
	drainWS     int
	maxMoves    int
	writers     int
	scaleShards int
	scaleWS     int
	joinLimit   int
	softLimits  string
	keepDir     bool
	profileDir  string
}

func (m *movesOptions) addFlags(fs *flag.FlagSet) {
	fs.IntVar(&m.empty, "moves-empty", 20, "empty workspaces moved in --mode=moves, --moves-parallel at a time")
	fs.IntVar(&m.loaded, "moves-loaded", 5, "workspaces of --moves-objects configmaps moved one at a time in --mode=moves, each while a writer loops creates into it")
	fs.IntVar(&m.objects, "moves-objects", 1000, "configmaps in each loaded workspace of --mode=moves")
	fs.IntVar(&m.parallel, "moves-parallel", 4, "empty workspaces moved at once in --mode=moves")
	fs.IntVar(&m.drainWS, "drain-workspaces", 1000, "workspaces on the shard drained in --mode=drain")
	fs.IntVar(&m.maxMoves, "drain-max-moves", 4, "moves a drain runs at once (drain.shardplane.io/max-moves) in --mode=drain and --mode=scale")
	fs.IntVar(&m.writers, "moves-writers", 2, "clients writing through the front-proxies into random moving workspaces during a drain (--mode=drain, --mode=scale)")
	fs.IntVar(&m.scaleShards, "scale-shards", 4, "shards of --mode=scale before one more joins, root included")
	fs.IntVar(&m.scaleWS, "scale-workspaces", 10000, "workspaces created through the front-proxies in --mode=scale")
	fs.IntVar(&m.joinLimit, "scale-join-limit", 2000, "hard limit of workspaces on the shard that joins in --mode=scale: the drain moves this many onto it, the rest elsewhere (0: none)")
	fs.StringVar(&m.softLimits, "scale-soft-limits", "", "soft limits of workspaces of the first shards of --mode=scale, comma separated (empty: none, the capacity is equal)")
	fs.BoolVar(&m.keepDir, "moves-keep-dir", false, "keep the system's directory (logs, kubeconfigs) after the moves modes")
	fs.StringVar(&m.profileDir, "moves-profile-dir", "", "save CPU profiles of the origin and the destination shard over the first 30 s of the loaded moves of --mode=moves, and of every shard over the first 30 s of a drain (empty: none)")
}

// movesResults are the numbers of the moves modes; keys are prefixed
// moves_, drain_ or scale_.
type movesResults struct {
	Mode string `json:"moves_mode"`
	// MachineCPUCoresIdle is how busy the machine was before the run
	// started anything (other work on it), of MachineCores.
	MachineCPUCoresIdle float64 `json:"moves_machine_cpu_cores_before"`
	MachineCPUCores     float64 `json:"moves_machine_cpu_cores"`
	MachineCores        int     `json:"moves_machine_cores"`

	EmptyMoves        int     `json:"moves_empty,omitempty"`
	EmptyParallel     int     `json:"moves_empty_parallel,omitempty"`
	EmptyPerMinute    float64 `json:"moves_empty_per_minute,omitempty"`
	EmptyMoveP50Ms    float64 `json:"moves_empty_p50_ms,omitempty"`
	EmptyMoveP99Ms    float64 `json:"moves_empty_p99_ms,omitempty"`
	LoadedMoves       int     `json:"moves_loaded,omitempty"`
	LoadedObjects     int     `json:"moves_loaded_objects,omitempty"`
	LoadedPerMinute   float64 `json:"moves_loaded_per_minute,omitempty"`
	LoadedMoveP50Ms   float64 `json:"moves_loaded_p50_ms,omitempty"`
	LoadedMoveP99Ms   float64 `json:"moves_loaded_p99_ms,omitempty"`
	WriterGapP50Ms    float64 `json:"moves_writer_gap_p50_ms,omitempty"`
	WriterGapP99Ms    float64 `json:"moves_writer_gap_p99_ms,omitempty"`
	WriterGapMaxMs    float64 `json:"moves_writer_gap_max_ms,omitempty"`
	HeldToCopiedP50Ms float64 `json:"moves_held_to_copied_p50_ms,omitempty"`
	HeldToCopiedP99Ms float64 `json:"moves_held_to_copied_p99_ms,omitempty"`
	WriterWrites      int     `json:"moves_writer_writes,omitempty"`
	WriterWriteP50Ms  float64 `json:"moves_writer_write_p50_ms,omitempty"`
	FailedMoves       int     `json:"moves_failed"`
	FailedRequests    int     `json:"moves_failed_requests"`
	// TooManyRetried are the 429s (a held cut-over) client-go retried.
	TooManyRetried     int    `json:"moves_429_retried"`
	Requests           int    `json:"moves_requests"`
	FirstFailedRequest string `json:"moves_first_failed_request,omitempty"`

	DrainWorkspaces int     `json:"drain_workspaces,omitempty"`
	DrainMaxMoves   int     `json:"drain_max_moves,omitempty"`
	DrainSeconds    float64 `json:"drain_seconds,omitempty"`
	// DrainAllEndedSeconds is until the last of the drain's moves ended.
	DrainAllEndedSeconds float64        `json:"drain_all_moves_ended_seconds,omitempty"`
	DrainPerMinute       float64        `json:"drain_moves_per_minute,omitempty"`
	DrainRetries         int            `json:"drain_retried_moves,omitempty"`
	DrainDestination     map[string]int `json:"drain_destinations,omitempty"`
	// DrainQuarterPerMinute are the moves per minute of each quarter of
	// the drain's moves, in the order they ended: whether the rate falls
	// as the destinations fill.
	DrainQuarterPerMinute []float64 `json:"drain_quarter_moves_per_minute,omitempty"`
	RoutingP50Ms          float64   `json:"drain_routing_p50_ms,omitempty"`
	RoutingP99Ms          float64   `json:"drain_routing_p99_ms,omitempty"`
	RoutingMaxMs          float64   `json:"drain_routing_max_ms,omitempty"`
	RoutingSamples        int       `json:"drain_routing_samples,omitempty"`
	RoutingLate           int       `json:"drain_routing_over_1s,omitempty"`

	ScaleShards      int                `json:"scale_shards,omitempty"`
	ScaleWorkspaces  int                `json:"scale_workspaces,omitempty"`
	ScaleCreateRate  float64            `json:"scale_workspaces_per_sec,omitempty"`
	ScaleSpread      map[string]int     `json:"scale_per_shard,omitempty"`
	ScaleCapacity    map[string]float64 `json:"scale_capacity,omitempty"`
	ScaleSpreadPct   float64            `json:"scale_spread_pct,omitempty"`
	ScaleJoinSeconds float64            `json:"scale_join_seconds,omitempty"`
	ScaleAfter       map[string]int     `json:"scale_per_shard_after,omitempty"`
	// ScaleRenamedSeconds is from the drain's end until no Workspace
	// names the drained shard.
	ScaleRenamedSeconds float64          `json:"scale_workspaces_renamed_seconds,omitempty"`
	ScaleShardRSS       map[string]int64 `json:"scale_shard_rss_bytes,omitempty"`
	ScaleProxyRSS       []int64          `json:"scale_proxy_rss_bytes,omitempty"`
	ScaleCacheRSS       int64            `json:"scale_cache_rss_bytes,omitempty"`
	BenchSecondsTotal   float64          `json:"moves_bench_seconds"`
}

// movesRun is a started system, its clients and the watch of migrations.
type movesRun struct {
	sys *system.System
	dir string
	// proxies are kcp-admin through each front-proxy (base URL).
	proxies []*rest.Config
	masters *rest.Config
	b       *bench
	admin   *kcpclient.Client
	shards  []string
	mw      *migrationWatch
	step    func(string)
}

func runMoves(ctx context.Context, o options) (results, error) {
	return runMovesMode(ctx, o, "moves")
}

func runDrain(ctx context.Context, o options) (results, error) {
	return runMovesMode(ctx, o, "drain")
}

func runScale(ctx context.Context, o options) (results, error) {
	return runMovesMode(ctx, o, "scale")
}

func runMovesMode(ctx context.Context, o options, mode string) (results, error) {
	mr := &movesResults{Mode: mode}
	r := results{movesResults: mr}
	start := time.Now()
	defer func() { mr.BenchSecondsTotal = time.Since(start).Seconds() }()
	cpu0, wall0 := machineCPU(), time.Now()
	time.Sleep(2 * time.Second)
	mr.MachineCores = runtime.NumCPU()
	mr.MachineCPUCoresIdle = (machineCPU() - cpu0).Seconds() / time.Since(wall0).Seconds()

	shards, late, proxies := 3, 0, 1
	if mode == "scale" {
		shards, late, proxies = o.moves.scaleShards+1, 1, 2
	}
	m, err := startMovesRun(ctx, o, shards, late, proxies)
	if err != nil {
		return r, err
	}
	defer m.stop(o.moves.keepDir)
	cpu1, wall1 := machineCPU(), time.Now()
	defer func() { mr.MachineCPUCores = (machineCPU() - cpu1).Seconds() / time.Since(wall1).Seconds() }()
	switch mode {
	case "moves":
		err = m.moves(ctx, o, mr)
	case "drain":
		err = m.drain(ctx, o, mr)
	case "scale":
		err = m.scale(ctx, o, mr)
	}
	return r, err
}

func startMovesRun(ctx context.Context, o options, shards, late, proxies int) (*movesRun, error) {
	step := func(s string) { fmt.Fprintf(os.Stderr, "bench: %s %s\n", time.Now().Format("15:04:05.000"), s) }
	dir, err := os.MkdirTemp("", "shardplane-bench-moves-")
	if err != nil {
		return nil, err
	}
	step(fmt.Sprintf("starting %d shards (%d joining later), %d front-proxies, cache %q in %s", shards, late, proxies, o.system.cacheServerBinary, dir))
	sys, err := system.Start(ctx, system.Options{Dir: dir, Shards: shards, LateShards: late, FrontProxies: proxies,
		ShardBinary: o.shardBinary, FrontProxyBinary: o.system.frontProxyBinary, CacheServerBinary: o.system.cacheServerBinary})
	if err != nil {
		return nil, err
	}
	m := &movesRun{sys: sys, dir: dir, step: step}
	for i := 0; i < shards; i++ {
		m.shards = append(m.shards, system.ShardName(i))
	}
	base, err := contextConfig(filepath.Join(dir, system.AdminKubeconfigFile), "base")
	if err != nil {
		m.stop(false)
		return nil, err
	}
	for _, u := range sys.FrontProxyURLs() {
		cfg := rest.CopyConfig(base)
		cfg.Host = u
		m.proxies = append(m.proxies, cfg)
	}
	if m.masters, err = contextConfig(filepath.Join(dir, "system-admin.kubeconfig"), ""); err != nil {
		m.stop(false)
		return nil, err
	}
	if m.b, err = newBench(&target{admin: m.proxies[0], masters: m.masters}, o.concurrency); err != nil {
		m.stop(false)
		return nil, err
	}
	m.admin = m.b.kcp
	if m.mw, err = watchMigrations(m.masters); err != nil {
		m.stop(false)
		return nil, err
	}
	return m, nil
}

func (m *movesRun) stop(keep bool) {
	if m.mw != nil {
		m.mw.stop()
	}
	if m.b != nil {
		m.b.stopWatch()
	}
	m.sys.Stop()
	if keep {
		m.step("kept " + m.dir)
		return
	}
	os.RemoveAll(m.dir)
}

// migrationState is what the bench's watch saw of one migration, with the
// bench's clock.
type migrationState struct {
	cluster, origin, destination string
	phase                        migrationv1alpha1.LogicalClusterMigrationPhaseType
	seen, writesHeld, dataCopied time.Time
	ended                        time.Time
	failure                      string
	done                         chan struct{}
}

// migrationWatch follows the LogicalClusterMigrations of every cluster of
// the root shard (root's, where drains create them).
type migrationWatch struct {
	mu     sync.Mutex
	byName map[string]*migrationState
	// onEnd is called once for each migration that ends.
	onEnd  func(name string, st *migrationState)
	cancel context.CancelFunc
}

func watchMigrations(masters *rest.Config) (*migrationWatch, error) {
	c, err := kcpclient.New(masters)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.Watch(ctx, logicalcluster.Wildcard, kcpclient.LogicalClusterMigrations, "0")
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch migrations: %w", err)
	}
	mw := &migrationWatch{byName: map[string]*migrationState{}, cancel: cancel}
	go resumeWatch(ctx, c, kcpclient.LogicalClusterMigrations, w, mw.handle)
	return mw, nil
}

func (mw *migrationWatch) stop() { mw.cancel() }

// running counts the migrations off origin that have not ended.
func (mw *migrationWatch) running(origin string) int {
	mw.mu.Lock()
	defer mw.mu.Unlock()
	n := 0
	for _, st := range mw.byName {
		if st.origin == origin && st.ended.IsZero() {
			n++
		}
	}
	return n
}

func (mw *migrationWatch) state(name string) *migrationState {
	st := mw.byName[name]
	if st == nil {
		st = &migrationState{done: make(chan struct{})}
		mw.byName[name] = st
	}
	return st
}

// expect returns the state of a migration about to be created.
func (mw *migrationWatch) expect(name string) *migrationState {
	mw.mu.Lock()
	defer mw.mu.Unlock()
	return mw.state(name)
}

func (mw *migrationWatch) handle(e watch.Event) {
	m, ok := e.Object.(*migrationv1alpha1.LogicalClusterMigration)
	if !ok || e.Type == watch.Bookmark || e.Type == watch.Deleted {
		return
	}
	now := time.Now()
	mw.mu.Lock()
	st := mw.state(m.Name)
	if st.seen.IsZero() {
		st.seen = now
	}
	st.cluster, st.origin, st.destination, st.phase = m.Spec.LogicalCluster, m.Status.OriginShard, m.Spec.DestinationShard, m.Status.Phase
	if st.writesHeld.IsZero() && m.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationWritesHeld) {
		st.writesHeld = now
	}
	if st.dataCopied.IsZero() && m.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationDataCopied) {
		st.dataCopied = now
	}
	var ended bool
	if st.ended.IsZero() && (m.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhaseCompleted || m.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhaseFailed) {
		st.ended, ended = now, true
		if m.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhaseFailed {
			st.failure = failureOf(m.Status.Conditions)
		}
		close(st.done)
	}
	onEnd := mw.onEnd
	mw.mu.Unlock()
	if ended && onEnd != nil {
		onEnd(m.Name, st)
	}
}

func failureOf(conds conditionsv1alpha1.Conditions) string {
	for _, c := range conds {
		if c.Status == corev1.ConditionFalse && c.Reason != "" {
			return fmt.Sprintf("%s: %s %s", c.Type, c.Reason, c.Message)
		}
	}
	return "Failed"
}

// createOn creates workspaces flat under root on one shard through the
// front-proxy and returns their logical clusters.
func (m *movesRun) createOn(ctx context.Context, shard string, names []string) ([]logicalcluster.Name, float64, error) {
	items := make(chan string, len(names))
	for _, n := range names {
		items <- n
	}
	close(items)
	var mu sync.Mutex
	clusters := make([]logicalcluster.Name, 0, len(names))
	start := time.Now()
	err := parallel(ctx, m.b.concurrency, items, func(name string) error {
		ch := m.b.expect(logicalcluster.Root, name)
		ws := &tenancyv1alpha1.Workspace{
			TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
		}
		if shard != "" {
			ws.Spec.Location = &tenancyv1alpha1.WorkspaceLocation{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1alpha1.ShardNameLabel: shard}}}
		}
		if err := m.admin.Create(ctx, logicalcluster.Root, kcpclient.Workspaces, ws, &tenancyv1alpha1.Workspace{}); err != nil {
			return fmt.Errorf("create workspace %s: %w", name, err)
		}
		select {
		case ready := <-ch:
			mu.Lock()
			clusters = append(clusters, logicalcluster.Name(ready.Spec.Cluster))
			mu.Unlock()
			return nil
		case <-time.After(2 * time.Minute):
			return fmt.Errorf("workspace %s not Ready after 2m", name)
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	return clusters, float64(len(names)) / time.Since(start).Seconds(), err
}

// kube is a client of one cluster through the i-th front-proxy, with
// client-go's own retries (a 429 with Retry-After is retried).
func (m *movesRun) kube(i int, cluster logicalcluster.Name) (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(m.proxies[i])
	cfg.Host = cluster.Path().URL(cfg.Host)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTooMany{rt} })
	return kubernetes.NewForConfig(cfg)
}

// tooMany counts the 429s the clients' requests met, which client-go
// retried after Retry-After without telling.
var tooMany atomic.Int64

type countingTooMany struct{ next http.RoundTripper }

func (c countingTooMany) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		tooMany.Add(1)
	}
	return resp, err
}

// fill creates n configmaps in a cluster through the front-proxy.
func (m *movesRun) fill(ctx context.Context, cluster logicalcluster.Name, n int) error {
	cs, err := m.kube(0, cluster)
	if err != nil {
		return err
	}
	items := make(chan int, n)
	for i := range n {
		items <- i
	}
	close(items)
	return parallel(ctx, m.b.concurrency, items, func(i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("object-%05d", i)}, Data: map[string]string{"index": fmt.Sprint(i)}}
		_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
}

// move creates a migration of cluster to destination in root.
func (m *movesRun) move(ctx context.Context, name string, cluster logicalcluster.Name, destination string) (*migrationState, error) {
	st := m.mw.expect(name)
	mig := &migrationv1alpha1.LogicalClusterMigration{
		TypeMeta:   metav1.TypeMeta{APIVersion: migrationv1alpha1.SchemeGroupVersion.String(), Kind: "LogicalClusterMigration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       migrationv1alpha1.LogicalClusterMigrationSpec{LogicalCluster: string(cluster), DestinationShard: destination},
	}
	if err := m.admin.Create(ctx, logicalcluster.Root, kcpclient.LogicalClusterMigrations, mig, &migrationv1alpha1.LogicalClusterMigration{}); err != nil {
		return nil, fmt.Errorf("create migration %s: %w", name, err)
	}
	return st, nil
}

func waitMove(ctx context.Context, name string, st *migrationState) error {
	select {
	case <-st.done:
		return nil
	case <-time.After(moveTimeout):
		return fmt.Errorf("migration %s not ended after %s (phase %q)", name, moveTimeout, st.phase)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// failures counts the requests that failed after client-go's retries.
type failures struct {
	requests atomic.Int64
	failed   atomic.Int64
	mu       sync.Mutex
	first    string
}

func (f *failures) record(err error) {
	f.requests.Add(1)
	if err == nil {
		return
	}
	f.failed.Add(1)
	f.mu.Lock()
	if f.first == "" {
		f.first = err.Error()
	}
	f.mu.Unlock()
}

func (f *failures) report(mr *movesResults) {
	mr.TooManyRetried = int(tooMany.Load())
	mr.Requests += int(f.requests.Load())
	mr.FailedRequests += int(f.failed.Load())
	if mr.FirstFailedRequest == "" {
		mr.FirstFailedRequest = f.first
	}
}

func (m *movesRun) moves(ctx context.Context, o options, mr *movesResults) error {
	mo := o.moves
	origin, destination := m.shards[1], m.shards[2]
	f := &failures{}
	defer f.report(mr)

	if mo.empty > 0 {
		m.step(fmt.Sprintf("creating %d empty workspaces on %s", mo.empty, origin))
		clusters, _, err := m.createOn(ctx, origin, m.b.names("empty", mo.empty))
		if err != nil {
			return err
		}
		m.step(fmt.Sprintf("moving them to %s, %d at a time", destination, mo.parallel))
		items := make(chan int, len(clusters))
		for i := range clusters {
			items <- i
		}
		close(items)
		var mu sync.Mutex
		var took []time.Duration
		start := time.Now()
		err = parallel(ctx, max(1, mo.parallel), items, func(i int) error {
			name := fmt.Sprintf("empty-%05d", i)
			began := time.Now()
			st, err := m.move(ctx, name, clusters[i], destination)
			if err != nil {
				return err
			}
			if err := waitMove(ctx, name, st); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			if st.failure != "" {
				mr.FailedMoves++
				m.step(fmt.Sprintf("migration %s failed: %s", name, st.failure))
				return nil
			}
			took = append(took, st.ended.Sub(began))
			return nil
		})
		if err != nil {
			return err
		}
		mr.EmptyMoves, mr.EmptyParallel = len(took), mo.parallel
		mr.EmptyPerMinute = float64(len(took)) / time.Since(start).Minutes()
		mr.EmptyMoveP50Ms, mr.EmptyMoveP99Ms = percentile(took, 50), percentile(took, 99)
	}

	if mo.loaded > 0 {
		m.step(fmt.Sprintf("creating %d workspaces of %d configmaps on %s", mo.loaded, mo.objects, origin))
		clusters, _, err := m.createOn(ctx, origin, m.b.names("loaded", mo.loaded))
		if err != nil {
			return err
		}
		for _, c := range clusters {
			if err := m.fill(ctx, c, mo.objects); err != nil {
				return fmt.Errorf("fill %s: %w", c, err)
			}
		}
		waitProfiles := m.cpuProfiles(ctx, mo.profileDir, origin, destination)
		defer waitProfiles()
		var took, gaps, held, writes []time.Duration
		var movesTime time.Duration
		for i, cluster := range clusters {
			name := fmt.Sprintf("loaded-%05d", i)
			cs, err := m.kube(0, cluster)
			if err != nil {
				return err
			}
			// The writer runs from before the move until after it: acks
			// around the cut-over bound the pause a client sees.
			wctx, stopWriter := context.WithCancel(ctx)
			var acks []time.Time
			var wlat []time.Duration
			wdone := make(chan struct{})
			go func() {
				defer close(wdone)
				for j := 0; wctx.Err() == nil; j++ {
					t0 := time.Now()
					_, err := cs.CoreV1().ConfigMaps("default").Create(wctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("during-%05d", j)}}, metav1.CreateOptions{})
					if wctx.Err() != nil {
						return
					}
					f.record(err)
					if err == nil {
						acks = append(acks, time.Now())
						wlat = append(wlat, time.Since(t0))
					}
				}
			}()
			time.Sleep(500 * time.Millisecond)
			m.step(fmt.Sprintf("moving %s (%s) to %s while writing", name, cluster, destination))
			began := time.Now()
			st, err := m.move(ctx, name, cluster, destination)
			if err != nil {
				stopWriter()
				return err
			}
			err = waitMove(ctx, name, st)
			time.Sleep(500 * time.Millisecond)
			stopWriter()
			<-wdone
			if err != nil {
				return err
			}
			if st.failure != "" {
				mr.FailedMoves++
				m.step(fmt.Sprintf("migration %s failed: %s", name, st.failure))
				continue
			}
			movesTime += st.ended.Sub(began)
			took = append(took, st.ended.Sub(began))
			gaps = append(gaps, longestGap(acks, began, st.ended))
			if !st.writesHeld.IsZero() && !st.dataCopied.IsZero() {
				held = append(held, st.dataCopied.Sub(st.writesHeld))
			}
			writes = append(writes, wlat...)
			m.step(fmt.Sprintf("%s: %.1f s, longest write gap %.0f ms, WritesHeld to DataCopied %.0f ms, %d writes", name,
				st.ended.Sub(began).Seconds(), ms(gaps[len(gaps)-1]), ms(st.dataCopied.Sub(st.writesHeld)), len(acks)))
		}
		mr.LoadedMoves, mr.LoadedObjects = len(took), mo.objects
		if movesTime > 0 {
			mr.LoadedPerMinute = float64(len(took)) / movesTime.Minutes()
		}
		mr.LoadedMoveP50Ms, mr.LoadedMoveP99Ms = percentile(took, 50), percentile(took, 99)
		mr.WriterGapP50Ms, mr.WriterGapP99Ms, mr.WriterGapMaxMs = percentile(gaps, 50), percentile(gaps, 99), percentile(gaps, 100)
		mr.HeldToCopiedP50Ms, mr.HeldToCopiedP99Ms = percentile(held, 50), percentile(held, 99)
		mr.WriterWrites, mr.WriterWriteP50Ms = len(writes), percentile(writes, 50)
	}
	return nil
}

// cpuProfiles takes a 30 s CPU profile of each shard into dir; the
// function it returns waits for them.
func (m *movesRun) cpuProfiles(ctx context.Context, dir string, shards ...string) func() {
	var wg sync.WaitGroup
	if dir == "" {
		return wg.Wait
	}
	_ = os.MkdirAll(dir, 0o755)
	for _, shard := range shards {
		cfg := rest.CopyConfig(m.masters)
		cfg.Host = m.sys.ShardURL(shard)
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := saveURL(ctx, hc, cfg.Host+"/debug/pprof/profile?seconds=30", filepath.Join(dir, shard+"-cpu.pprof")); err != nil {
				m.step(fmt.Sprintf("CPU profile of %s: %v", shard, err))
			}
		}()
	}
	return wg.Wait
}

// saveURL writes the body of a GET of url with hc to the file path.
func saveURL(ctx context.Context, hc *http.Client, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// longestGap is the longest time without an acknowledged write between
// from and to, counting from the last ack before from to the first after
// to.
func longestGap(acks []time.Time, from, to time.Time) time.Duration {
	var longest time.Duration
	for i := 1; i < len(acks); i++ {
		if acks[i].Before(from) || acks[i-1].After(to) {
			continue
		}
		longest = max(longest, acks[i].Sub(acks[i-1]))
	}
	return longest
}

// updateShard changes a Shard in root through the front-proxy.
func (m *movesRun) updateShard(ctx context.Context, name string, mutate func(*corev1alpha1.Shard)) error {
	var last error
	for range 20 {
		s := &corev1alpha1.Shard{}
		if last = m.admin.Get(ctx, logicalcluster.Root, kcpclient.Shards, name, s); last != nil {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		mutate(s)
		s.APIVersion, s.Kind = corev1alpha1.SchemeGroupVersion.String(), "Shard"
		if last = m.admin.Update(ctx, logicalcluster.Root, kcpclient.Shards, name, s, &corev1alpha1.Shard{}); last == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("update shard %s: %w", name, last)
}

// shardCondition waits until a Shard's condition has status.
func (m *movesRun) shardCondition(ctx context.Context, name string, ct conditionsv1alpha1.ConditionType, status corev1.ConditionStatus, timeout time.Duration, progress func(*corev1alpha1.Shard)) error {
	deadline := time.Now().Add(timeout)
	lastLog := time.Now()
	for {
		s := &corev1alpha1.Shard{}
		if err := m.admin.Get(ctx, logicalcluster.Root, kcpclient.Shards, name, s); err == nil {
			if c := s.Status.Conditions.Get(ct); c != nil && c.Status == status {
				return nil
			}
			if progress != nil && time.Since(lastLog) > 10*time.Second {
				progress(s)
				lastLog = time.Now()
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("shard %s: %s not %s after %s", name, ct, status, timeout)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// routing times, after each move of a drain ends, until a GET of the
// moved LogicalCluster through every front-proxy is answered 200: the
// origin holds none after the move, so only the destination answers it.
type routing struct {
	m       *movesRun
	ctx     context.Context
	mu      sync.Mutex
	samples []time.Duration
	wg      sync.WaitGroup
	clients []*http.Client
}

func (m *movesRun) newRouting(ctx context.Context) (*routing, error) {
	rt := &routing{m: m, ctx: ctx}
	for _, cfg := range m.proxies {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return nil, err
		}
		rt.clients = append(rt.clients, hc)
	}
	return rt, nil
}

func (rt *routing) moved(_ string, st *migrationState) {
	if st.failure != "" {
		return
	}
	for i, hc := range rt.clients {
		rt.wg.Add(1)
		go func() {
			defer rt.wg.Done()
			url := logicalcluster.Name(st.cluster).Path().URL(rt.m.proxies[i].Host) + "/apis/core.kcp.io/v1alpha1/logicalclusters/" + corev1alpha1.LogicalClusterName
			deadline := time.Now().Add(convergenceTimeout)
			for time.Now().Before(deadline) && rt.ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(rt.ctx, http.MethodGet, url, nil)
				if resp, err := hc.Do(req); err == nil {
					resp.Body.Close()
					if resp.StatusCode == http.StatusOK {
						rt.mu.Lock()
						rt.samples = append(rt.samples, time.Since(st.ended))
						rt.mu.Unlock()
						return
					}
				}
				time.Sleep(pollPeriod)
			}
			fmt.Fprintf(os.Stderr, "bench: %s never served by %s through front-proxy %d\n", st.cluster, st.destination, i)
		}()
	}
}

func (rt *routing) report(mr *movesResults) {
	rt.wg.Wait()
	mr.RoutingSamples = len(rt.samples)
	mr.RoutingP50Ms, mr.RoutingP99Ms, mr.RoutingMaxMs = percentile(rt.samples, 50), percentile(rt.samples, 99), percentile(rt.samples, 100)
	for _, s := range rt.samples {
		if s > time.Second {
			mr.RoutingLate++
		}
	}
}

// writers loop creates into random clusters through the front-proxies, in
// turn, until stop is called.
func (m *movesRun) writers(ctx context.Context, n int, clusters []logicalcluster.Name, f *failures) (stop func(), err error) {
	type client struct {
		cluster logicalcluster.Name
		cs      kubernetes.Interface
	}
	var all []client
	for i, c := range clusters {
		cs, err := m.kube(i%len(m.proxies), c)
		if err != nil {
			return nil, err
		}
		all = append(all, client{c, cs})
	}
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; wctx.Err() == nil; j++ {
				c := all[rand.IntN(len(all))]
				_, err := c.cs.CoreV1().ConfigMaps("default").Create(wctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("writer-%d-%06d", w, j)}}, metav1.CreateOptions{})
				if wctx.Err() != nil {
					return
				}
				f.record(err)
			}
		}()
	}
	return func() { cancel(); wg.Wait() }, nil
}

// drainShard cordons shard, asks for its drain and waits for Drained,
// timing the moves' routing and the writers' failures.
func (m *movesRun) drainShard(ctx context.Context, o options, mr *movesResults, shard string, clusters []logicalcluster.Name) error {
	f := &failures{}
	defer f.report(mr)
	rt, err := m.newRouting(ctx)
	if err != nil {
		return err
	}
	m.mw.mu.Lock()
	m.mw.onEnd = rt.moved
	m.mw.mu.Unlock()
	stopWriters, err := m.writers(ctx, o.moves.writers, clusters, f)
	if err != nil {
		return err
	}
	m.step(fmt.Sprintf("cordoning %s and draining its %d workspaces, %d moves at a time", shard, len(clusters), o.moves.maxMoves))
	start := time.Now()
	waitProfiles := m.cpuProfiles(ctx, o.moves.profileDir, m.shards...)
	defer waitProfiles()
	if err := m.updateShard(ctx, shard, func(s *corev1alpha1.Shard) {
		s.Annotations[corev1alpha1.ShardUnschedulableAnnotationKey] = "true"
		s.Annotations[corev1alpha1.ShardDrainAnnotationKey] = "true"
		s.Annotations[corev1alpha1.ShardDrainMaxMovesAnnotationKey] = fmt.Sprint(o.moves.maxMoves)
	}); err != nil {
		stopWriters()
		return err
	}
	err = m.shardCondition(ctx, shard, corev1alpha1.ShardDrained, corev1.ConditionTrue, time.Duration(len(clusters)+10)*moveTimeout/10, func(s *corev1alpha1.Shard) {
		if c := s.Status.Conditions.Get(corev1alpha1.ShardDrained); c != nil {
			m.step(fmt.Sprintf("%s: Drained %s %s: %s", shard, c.Status, c.Reason, c.Message))
		}
	})
	mr.DrainSeconds = time.Since(start).Seconds()
	// Drained counts the shard's residents: the last moves may still be
	// finishing on their destinations.
	for wait := time.Now(); err == nil && time.Since(wait) < 2*time.Minute; time.Sleep(100 * time.Millisecond) {
		if m.mw.running(shard) == 0 {
			break
		}
	}
	mr.DrainAllEndedSeconds = time.Since(start).Seconds()
	stopWriters()
	m.mw.mu.Lock()
	m.mw.onEnd = nil
	mr.DrainDestination = map[string]int{}
	var ends []time.Time
	for _, st := range m.mw.byName {
		if st.origin != shard && st.origin != "" {
			continue
		}
		switch {
		case st.phase == migrationv1alpha1.LogicalClusterMigrationPhaseCompleted:
			mr.DrainDestination[st.destination]++
			ends = append(ends, st.ended)
		case st.phase == migrationv1alpha1.LogicalClusterMigrationPhaseFailed:
			mr.FailedMoves++
		}
	}
	for name := range m.mw.byName {
		if strings.HasSuffix(name, "-2") || strings.HasSuffix(name, "-3") {
			mr.DrainRetries++
		}
	}
	m.mw.mu.Unlock()
	mr.DrainQuarterPerMinute = quarterRates(start, ends)
	rt.report(mr)
	mr.DrainWorkspaces, mr.DrainMaxMoves = len(clusters), o.moves.maxMoves
	if mr.DrainAllEndedSeconds > 0 {
		mr.DrainPerMinute = float64(len(clusters)) / (mr.DrainAllEndedSeconds / 60)
	}
	return err
}

// quarterRates splits the end times of moves begun at start into four
// quarters by count and returns each one's moves per minute.
func quarterRates(start time.Time, ends []time.Time) []float64 {
	if len(ends) < 4 {
		return nil
	}
	slices.SortFunc(ends, func(a, b time.Time) int { return a.Compare(b) })
	var out []float64
	from, prev := 0, start
	for q := 1; q <= 4; q++ {
		to := len(ends) * q / 4
		last := ends[to-1]
		if d := last.Sub(prev); d > 0 {
			out = append(out, float64(to-from)/d.Minutes())
		}
		from, prev = to, last
	}
	return out
}

func (m *movesRun) drain(ctx context.Context, o options, mr *movesResults) error {
	shard := m.shards[2]
	m.step(fmt.Sprintf("creating %d workspaces on %s", o.moves.drainWS, shard))
	clusters, rate, err := m.createOn(ctx, shard, m.b.names("drain", o.moves.drainWS))
	if err != nil {
		return err
	}
	m.step(fmt.Sprintf("created at %.0f/s", rate))
	return m.drainShard(ctx, o, mr, shard, clusters)
}

// perShard counts root's workspaces by the shard they name.
func (m *movesRun) perShard(ctx context.Context) (map[string]int, []logicalcluster.Name, error) {
	list := &tenancyv1alpha1.WorkspaceList{}
	if err := m.admin.List(ctx, logicalcluster.Root, kcpclient.Workspaces, list); err != nil {
		return nil, nil, err
	}
	out := map[string]int{}
	var onFirst []logicalcluster.Name
	for _, ws := range list.Items {
		s := ws.Annotations[corev1alpha1.ShardAnnotationKey]
		out[s]++
		if s == m.shards[1] {
			onFirst = append(onFirst, logicalcluster.Name(ws.Spec.Cluster))
		}
	}
	return out, onFirst, nil
}

func (m *movesRun) scale(ctx context.Context, o options, mr *movesResults) error {
	mo := o.moves
	running := m.shards[:len(m.shards)-1]
	joining := m.shards[len(m.shards)-1]
	mr.ScaleShards, mr.ScaleWorkspaces = len(running), mo.scaleWS
	mr.ScaleCapacity = map[string]float64{}
	for i, v := range parsePoints(mo.softLimits) {
		if i >= len(running) {
			break
		}
		if err := m.updateShard(ctx, running[i], func(s *corev1alpha1.Shard) {
			s.Spec.ResourceLimits = &corev1alpha1.ShardResourceLimits{Soft: corev1.ResourceList{corev1alpha1.ResourceWorkspaces: *resource.NewQuantity(int64(v), resource.DecimalSI)}}
		}); err != nil {
			return err
		}
		mr.ScaleCapacity[running[i]] = float64(v)
	}
	m.step(fmt.Sprintf("creating %d workspaces through the front-proxy, placed by the scheduler", mo.scaleWS))
	_, rate, err := m.createOn(ctx, "", m.b.names("scale", mo.scaleWS))
	if err != nil {
		return err
	}
	mr.ScaleCreateRate = rate
	spread, onFirst, err := m.perShard(ctx)
	if err != nil {
		return err
	}
	mr.ScaleSpread = spread
	mr.ScaleSpreadPct = spreadPct(spread, running, mr.ScaleCapacity)
	m.step(fmt.Sprintf("spread %v: %.1f %% of even", spread, mr.ScaleSpreadPct))

	m.step(fmt.Sprintf("%s joins", joining))
	start := time.Now()
	if err := m.sys.StartShard(ctx, joining); err != nil {
		return err
	}
	if mo.joinLimit > 0 {
		if err := m.updateShard(ctx, joining, func(s *corev1alpha1.Shard) {
			s.Spec.ResourceLimits = &corev1alpha1.ShardResourceLimits{Hard: corev1.ResourceList{corev1alpha1.ResourceWorkspaces: *resource.NewQuantity(int64(mo.joinLimit), resource.DecimalSI)}}
		}); err != nil {
			return err
		}
	}
	if err := m.shardCondition(ctx, joining, corev1alpha1.ShardSchedulable, corev1.ConditionTrue, 2*time.Minute, nil); err != nil {
		m.step(fmt.Sprintf("%s: %v (going on)", joining, err))
	}
	mr.ScaleJoinSeconds = time.Since(start).Seconds()
	if err := m.drainShard(ctx, o, mr, m.shards[1], onFirst); err != nil {
		return err
	}
	// A moved Workspace names its new shard once the move's last step
	// reached its parent's shard.
	drained := time.Now()
	for {
		if mr.ScaleAfter, _, err = m.perShard(ctx); err != nil {
			return err
		}
		if mr.ScaleAfter[m.shards[1]] == 0 || time.Since(drained) > time.Minute {
			break
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	mr.ScaleRenamedSeconds = time.Since(drained).Seconds()
	mr.ScaleShardRSS = map[string]int64{}
	for _, s := range m.shards {
		mr.ScaleShardRSS[s] = pidRSS(filepath.Join(m.dir, s+".pid"))
	}
	for i := range m.proxies {
		name := "front-proxy"
		if i > 0 {
			name = fmt.Sprintf("front-proxy-%d", i+1)
		}
		mr.ScaleProxyRSS = append(mr.ScaleProxyRSS, pidRSS(filepath.Join(m.dir, name+".pid")))
	}
	mr.ScaleCacheRSS = pidRSS(filepath.Join(m.dir, "cache.pid"))
	return nil
}

// spreadPct is (fullest − emptiest) / mean of the shards' workspaces per
// unit of capacity (equal capacity where none is given), in percent.
func spreadPct(perShard map[string]int, shards []string, capacity map[string]float64) float64 {
	var fills []float64
	var sum float64
	for _, s := range shards {
		c := capacity[s]
		if c == 0 {
			c = 1
		}
		f := float64(perShard[s]) / c
		fills = append(fills, f)
		sum += f
	}
	if len(fills) == 0 || sum == 0 {
		return 0
	}
	sort.Float64s(fills)
	return 100 * (fills[len(fills)-1] - fills[0]) / (sum / float64(len(fills)))
}

func (mr *movesResults) print(tw *tabwriter.Writer) {
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	row("mode", mr.Mode)
	row("machine CPU before / during", fmt.Sprintf("%.2f / %.2f of %d cores busy", mr.MachineCPUCoresIdle, mr.MachineCPUCores, mr.MachineCores))
	if mr.EmptyMoves > 0 {
		row(fmt.Sprintf("empty moves, %d at once", mr.EmptyParallel), fmt.Sprintf("%d: %.1f/min (each p50 %.0f ms, p99 %.0f ms)", mr.EmptyMoves, mr.EmptyPerMinute, mr.EmptyMoveP50Ms, mr.EmptyMoveP99Ms))
	}
	if mr.LoadedMoves > 0 {
		row(fmt.Sprintf("moves of %d objects, one at a time", mr.LoadedObjects), fmt.Sprintf("%d: %.1f/min (each p50 %.0f ms, p99 %.0f ms)", mr.LoadedMoves, mr.LoadedPerMinute, mr.LoadedMoveP50Ms, mr.LoadedMoveP99Ms))
		row("cut-over pause, longest write gap", fmt.Sprintf("p50 %.0f ms, p99 %.0f ms, max %.0f ms (writer's CREATE p50 %.1f ms, %d writes)", mr.WriterGapP50Ms, mr.WriterGapP99Ms, mr.WriterGapMaxMs, mr.WriterWriteP50Ms, mr.WriterWrites))
		row("cut-over, WritesHeld to DataCopied", fmt.Sprintf("p50 %.0f ms, p99 %.0f ms (as the bench's watch saw them)", mr.HeldToCopiedP50Ms, mr.HeldToCopiedP99Ms))
	}
	if mr.DrainWorkspaces > 0 {
		row(fmt.Sprintf("drain of %d workspaces, %d moves at once", mr.DrainWorkspaces, mr.DrainMaxMoves), fmt.Sprintf("Drained after %.1f s, last move ended after %.1f s (%.1f moves/min), onto %v, %d retried", mr.DrainSeconds, mr.DrainAllEndedSeconds, mr.DrainPerMinute, mr.DrainDestination, mr.DrainRetries))
		var quarters []string
		for _, r := range mr.DrainQuarterPerMinute {
			quarters = append(quarters, fmt.Sprintf("%.1f", r))
		}
		row("moves/min by quarter of the drain", strings.Join(quarters, ", "))
		row("routing after each move, every front-proxy", fmt.Sprintf("p50 %.0f ms, p99 %.0f ms, max %.0f ms (%d samples, %d over 1 s)", mr.RoutingP50Ms, mr.RoutingP99Ms, mr.RoutingMaxMs, mr.RoutingSamples, mr.RoutingLate))
	}
	row("failed moves", mr.FailedMoves)
	row("failed client requests", fmt.Sprintf("%d of %d, %d answers 429 retried by client-go %s", mr.FailedRequests, mr.Requests, mr.TooManyRetried, mr.FirstFailedRequest))
	if mr.ScaleWorkspaces > 0 {
		row(fmt.Sprintf("scale: %d workspaces on %d shards", mr.ScaleWorkspaces, mr.ScaleShards), fmt.Sprintf("%.0f/s, %v, spread %.1f %% of even (capacity %v)", mr.ScaleCreateRate, mr.ScaleSpread, mr.ScaleSpreadPct, mr.ScaleCapacity))
		row("a shard joins", fmt.Sprintf("%.1f s to schedulable; after the drain %v (%.1f s until no Workspace names the drained shard)", mr.ScaleJoinSeconds, mr.ScaleAfter, mr.ScaleRenamedSeconds))
		var rss []string
		for s, b := range mr.ScaleShardRSS {
			rss = append(rss, s+" "+mib(b))
		}
		sort.Strings(rss)
		row("RSS shards", strings.Join(rss, ", "))
		var prss []string
		for _, b := range mr.ScaleProxyRSS {
			prss = append(prss, mib(b))
		}
		row("RSS front-proxies / cache", strings.Join(prss, ", ")+" / "+mib(mr.ScaleCacheRSS))
	}
	row("bench duration", fmt.Sprintf("%.0f s", mr.BenchSecondsTotal))
}
