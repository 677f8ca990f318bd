package main

// The noisy mode (--mode=noisy, issue 43) starts one shard and the
// front-proxy with pkg/system, as --mode=system does, and two tenants in
// workspaces of their own. Tenant B (the victim), in a process of its own,
// sends a steady low-rate mix of GET, LIST and CREATE through the proxy,
// first alone, then while tenant A floods the same shard: --concurrency
// clients LISTing the --noisy-list-objects configmaps A created beforehand
// and CREATEing, plus --noisy-watches watches held open. Then the same in
// a second system whose shard runs with
// --enable-priority-and-fairness=false.
//
// kcp has no equivalent: it refuses --enable-priority-and-fairness and the
// max-in-flight flags (pkg/server/options/flags.go), so it has no fairness
// between workspaces to measure; this mode measures ours.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/bootstrap"
	"github.com/shardplane/shardplane/pkg/frontproxy"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/system"
	"github.com/shardplane/shardplane/test/framework"
)

// Namespaces of the tenants' workspaces: listed objects, created objects
// and watched objects apart, so that no phase LISTs what an earlier one
// created.
const (
	noisyListedNamespace  = "default"
	noisyCreateNamespace  = "created"
	noisyWatchedNamespace = "watched"
	// victimObjects are the configmaps B GETs and LISTs.
	victimObjects = 10
)

// noisyOptions are the flags of the noisy mode.
type noisyOptions struct {
	duration    time.Duration
	victimRate  float64
	listObjects int
	watches     int
	watchUsers  int
	shardArgs   string
	inFlight    int
	timeShare   float64
	profileDir  string
	fairOnly    bool
	direct      bool
	floodNice   bool
}

func (n *noisyOptions) addFlags(fs *flag.FlagSet) {
	fs.DurationVar(&n.duration, "noisy-duration", 20*time.Second, "how long tenant B is measured alone and under the flood, in each system of --mode=noisy")
	fs.Float64Var(&n.victimRate, "noisy-victim-rate", 20, "tenant B's requests per second (GET, LIST, CREATE in turn) in --mode=noisy")
	fs.IntVar(&n.listObjects, "noisy-list-objects", 1000, "configmaps tenant A creates before the flood and LISTs in it (--mode=noisy); the flood has --concurrency clients")
	fs.IntVar(&n.watches, "noisy-watches", 2000, "watches tenant A holds open through the front-proxy during the flood (--mode=noisy)")
	fs.IntVar(&n.watchUsers, "noisy-watch-users", 4, "users of workspace A that share the watches: the front-proxy bounds each user at --max-watches-per-user (default 1000)")
	fs.IntVar(&n.inFlight, "noisy-workspace-in-flight", 1, "--max-requests-in-flight-per-workspace of the shard with fairness on in --mode=noisy (0: none); the shard without fairness has none")
	fs.Float64Var(&n.timeShare, "noisy-workspace-time-share", 0.25, "--max-request-time-share-per-workspace of the shard with fairness on in --mode=noisy (0: none); the shard without fairness has none")
	fs.BoolVar(&n.direct, "noisy-victim-direct", false, "tenant B sends its requests to the shard directly instead of through the front-proxy in --mode=noisy, to tell the shard's part of B's latency from the proxy's")
	fs.BoolVar(&n.floodNice, "noisy-flood-low-priority", true, "run the bench's own process, tenant A's clients, at niceness 19 during the flood in --mode=noisy, so that A's clients take only CPU the servers and B leave (on their own machines they would take none of the servers')")
	fs.BoolVar(&n.fairOnly, "noisy-fair-only", false, "run only the system with fairness on in --mode=noisy (the unfair keys stay 0)")
	fs.StringVar(&n.profileDir, "noisy-profile-dir", "", "save the shard's CPU and allocation profiles over B's timed flood phase of each system, and an execution trace of its first 5 s, in --mode=noisy (empty: none)")
	fs.StringVar(&n.shardArgs, "noisy-shard-args", "", "extra flags of the shard in --mode=noisy, space separated (e.g. \"--max-requests-inflight=4 --max-mutating-requests-inflight=2\")")
}

// noisyResults are the numbers of the noisy mode; keys are prefixed noisy_.
// Fields without "unfair" are of the system with fairness on.
type noisyResults struct {
	DurationSeconds float64 `json:"noisy_duration_seconds"`
	VictimRate      float64 `json:"noisy_victim_rate"`
	FloodClients    int     `json:"noisy_flood_clients"`
	ListObjects     int     `json:"noisy_list_objects"`
	Watches         int     `json:"noisy_watches"`
	WatchUsers      int     `json:"noisy_watch_users"`
	ShardArgs       string  `json:"noisy_shard_args"`
	// WorkspaceInFlight is the shard's bound of a workspace's requests
	// running at once, with fairness on.
	WorkspaceInFlight int `json:"noisy_workspace_in_flight"`
	// WorkspaceTimeShare is the shard's bound of a workspace's seconds of
	// request time per second, with fairness on.
	WorkspaceTimeShare float64 `json:"noisy_workspace_time_share"`

	VictimP50AloneMs float64 `json:"noisy_victim_p50_alone_ms"`
	VictimP99AloneMs float64 `json:"noisy_victim_p99_alone_ms"`
	VictimP50FloodMs float64 `json:"noisy_victim_p50_flood_ms"`
	VictimP99FloodMs float64 `json:"noisy_victim_p99_flood_ms"`
	// VictimErrors counts B's failed requests alone and under the flood
	// (429s included: B's client does not retry).
	VictimErrors   int `json:"noisy_victim_errors"`
	VictimRequests int `json:"noisy_victim_requests"`
	// MachineCPUCoresAlone is how busy the whole machine was while B was
	// timed alone (other work on it included; the flood's is in Flood).
	MachineCPUCoresAlone float64 `json:"noisy_machine_cpu_cores_alone"`
	// VictimByVerb are B's p50 and p99 by verb, alone and under the flood.
	VictimByVerb       map[string]victimVerbTimes `json:"noisy_victim_by_verb"`
	VictimByVerbUnfair map[string]victimVerbTimes `json:"noisy_victim_by_verb_unfair"`

	VictimP50AloneUnfairMs     float64 `json:"noisy_victim_p50_alone_unfair_ms"`
	VictimP99AloneUnfairMs     float64 `json:"noisy_victim_p99_alone_unfair_ms"`
	VictimP50FloodUnfairMs     float64 `json:"noisy_victim_p50_flood_unfair_ms"`
	VictimP99FloodUnfairMs     float64 `json:"noisy_victim_p99_flood_unfair_ms"`
	VictimErrorsUnfair         int     `json:"noisy_victim_errors_unfair"`
	VictimRequestsUnfair       int     `json:"noisy_victim_requests_unfair"`
	MachineCPUCoresAloneUnfair float64 `json:"noisy_machine_cpu_cores_alone_unfair"`

	Flood       noisyFlood `json:"noisy_flood"`
	FloodUnfair noisyFlood `json:"noisy_flood_unfair"`
}

// victimVerbTimes are B's times of one verb.
type victimVerbTimes struct {
	P50AloneMs float64 `json:"p50_alone_ms"`
	P99AloneMs float64 `json:"p99_alone_ms"`
	P50FloodMs float64 `json:"p50_flood_ms"`
	P99FloodMs float64 `json:"p99_flood_ms"`
}

func byVerbTimes(alone, flood map[string][]time.Duration) map[string]victimVerbTimes {
	out := map[string]victimVerbTimes{}
	for _, v := range victimVerbs {
		out[v] = victimVerbTimes{P50AloneMs: percentile(alone[v], 50), P99AloneMs: percentile(alone[v], 99),
			P50FloodMs: percentile(flood[v], 50), P99FloodMs: percentile(flood[v], 99)}
	}
	return out
}

// noisyFlood is what tenant A saw and what the flood cost, in one system.
type noisyFlood struct {
	Lists   int `json:"lists"`
	Creates int `json:"creates"`
	// TooMany counts A's requests answered 429 (A retries at once).
	TooMany     int     `json:"too_many_requests"`
	Errors      int     `json:"errors"`
	ListP50Ms   float64 `json:"list_p50_ms"`
	CreateP50Ms float64 `json:"create_p50_ms"`
	// WatchesOpen are A's watches that opened; WatchesRefused those
	// answered otherwise (429 past a bound), WatchesEnded those the
	// servers ended before the flood did.
	WatchesOpen    int   `json:"watches_open"`
	WatchesRefused int   `json:"watches_refused"`
	WatchesEnded   int64 `json:"watches_ended"`
	// Peak RSS over the flood, and the proxy's most goroutines.
	ShardRSSBeforeBytes int64 `json:"shard_rss_before_bytes"`
	ShardRSSPeakBytes   int64 `json:"shard_rss_peak_bytes"`
	ProxyRSSPeakBytes   int64 `json:"proxy_rss_peak_bytes"`
	ProxyGoroutines     int   `json:"proxy_goroutines"`
	// CPU seconds per second of B's timed flood phase of the shard, the
	// front-proxy and the bench (tenant A's clients; B runs in a process
	// of its own): the machine's cores are what they share.
	ShardCPUCores float64 `json:"shard_cpu_cores"`
	ProxyCPUCores float64 `json:"proxy_cpu_cores"`
	BenchCPUCores float64 `json:"bench_cpu_cores"`
	// MachineCPUCores is the whole machine's (other work on it included),
	// of MachineCores.
	MachineCPUCores float64 `json:"machine_cpu_cores"`
	MachineCores    int     `json:"machine_cores"`
	// ShardReady is whether the shard answered /readyz after the flood.
	ShardReady bool `json:"shard_ready_after"`
}

// noisyTenant is a user of one workspace reached through the front-proxy,
// on connections of its own (another machine's, not the bench's other
// users').
type noisyTenant struct {
	user  string
	token string
	path  logicalcluster.Path
	cfg   *rest.Config
	http  *http.Client
	core  rest.Interface
}

func newNoisyTenant(proxy *rest.Config, user, token string, path logicalcluster.Path) (*noisyTenant, error) {
	cfg := rest.CopyConfig(proxy)
	cfg.BearerToken = token
	// A dialer of its own keeps client-go from sharing the connections of
	// another user with the same TLS configuration.
	cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, err
	}
	return &noisyTenant{user: user, token: token, path: path, cfg: cfg, http: hc, core: cs.CoreV1().RESTClient()}, nil
}

// configMaps is the path of the configmaps of a namespace of the tenant's
// workspace.
func (t *noisyTenant) configMaps(namespace string) string {
	return t.path.RequestPath() + "/api/v1/namespaces/" + namespace + "/configmaps"
}

// get, list and create send one request without client-go's retries, so
// that a 429 is seen; the body is read but not decoded.
func (t *noisyTenant) get(ctx context.Context, namespace, name string) error {
	_, err := t.core.Get().AbsPath(t.configMaps(namespace), name).MaxRetries(0).DoRaw(ctx)
	return err
}

func (t *noisyTenant) list(ctx context.Context, namespace string) error {
	_, err := t.core.Get().AbsPath(t.configMaps(namespace)).MaxRetries(0).DoRaw(ctx)
	return err
}

func (t *noisyTenant) create(ctx context.Context, namespace, name string) error {
	body, err := json.Marshal(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}})
	if err != nil {
		return err
	}
	_, err = t.core.Post().AbsPath(t.configMaps(namespace)).SetHeader("Content-Type", "application/json").Body(body).MaxRetries(0).DoRaw(ctx)
	return err
}

// noisyUsers are the token users of one run: B, A (the flood's clients)
// and A's watch users.
type noisyUsers struct {
	victim, flood string
	watchers      []string
	tokens        map[string]string
}

func newNoisyUsers(watchUsers int) (*noisyUsers, error) {
	u := &noisyUsers{victim: "tenant-b", flood: "tenant-a", tokens: map[string]string{}}
	for i := 0; i < watchUsers; i++ {
		u.watchers = append(u.watchers, fmt.Sprintf("tenant-a-watch-%d", i))
	}
	for _, name := range append([]string{u.victim, u.flood}, u.watchers...) {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		u.tokens[name] = hex.EncodeToString(b)
	}
	return u, nil
}

// writeTokenFile writes the users in kube-apiserver's token file format.
func (u *noisyUsers) writeTokenFile(path string) error {
	var lines []string
	for name, token := range u.tokens {
		lines = append(lines, fmt.Sprintf("%s,%s,%s", token, name, name))
	}
	return os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

func runNoisy(ctx context.Context, o options) (results, error) {
	n := o.noisy
	if n.watchUsers < 1 {
		return results{}, errors.New("--noisy-watch-users must be at least 1")
	}
	if per := (n.watches + n.watchUsers - 1) / n.watchUsers; per > frontproxy.DefaultMaxWatchesPerUser {
		return results{}, fmt.Errorf("%d watches over %d users are %d per user, more than the front-proxy's --max-watches-per-user (%d): raise --noisy-watch-users",
			n.watches, n.watchUsers, per, frontproxy.DefaultMaxWatchesPerUser)
	}
	res := &noisyResults{DurationSeconds: n.duration.Seconds(), VictimRate: n.victimRate, FloodClients: o.concurrency,
		ListObjects: n.listObjects, Watches: n.watches, WatchUsers: n.watchUsers, ShardArgs: n.shardArgs, WorkspaceInFlight: n.inFlight, WorkspaceTimeShare: n.timeShare}
	r := results{noisyResults: res}
	for _, fair := range []bool{true, false} {
		if !fair && n.fairOnly {
			break
		}
		run, err := startNoisyRun(ctx, o, fair)
		if err != nil {
			return r, err
		}
		err = run.measure(ctx, o, res)
		run.stop()
		if err != nil {
			return r, err
		}
	}
	return r, nil
}

// noisyRun is one system with the two tenants.
type noisyRun struct {
	fair     bool
	dir      string
	keep     bool
	sys      *system.System
	proxy    *rest.Config
	proxyHC  *http.Client
	shardHC  *http.Client
	victim   *noisyTenant
	flood    *noisyTenant
	watchers []*noisyTenant
	b        *bench
	// nice is the niceness the servers and tenant B run at.
	nice int
}

func (nr *noisyRun) step(s string) {
	fairness := "on"
	if !nr.fair {
		fairness = "off"
	}
	fmt.Fprintf(os.Stderr, "bench: [fairness %s] %s\n", fairness, s)
}

func (nr *noisyRun) stop() {
	if nr.b != nil {
		nr.b.stopWatch()
	}
	if nr.sys != nil {
		nr.sys.Stop()
	}
	if nr.keep {
		fmt.Fprintf(os.Stderr, "bench: kept %s\n", nr.dir)
		return
	}
	_ = os.RemoveAll(nr.dir)
}

// startNoisyRun starts one shard and the front-proxy with the tenants'
// tokens, creates workspaces A and B as kcp-admin through the proxy, and
// grants each tenant's users access and edit in its own workspace.
func startNoisyRun(ctx context.Context, o options, fair bool) (*noisyRun, error) {
	dir, err := os.MkdirTemp("", "shardplane-bench-noisy-")
	if err != nil {
		return nil, err
	}
	nice, err := ownNice()
	if err != nil {
		return nil, err
	}
	run := &noisyRun{fair: fair, dir: dir, keep: o.system.keepDir, nice: nice}
	ok := false
	defer func() {
		if !ok {
			run.stop()
		}
	}()
	users, err := newNoisyUsers(o.noisy.watchUsers)
	if err != nil {
		return nil, err
	}
	tokenFile := filepath.Join(dir, "tenant-tokens.csv")
	if err := users.writeTokenFile(tokenFile); err != nil {
		return nil, err
	}
	shardArgs := strings.Fields(o.noisy.shardArgs)
	if fair {
		shardArgs = append(shardArgs, fmt.Sprintf("--max-requests-in-flight-per-workspace=%d", o.noisy.inFlight),
			fmt.Sprintf("--max-request-time-share-per-workspace=%g", o.noisy.timeShare))
	} else {
		// Without fairness no workspace waits its turn either.
		shardArgs = append(shardArgs, "--enable-priority-and-fairness=false", "--max-requests-in-flight-per-workspace=0", "--max-request-time-share-per-workspace=0")
	}
	run.step(fmt.Sprintf("starting one shard (%s) and the front-proxy", strings.Join(shardArgs, " ")))
	run.sys, err = system.Start(ctx, system.Options{Dir: filepath.Join(dir, "system"), Shards: 1, FrontProxies: 1, TokenAuthFile: tokenFile,
		ShardBinary: o.shardBinary, FrontProxyBinary: o.system.frontProxyBinary, ShardArgs: shardArgs})
	if err != nil {
		return nil, err
	}
	sysDir := filepath.Join(dir, "system")
	if run.proxy, err = contextConfig(filepath.Join(sysDir, system.AdminKubeconfigFile), "base"); err != nil {
		return nil, err
	}
	masters, err := contextConfig(filepath.Join(sysDir, "system-admin.kubeconfig"), "")
	if err != nil {
		return nil, err
	}
	if run.proxyHC, err = rest.HTTPClientFor(run.proxy); err != nil {
		return nil, err
	}
	if run.shardHC, err = rest.HTTPClientFor(masters); err != nil {
		return nil, err
	}
	if run.b, err = newBench(&target{admin: run.proxy, masters: masters}, o.concurrency); err != nil {
		return nil, err
	}
	workspace := func(name string, users ...string) (logicalcluster.Path, error) {
		if _, _, err := run.b.createOne(ctx, logicalcluster.Root, name); err != nil {
			return "", err
		}
		path := logicalcluster.Root.Path().Join(name)
		admin := rest.CopyConfig(run.proxy)
		admin.Host = path.URL(admin.Host)
		kc, err := kubernetes.NewForConfig(admin)
		if err != nil {
			return "", err
		}
		var subjects []rbacv1.Subject
		for _, u := range users {
			subjects = append(subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: u})
		}
		// The proxy serves the workspace once its index has it.
		err = framework.PollEvery(ctx, pollPeriod, convergenceTimeout, func(ctx context.Context) error {
			_, err := kc.CoreV1().Namespaces().Get(ctx, noisyListedNamespace, metav1.GetOptions{})
			return err
		})
		if err != nil {
			return "", fmt.Errorf("proxy does not serve %s: %w", path, err)
		}
		for _, role := range []string{bootstrap.WorkspaceAccessClusterRole, "edit"} {
			crb := &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "tenants-" + strings.ReplaceAll(role, ":", "-")},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   subjects,
			}
			if _, err := kc.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
				return "", fmt.Errorf("bind %s in %s: %w", role, path, err)
			}
		}
		for _, ns := range []string{noisyCreateNamespace, noisyWatchedNamespace} {
			if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				return "", fmt.Errorf("namespace %s in %s: %w", ns, path, err)
			}
		}
		return path, nil
	}
	run.step("workspaces noisy-a and noisy-b, their users granted access and edit")
	pathA, err := workspace("noisy-a", append([]string{users.flood}, users.watchers...)...)
	if err != nil {
		return nil, err
	}
	pathB, err := workspace("noisy-b", users.victim)
	if err != nil {
		return nil, err
	}
	tenant := func(user string, path logicalcluster.Path) (*noisyTenant, error) {
		return newNoisyTenant(run.proxy, user, users.tokens[user], path)
	}
	victimVia := run.proxy
	if o.noisy.direct {
		victimVia = masters
	}
	if run.victim, err = newNoisyTenant(victimVia, users.victim, users.tokens[users.victim], pathB); err != nil {
		return nil, err
	}
	if run.flood, err = tenant(users.flood, pathA); err != nil {
		return nil, err
	}
	for _, u := range users.watchers {
		w, err := tenant(u, pathA)
		if err != nil {
			return nil, err
		}
		run.watchers = append(run.watchers, w)
	}
	// RBAC reaches the shard's authorizer through its informers: poll
	// until each tenant is let in.
	for _, t := range append([]*noisyTenant{run.victim, run.flood}, run.watchers...) {
		if err := framework.PollEvery(ctx, pollPeriod, convergenceTimeout, func(ctx context.Context) error {
			return t.list(ctx, noisyWatchedNamespace)
		}); err != nil {
			return nil, fmt.Errorf("%s in %s: %w", t.user, t.path, err)
		}
	}
	ok = true
	return run, nil
}

// measure fills the tenants' objects, times B alone, then under A's flood.
func (nr *noisyRun) measure(ctx context.Context, o options, res *noisyResults) error {
	n := o.noisy
	nr.step(fmt.Sprintf("tenant A creates %d configmaps, tenant B %d", n.listObjects, victimObjects))
	items := make(chan int, n.listObjects)
	for i := 0; i < n.listObjects; i++ {
		items <- i
	}
	close(items)
	if err := parallel(ctx, o.concurrency, items, func(i int) error {
		return retryTooMany(ctx, func() error { return nr.flood.create(ctx, noisyListedNamespace, fmt.Sprintf("listed-%04d", i)) })
	}); err != nil {
		return fmt.Errorf("tenant A's configmaps: %w", err)
	}
	for i := 0; i < victimObjects; i++ {
		if err := nr.victim.create(ctx, noisyListedNamespace, fmt.Sprintf("victim-%d", i)); err != nil {
			return fmt.Errorf("tenant B's configmaps: %w", err)
		}
	}

	// B's first requests open its connection: not timed.
	if err := sleep(ctx, 2*time.Second); err != nil {
		return err
	}
	warm := n
	warm.duration = 2 * time.Second
	if _, _, errs := nr.victimRun(ctx, warm, "warm"); errs > 0 {
		return fmt.Errorf("tenant B failed %d requests alone", errs)
	}
	nr.step(fmt.Sprintf("tenant B alone for %s at %.0f requests/s", n.duration, n.victimRate))
	machineBefore, started := machineCPU(), time.Now()
	alone, aloneByVerb, aloneErrs := nr.victimRun(ctx, n, "alone")
	machineAlone := (machineCPU() - machineBefore).Seconds() / time.Since(started).Seconds()

	if n.floodNice {
		if err := setNice(19); err != nil {
			return err
		}
		defer func() { _ = setNice(nr.nice) }()
	}
	nr.step(fmt.Sprintf("tenant A opens %d watches over %d users", n.watches, len(nr.watchers)))
	var fl noisyFlood
	fl.ShardRSSBeforeBytes = pidRSS(filepath.Join(nr.dir, "system", system.ShardName(0)+".pid"))
	floodCtx, endFlood := context.WithCancel(ctx)
	defer endFlood()
	var ended atomic.Int64
	var watchers sync.WaitGroup
	fl.WatchesOpen, fl.WatchesRefused = nr.openWatches(floodCtx, n.watches, &ended, &watchers)

	nr.step(fmt.Sprintf("tenant A floods with %d clients (LIST of %d, CREATE); tenant B for %s", o.concurrency, n.listObjects, n.duration))
	var peaks sync.WaitGroup
	peaks.Add(1)
	go func() {
		defer peaks.Done()
		nr.samplePeaks(floodCtx, &fl)
	}()
	var flooders sync.WaitGroup
	var mu sync.Mutex
	var lists, creates []time.Duration
	var tooMany, floodErrs atomic.Int64
	for c := 0; c < o.concurrency; c++ {
		flooders.Add(1)
		go func() {
			defer flooders.Done()
			for i := 0; floodCtx.Err() == nil; i++ {
				start := time.Now()
				var err error
				isList := i%2 == 0
				if isList {
					err = nr.flood.list(floodCtx, noisyListedNamespace)
				} else {
					err = nr.flood.create(floodCtx, noisyCreateNamespace, fmt.Sprintf("flood-%d-%d", c, i))
				}
				took := time.Since(start)
				switch {
				case err == nil:
					mu.Lock()
					if isList {
						lists = append(lists, took)
					} else {
						creates = append(creates, took)
					}
					mu.Unlock()
				case apierrors.IsTooManyRequests(err):
					tooMany.Add(1)
				case floodCtx.Err() == nil:
					floodErrs.Add(1)
				}
			}
		}()
	}
	// Let the flood take hold before B is timed.
	if err := sleep(ctx, 2*time.Second); err != nil {
		return err
	}
	sysDir := filepath.Join(nr.dir, "system")
	cpu := func() [3]time.Duration {
		return [3]time.Duration{pidCPU(filepath.Join(sysDir, system.ShardName(0)+".pid")), pidCPU(filepath.Join(sysDir, "front-proxy.pid")), procCPU("self")}
	}
	cpuBefore := cpu()
	machineBefore, started = machineCPU(), time.Now()
	waitProfiles := nr.profiles(ctx, n.profileDir, n.duration)
	flooded, floodedByVerb, floodedErrs := nr.victimRun(ctx, n, "flood")
	waitProfiles()
	cpuAfter, machineAfter, elapsed := cpu(), machineCPU(), time.Since(started).Seconds()
	fl.MachineCPUCores, fl.MachineCores = (machineAfter-machineBefore).Seconds()/elapsed, runtime.NumCPU()
	fl.ShardCPUCores = (cpuAfter[0] - cpuBefore[0]).Seconds() / elapsed
	fl.ProxyCPUCores = (cpuAfter[1] - cpuBefore[1]).Seconds() / elapsed
	fl.BenchCPUCores = (cpuAfter[2] - cpuBefore[2]).Seconds() / elapsed
	endFlood()
	flooders.Wait()
	watchers.Wait()
	peaks.Wait()
	fl.Lists, fl.Creates, fl.TooMany, fl.Errors = len(lists), len(creates), int(tooMany.Load()), int(floodErrs.Load())
	fl.ListP50Ms, fl.CreateP50Ms = percentile(lists, 50), percentile(creates, 50)
	fl.WatchesEnded = ended.Load()
	fl.ShardReady = nr.shardReady(ctx)

	if nr.fair {
		res.VictimP50AloneMs, res.VictimP99AloneMs = percentile(alone, 50), percentile(alone, 99)
		res.VictimP50FloodMs, res.VictimP99FloodMs = percentile(flooded, 50), percentile(flooded, 99)
		res.VictimErrors, res.VictimRequests = aloneErrs+floodedErrs, len(alone)+len(flooded)+aloneErrs+floodedErrs
		res.Flood, res.MachineCPUCoresAlone = fl, machineAlone
		res.VictimByVerb = byVerbTimes(aloneByVerb, floodedByVerb)
	} else {
		res.VictimP50AloneUnfairMs, res.VictimP99AloneUnfairMs = percentile(alone, 50), percentile(alone, 99)
		res.VictimP50FloodUnfairMs, res.VictimP99FloodUnfairMs = percentile(flooded, 50), percentile(flooded, 99)
		res.VictimErrorsUnfair, res.VictimRequestsUnfair = aloneErrs+floodedErrs, len(alone)+len(flooded)+aloneErrs+floodedErrs
		res.FloodUnfair, res.MachineCPUCoresAloneUnfair = fl, machineAlone
		res.VictimByVerbUnfair = byVerbTimes(aloneByVerb, floodedByVerb)
	}
	return nil
}

// retryTooMany calls fn until it returns anything but a 429, for the set-up
// before the measurements.
func retryTooMany(ctx context.Context, fn func() error) error {
	for {
		err := fn()
		if !apierrors.IsTooManyRequests(err) {
			return err
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// victimVerbs are B's requests, sent in turn.
var victimVerbs = []string{"get", "list", "create"}

// victimRun has the victim process send B's requests for the duration at
// the rate, each on its own goroutine at its time (a slow answer does not
// hold the next one back), GET, LIST and CREATE in turn; it returns the
// times of the successful ones, all and by verb, and the number of
// failures (1 if the process failed).
func (nr *noisyRun) victimRun(ctx context.Context, n noisyOptions, phase string) ([]time.Duration, map[string][]time.Duration, int) {
	out, err := runVictimProcess(ctx, victimJob{Config: victimConfigOf(nr.victim), Path: nr.victim.path.String(),
		Duration: n.duration, Rate: n.victimRate, Phase: phase, Nice: nr.nice})
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: tenant B (%s): %v\n", phase, err)
		return nil, nil, 1
	}
	var times []time.Duration
	byVerb := map[string][]time.Duration{}
	for verb, ds := range out.ByVerb {
		byVerb[verb] = ds
		times = append(times, ds...)
	}
	return times, byVerb, out.Errors
}

// Tenant B runs in a process of its own, as another tenant's client would:
// in the bench's process its requests would share a Go runtime (scheduler
// and garbage collector) with A's 20 clients and 2,000 watches, and B's
// times would include the bench's own load.
const victimJobEnv = "SHARDPLANE_BENCH_NOISY_VICTIM"

// victimJob is what the victim process is told to do.
type victimJob struct {
	Config   victimConfig
	Path     string
	Duration time.Duration
	Rate     float64
	Phase    string
	// Nice is the niceness the victim process runs at: the servers', not
	// that of the bench's process during the flood.
	Nice int
}

// victimConfig is the part of B's rest.Config the victim process needs.
type victimConfig struct {
	Host, Token, CAFile, ServerName string
	CAData                          []byte
	QPS                             float32
	Burst                           int
}

func victimConfigOf(t *noisyTenant) victimConfig {
	return victimConfig{Host: t.cfg.Host, Token: t.token, CAFile: t.cfg.CAFile, ServerName: t.cfg.ServerName, CAData: t.cfg.CAData,
		QPS: t.cfg.QPS, Burst: t.cfg.Burst}
}

// victimOutput is what the victim process prints: B's times by verb and
// its failed requests.
type victimOutput struct {
	ByVerb map[string][]time.Duration
	Errors int
}

// runVictimProcess runs job in a child process of the bench.
func runVictimProcess(ctx context.Context, job victimJob) (victimOutput, error) {
	var out victimOutput
	self, err := os.Executable()
	if err != nil {
		return out, err
	}
	spec, err := json.Marshal(job)
	if err != nil {
		return out, err
	}
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), victimJobEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("victim process: %w", err)
	}
	return out, json.Unmarshal(stdout, &out)
}

// runVictimFromEnv runs tenant B's requests and prints its times when the
// bench was started as the victim process.
func runVictimFromEnv() bool {
	spec := os.Getenv(victimJobEnv)
	if spec == "" {
		return false
	}
	if err := runVictim(spec); err != nil {
		fmt.Fprintln(os.Stderr, "victim:", err)
		os.Exit(1)
	}
	return true
}

func runVictim(spec string) error {
	var job victimJob
	if err := json.Unmarshal([]byte(spec), &job); err != nil {
		return err
	}
	if err := setNice(job.Nice); err != nil {
		return err
	}
	if job.Rate <= 0 {
		return errors.New("rate must be positive")
	}
	cfg := &rest.Config{Host: job.Config.Host, TLSClientConfig: rest.TLSClientConfig{CAFile: job.Config.CAFile, CAData: job.Config.CAData, ServerName: job.Config.ServerName},
		QPS: job.Config.QPS, Burst: job.Config.Burst}
	path, err := logicalcluster.ParsePath(job.Path)
	if err != nil {
		return err
	}
	b, err := newNoisyTenant(cfg, "victim", job.Config.Token, path)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first request opens the connection: not timed.
	if err := b.get(ctx, noisyListedNamespace, "victim-0"); err != nil {
		return fmt.Errorf("first request: %w", err)
	}
	interval := time.Duration(float64(time.Second) / job.Rate)
	total := int(job.Duration / interval)
	var mu sync.Mutex
	out := victimOutput{ByVerb: map[string][]time.Duration{}}
	var wg sync.WaitGroup
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for i := 0; i < total && ctx.Err() == nil; i++ {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			var err error
			switch i % 3 {
			case 0:
				err = b.get(ctx, noisyListedNamespace, fmt.Sprintf("victim-%d", i%victimObjects))
			case 1:
				err = b.list(ctx, noisyListedNamespace)
			default:
				err = b.create(ctx, noisyCreateNamespace, fmt.Sprintf("%s-%d", job.Phase, i))
			}
			took := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if out.Errors < 5 {
					fmt.Fprintf(os.Stderr, "bench: tenant B (%s): %v\n", job.Phase, err)
				}
				out.Errors++
				return
			}
			out.ByVerb[victimVerbs[i%3]] = append(out.ByVerb[victimVerbs[i%3]], took)
		}()
	}
	wg.Wait()
	return json.NewEncoder(os.Stdout).Encode(out)
}

// openWatches opens n watches of A's watched namespace, spread over A's
// watch users, and reads them until ctx ends; it returns how many opened
// and how many were refused. ended counts watches the servers ended first.
func (nr *noisyRun) openWatches(ctx context.Context, n int, ended *atomic.Int64, wg *sync.WaitGroup) (open, refused int) {
	items := make(chan int, n)
	for i := 0; i < n; i++ {
		items <- i
	}
	close(items)
	var mu sync.Mutex
	_ = parallel(ctx, 20, items, func(i int) error {
		t := nr.watchers[i%len(nr.watchers)]
		url := strings.TrimSuffix(t.cfg.Host, "/") + t.configMaps(noisyWatchedNamespace) + "?watch=1&resourceVersion=0&allowWatchBookmarks=true"
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := t.http.Do(req)
		mu.Lock()
		defer mu.Unlock()
		if err != nil || resp.StatusCode != http.StatusOK {
			if refused < 5 {
				status := "no answer"
				if resp != nil {
					status = resp.Status
					resp.Body.Close()
				}
				fmt.Fprintf(os.Stderr, "bench: watch %d of %s: %s %v\n", i, t.user, status, err)
			}
			refused++
			return nil
		}
		open++
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			if ctx.Err() == nil {
				ended.Add(1)
			}
		}()
		return nil
	})
	return open, refused
}

// samplePeaks reads the RSS of the shard and the proxy every half second
// until ctx ends, and the proxy's goroutines at the end.
func (nr *noisyRun) samplePeaks(ctx context.Context, fl *noisyFlood) {
	sysDir := filepath.Join(nr.dir, "system")
	for {
		fl.ShardRSSPeakBytes = max(fl.ShardRSSPeakBytes, pidRSS(filepath.Join(sysDir, system.ShardName(0)+".pid")))
		fl.ProxyRSSPeakBytes = max(fl.ProxyRSSPeakBytes, pidRSS(filepath.Join(sysDir, "front-proxy.pid")))
		if m, err := framework.ScrapeMetrics(ctx, nr.proxyHC, nr.sys.URL()+"/metrics", ""); err == nil {
			if v, ok := m.Value("go_goroutines", nil); ok {
				fl.ProxyGoroutines = max(fl.ProxyGoroutines, int(v))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// machineCPU is the time every core of the machine spent busy
// (/proc/stat: all but idle and iowait, in ticks of 10 ms).
func machineCPU() time.Duration {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	fields := strings.Fields(line)
	if len(fields) < 6 || fields[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, f := range fields[1:] {
		v, _ := strconv.ParseInt(f, 10, 64)
		// idle and iowait are the 4th and 5th; guest time is already in user.
		if i == 3 || i == 4 || i >= 8 {
			continue
		}
		busy += v
	}
	return time.Duration(busy) * 10 * time.Millisecond
}

// profiles saves the shard's CPU profile and its allocations over d into
// dir, named by whether fairness is on; the function it returns waits.
func (nr *noisyRun) profiles(ctx context.Context, dir string, d time.Duration) func() {
	var wg sync.WaitGroup
	if dir == "" {
		return wg.Wait
	}
	_ = os.MkdirAll(dir, 0o755)
	fairness := "fair"
	if !nr.fair {
		fairness = "unfair"
	}
	seconds := max(1, int(d.Seconds()))
	for _, p := range []string{"profile", "allocs", "trace"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			secs := seconds
			if p == "trace" {
				// An execution trace grows fast: a few seconds show the scheduling.
				secs = min(secs, 5)
			}
			url := fmt.Sprintf("%s/debug/pprof/%s?seconds=%d", nr.sys.ShardURL(system.ShardName(0)), p, secs)
			if err := saveURL(ctx, nr.shardHC, url, filepath.Join(dir, fmt.Sprintf("shard-%s-%s.pprof", fairness, p))); err != nil {
				nr.step(fmt.Sprintf("%s profile: %v", p, err))
			}
		}()
	}
	return wg.Wait
}

// ownNice is the niceness of the bench's process.
func ownNice() (int, error) {
	// The system call answers 20 - nice (glibc's getpriority converts).
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	return 20 - prio, err
}

// setNice gives every thread of this process the niceness nice; threads
// started later inherit it from the thread that starts them.
func setNice(nice int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("niceness of thread %d: %w", tid, err)
		}
	}
	return nil
}

// shardReady tells whether the shard answers /readyz.
func (nr *noisyRun) shardReady(ctx context.Context) bool {
	return framework.PollEvery(ctx, time.Second, 30*time.Second, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, nr.sys.ShardURL(system.ShardName(0))+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := nr.shardHC.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		return nil
	}) == nil
}

// print writes the noisy mode's table rows.
func (r *noisyResults) print(tw *tabwriter.Writer) {
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	shardArgs := r.ShardArgs
	if shardArgs == "" {
		shardArgs = "defaults"
	}
	row("noisy setup", fmt.Sprintf("B at %.0f req/s for %.0f s per phase; A: %d clients (LIST of %d, CREATE), %d watches over %d users; shard flags: %s; fairness on: %d request(s) of a workspace at once, %g s of request time per second",
		r.VictimRate, r.DurationSeconds, r.FloodClients, r.ListObjects, r.Watches, r.WatchUsers, shardArgs, r.WorkspaceInFlight, r.WorkspaceTimeShare))
	ratio := func(flood, alone float64) string {
		if alone <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f×", flood/alone)
	}
	row("B fairness on: alone / flood", fmt.Sprintf("p50 %.2f / %.2f ms, p99 %.2f / %.2f ms (%s alone at p99), %d errors of %d; the machine %.2f cores busy alone",
		r.VictimP50AloneMs, r.VictimP50FloodMs, r.VictimP99AloneMs, r.VictimP99FloodMs, ratio(r.VictimP99FloodMs, r.VictimP99AloneMs), r.VictimErrors, r.VictimRequests, r.MachineCPUCoresAlone))
	row("B fairness off: alone / flood", fmt.Sprintf("p50 %.2f / %.2f ms, p99 %.2f / %.2f ms (%s alone at p99), %d errors of %d; the machine %.2f cores busy alone",
		r.VictimP50AloneUnfairMs, r.VictimP50FloodUnfairMs, r.VictimP99AloneUnfairMs, r.VictimP99FloodUnfairMs, ratio(r.VictimP99FloodUnfairMs, r.VictimP99AloneUnfairMs), r.VictimErrorsUnfair, r.VictimRequestsUnfair, r.MachineCPUCoresAloneUnfair))
	for _, f := range []struct {
		name   string
		byVerb map[string]victimVerbTimes
	}{{"fairness on", r.VictimByVerb}, {"fairness off", r.VictimByVerbUnfair}} {
		var parts []string
		for _, v := range victimVerbs {
			t := f.byVerb[v]
			parts = append(parts, fmt.Sprintf("%s p99 %.1f / %.1f ms", strings.ToUpper(v), t.P99AloneMs, t.P99FloodMs))
		}
		row("B by verb "+f.name+": alone / flood", strings.Join(parts, ", "))
	}
	for _, f := range []struct {
		name string
		fl   noisyFlood
	}{{"fairness on", r.Flood}, {"fairness off", r.FloodUnfair}} {
		row("A "+f.name, fmt.Sprintf("%d LISTs (p50 %.1f ms), %d CREATEs (p50 %.1f ms), %d answered 429, %d other errors; watches %d open, %d refused, %d ended early",
			f.fl.Lists, f.fl.ListP50Ms, f.fl.Creates, f.fl.CreateP50Ms, f.fl.TooMany, f.fl.Errors, f.fl.WatchesOpen, f.fl.WatchesRefused, f.fl.WatchesEnded))
		row("shard / proxy "+f.name, fmt.Sprintf("shard RSS %s before, %s peak, ready after: %t; proxy RSS peak %s, %d goroutines",
			mib(f.fl.ShardRSSBeforeBytes), mib(f.fl.ShardRSSPeakBytes), f.fl.ShardReady, mib(f.fl.ProxyRSSPeakBytes), f.fl.ProxyGoroutines))
		row("CPU cores under the flood "+f.name, fmt.Sprintf("shard %.2f, proxy %.2f, bench (A's clients) %.2f; the machine %.2f of %d",
			f.fl.ShardCPUCores, f.fl.ProxyCPUCores, f.fl.BenchCPUCores, f.fl.MachineCPUCores, f.fl.MachineCores))
	}
}
