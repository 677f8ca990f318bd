package main

// The cache mode (--mode=cache, issue 15) starts the system with a cache
// server (pkg/system, as system.go does), creates workspaces spread over
// the shards and fills them with objects that replicate (APIResourceSchemas,
// APIExports, WorkspaceTypes, ClusterRoles granting bind on an export and
// their ClusterRoleBindings), created directly on the shard of each
// workspace, and measures: how long after the last create the cache server
// holds every replica and each shard's global informers have them, the
// cache server's memory, what the objects cost each shard in memory and
// goroutines, and the events N watchers of the cache's wildcard receive.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/rootdir"
	"github.com/shardplane/shardplane/pkg/system"
)

const (
	// cacheMarkLabel marks every object of the cache run; its replicas
	// carry it too.
	cacheMarkLabel = "bench.shardplane.dev/cache-run"
	// cacheGroup is the group of the run's APIResourceSchemas.
	cacheGroup = "cache.bench.shardplane.dev"
	// cacheCountPeriod is how often the cache's counts are read, and
	// cacheCopyPeriod how often the shards' copies of their global
	// informers are.
	cacheCountPeriod = 100 * time.Millisecond
	cacheCopyPeriod  = 250 * time.Millisecond
	// cacheConvergeTimeout bounds the wait for the replicas.
	cacheConvergeTimeout = 5 * time.Minute
	// cacheServerDir is the cache server's directory in the system's
	// (pkg/system: <dir>/cache).
	cacheServerDir = "cache"
	// globalCopyDir is where a shard keeps the copies of its global
	// informers, one JSON file per resource, <resource>.<group>.json
	// (pkg/shard globalCopies, pkg/globalinformers).
	globalCopyDir = "global"
)

// cacheMark is how the marker label reads in an object's JSON.
var cacheMark = []byte(`"` + cacheMarkLabel + `":"1"`)

// cacheKinds are the kinds the run creates, in the order a workspace gets
// them (the export of index j after its schema, the binding after its
// role). Their version on the shard is the one the cache server serves.
var cacheKinds = []schema.GroupVersionResource{
	apisv1alpha1.SchemeGroupVersion.WithResource("apiresourceschemas"),
	apisv1alpha2.SchemeGroupVersion.WithResource("apiexports"),
	tenancyv1alpha1.SchemeGroupVersion.WithResource("workspacetypes"),
	rbacv1.SchemeGroupVersion.WithResource("clusterroles"),
	rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"),
}

// cacheOptions are the flags of the cache mode.
type cacheOptions struct {
	objects    int
	workspaces int
	watchers   int
	profileDir string
}

func (c *cacheOptions) addFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.objects, "cache-objects", 10000, "replicated objects created in --mode=cache, spread over the workspaces and five kinds (schemas, exports, workspace types, cluster roles granting bind, their bindings)")
	fs.IntVar(&c.workspaces, "cache-workspaces", 200, "workspaces of --mode=cache, placed over the shards by the scheduler")
	fs.IntVar(&c.watchers, "cache-watchers", 10, "concurrent watchers of the cache server's wildcard in --mode=cache, each on its own connection (as N shards)")
	fs.StringVar(&c.profileDir, "cache-profile-dir", "", "directory for the shards' heap profiles and goroutine dumps before and after the objects, and a 30 s CPU profile of each from 10 s into the creates, in --mode=cache (empty: none)")
}

// cacheResults are the numbers of the cache mode; keys start with cache_.
type cacheResults struct {
	Shards       int            `json:"cache_shards"`
	Concurrency  int            `json:"cache_concurrency"`
	Workspaces   int            `json:"cache_workspaces"`
	Objects      int            `json:"cache_objects"`
	ObjectsKind  map[string]int `json:"cache_objects_per_kind"`
	ObjectsShard map[string]int `json:"cache_objects_per_shard"`
	// ClustersOnSeveralShards counts workspaces whose logical cluster has
	// a LogicalCluster on more than one shard (objects go to the first).
	ClustersOnSeveralShards int `json:"cache_clusters_on_several_shards"`

	CreateSeconds     float64 `json:"cache_create_seconds"`
	CreatePerSec      float64 `json:"cache_create_objects_per_sec"`
	CreateErrors      int     `json:"cache_create_errors"`
	ConvergeSeconds   float64 `json:"cache_converge_seconds"`
	ConvergeFromFirst float64 `json:"cache_converge_from_first_create_seconds"`
	// ConvergeKind is, per kind, the last create to the cache holding all.
	ConvergeKind map[string]float64 `json:"cache_converge_per_kind_seconds"`
	// InformersConverge is, per shard, the last create to the shard's copy
	// of its global informers holding every object.
	InformersConverge map[string]float64 `json:"cache_shard_informers_converge_seconds"`
	// Verified counts the marked replicas of each kind in a final LIST.
	Verified map[string]int `json:"cache_replicas_listed"`
	// Missing says what had not converged when the wait gave up.
	Missing string `json:"cache_missing,omitempty"`

	Watchers             int     `json:"cache_watchers"`
	WatchEvents          int64   `json:"cache_watch_events"`
	WatchEventsPerSec    float64 `json:"cache_watch_events_per_sec"`
	WatchEventsPerSecOne float64 `json:"cache_watch_events_per_sec_per_watcher"`
	WatchAllSeenP50      float64 `json:"cache_watch_all_seen_p50_seconds"`
	WatchAllSeenMax      float64 `json:"cache_watch_all_seen_max_seconds"`

	ServerCPUSeconds     float64 `json:"cache_server_cpu_seconds"`
	ServerRSSAnon        int64   `json:"cache_server_rss_anon_bytes"`
	ServerRSSFile        int64   `json:"cache_server_rss_file_bytes"`
	ServerRSSIdle        int64   `json:"cache_server_rss_idle_bytes"`
	ServerRSSBefore      int64   `json:"cache_server_rss_before_bytes"`
	ServerRSS            int64   `json:"cache_server_rss_bytes"`
	ServerRSSNoWatchers  int64   `json:"cache_server_rss_without_watchers_bytes"`
	ServerHeapBefore     int64   `json:"cache_server_heap_before_bytes"`
	ServerHeap           int64   `json:"cache_server_heap_bytes"`
	ServerHeapNoWatchers int64   `json:"cache_server_heap_without_watchers_bytes"`
	ServerGoroutinesPre  int     `json:"cache_server_goroutines_before"`
	ServerGoroutines     int     `json:"cache_server_goroutines"`
	ServerGoroutinesPost int     `json:"cache_server_goroutines_without_watchers"`

	Shard map[string]*cacheShard `json:"cache_shard"`
}

// cacheShard is one shard: memory (after a forced GC) and goroutines at
// three points, idle, with the workspaces, with the objects replicated;
// and, from the first create to the end of the wait, its CPU time and its
// replication and labeler work queues.
type cacheShard struct {
	OwnObjects           int     `json:"own_objects"`
	Workspaces           int     `json:"workspaces"`
	RSSIdle              int64   `json:"rss_idle_bytes"`
	HeapIdle             int64   `json:"heap_idle_bytes"`
	RSSWorkspaces        int64   `json:"rss_workspaces_bytes"`
	HeapWorkspaces       int64   `json:"heap_workspaces_bytes"`
	RSSObjects           int64   `json:"rss_objects_bytes"`
	HeapObjects          int64   `json:"heap_objects_bytes"`
	GoroutinesIdle       int     `json:"goroutines_idle"`
	GoroutinesWorkspaces int     `json:"goroutines_workspaces"`
	GoroutinesObjects    int     `json:"goroutines_objects"`
	GoroutinesPerWS      float64 `json:"goroutines_per_workspace_from_objects"`

	CPUSeconds            float64 `json:"cpu_seconds"`
	Replications          int     `json:"replication_reconciles"`
	ReplicationQueuedMs   float64 `json:"replication_queue_wait_mean_ms"`
	ReplicationWorkMs     float64 `json:"replication_work_mean_ms"`
	Labelings             int     `json:"labeler_reconciles"`
	LabelerQueuedMs       float64 `json:"labeler_queue_wait_mean_ms"`
	LabelerWorkMs         float64 `json:"labeler_work_mean_ms"`
	ReplicationQueueDepth int     `json:"replication_queue_depth_max"`
}

// cacheRun holds the started system, its clients and the placement of the
// workspaces.
type cacheRun struct {
	*systemRun
	o cacheOptions
	// targets are the shards under test, by name.
	targets map[string]*target
	names   []string
	// cache reaches the cache server's wildcard as its admin
	// (system:masters); cacheHTTP is its HTTP client.
	cache     *rest.Config
	cacheHTTP *http.Client
	cacheDyn  dynamic.Interface
	// clusters are the workspaces' logical clusters with their shard.
	clusters []cacheCluster
}

type cacheCluster struct {
	name  logicalcluster.Name
	shard string
}

func runCache(ctx context.Context, o options) (results, error) {
	cr := &cacheResults{Shards: o.system.shards, Concurrency: o.concurrency, Workspaces: o.cache.workspaces, Objects: o.cache.objects, Watchers: o.cache.watchers}
	r := results{cacheResults: cr}
	step := func(s string) { fmt.Fprintf(os.Stderr, "bench: %s\n", s) }
	if o.cache.workspaces < 1 || o.cache.objects < o.cache.workspaces {
		return r, fmt.Errorf("--cache-objects (%d) must be at least --cache-workspaces (%d), which must be positive", o.cache.objects, o.cache.workspaces)
	}
	cacheBinary := o.system.cacheServerBinary
	if cacheBinary == "" {
		cacheBinary = "bin/cache-server"
	}

	dir, err := os.MkdirTemp("", "shardplane-bench-cache-")
	if err != nil {
		return r, err
	}
	if o.system.keepDir {
		step("system directory " + dir)
	} else {
		defer os.RemoveAll(dir)
	}
	step(fmt.Sprintf("starting the cache server, %d shards and the front-proxy", o.system.shards))
	sys, err := system.Start(ctx, system.Options{Dir: dir, Shards: o.system.shards, FrontProxies: 1,
		ShardBinary: o.shardBinary, FrontProxyBinary: o.system.frontProxyBinary, CacheServerBinary: cacheBinary})
	if err != nil {
		return r, err
	}
	defer sys.Stop()

	c := &cacheRun{systemRun: &systemRun{sys: sys, dir: dir, shards: o.system.shards}, o: o.cache, targets: map[string]*target{}}
	if c.proxy, err = contextConfig(filepath.Join(dir, system.AdminKubeconfigFile), "base"); err != nil {
		return r, err
	}
	if c.masters, err = contextConfig(filepath.Join(dir, "system-admin.kubeconfig"), ""); err != nil {
		return r, err
	}
	if err := c.connect(); err != nil {
		return r, err
	}
	b, err := newBench(&target{admin: c.proxy, masters: c.masters}, o.concurrency)
	if err != nil {
		return r, err
	}
	defer b.stopWatch()

	time.Sleep(2 * time.Second)
	cr.Shard = map[string]*cacheShard{}
	for _, name := range c.names {
		m := &cacheShard{}
		m.RSSIdle, m.HeapIdle = c.targets[name].memory()
		m.GoroutinesIdle = c.targets[name].gauge("go_goroutines")
		cr.Shard[name] = m
	}
	cr.ServerRSSIdle, _, _ = c.serverMemory()

	step(fmt.Sprintf("creating %d workspaces through the front-proxy", o.cache.workspaces))
	clusters, err := b.readyWorkspaces(ctx, b.names("cache", o.cache.workspaces))
	if err != nil {
		return r, err
	}
	if err := c.place(ctx, cr, clusters); err != nil {
		return r, err
	}
	items := c.items(cr)

	time.Sleep(settle)
	for _, name := range c.names {
		m := cr.Shard[name]
		m.RSSWorkspaces, m.HeapWorkspaces = c.targets[name].memory()
		m.GoroutinesWorkspaces = c.targets[name].gauge("go_goroutines")
		c.profile(name, "before")
	}
	cr.ServerRSSBefore, cr.ServerHeapBefore, cr.ServerGoroutinesPre = c.serverMemory()

	baseline, rv, err := c.counts(ctx)
	if err != nil {
		return r, err
	}
	watchers, err := c.watch(ctx, rv, cr)
	if err != nil {
		return r, err
	}

	step(fmt.Sprintf("creating %d objects on the shards of their workspaces, watched by %d watchers of the cache", len(items), o.cache.watchers))
	queues := c.markQueues()
	depth := c.followDepth(ctx, cr)
	converge := c.awaitConvergence(ctx, cr, baseline)
	first := time.Now()
	converge.start(first)
	cpuProfiles := c.cpuProfiles(ctx)
	defer cpuProfiles()
	created, err := c.create(ctx, items, o.concurrency)
	last := time.Now()
	cr.CreateSeconds = last.Sub(first).Seconds()
	cr.CreatePerSec = float64(created) / cr.CreateSeconds
	cr.CreateErrors = len(items) - created
	if err != nil {
		converge.stop()
		watchers.stop()
		return r, err
	}
	step(fmt.Sprintf("waiting for the cache server, the shards' global informers and %d watchers to have every replica", o.cache.watchers))
	converge.wait(cr, first, last)
	watchers.wait(cr, first, last)
	depth()
	queues(cr)

	time.Sleep(settle)
	cr.ServerRSS, cr.ServerHeap, cr.ServerGoroutines = c.serverMemory()
	cr.ServerRSSAnon, cr.ServerRSSFile = rssParts(pidOf(filepath.Join(c.dir, cacheServerDir+".pid")))
	for _, name := range c.names {
		m := cr.Shard[name]
		m.RSSObjects, m.HeapObjects = c.targets[name].memory()
		m.GoroutinesObjects = c.targets[name].gauge("go_goroutines")
		m.GoroutinesPerWS = float64(m.GoroutinesObjects-m.GoroutinesWorkspaces) / float64(max(1, m.Workspaces))
		c.profile(name, "after")
	}
	watchers.stop()
	time.Sleep(settle)
	cr.ServerRSSNoWatchers, cr.ServerHeapNoWatchers, cr.ServerGoroutinesPost = c.serverMemory()

	step("listing the marked replicas")
	cr.Verified = map[string]int{}
	for _, gvr := range cacheKinds {
		list, err := c.cacheDyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: cacheMarkLabel + "=1"})
		if err != nil {
			return r, fmt.Errorf("list %s on the cache server: %w", gvr.Resource, err)
		}
		cr.Verified[gvr.Resource] = len(list.Items)
	}
	return r, nil
}

// connect builds the clients of the shards (system:masters on each) and of
// the cache server (its admin, at the wildcard of shards and clusters).
func (c *cacheRun) connect() error {
	for i := 0; i < c.systemRun.shards; i++ {
		name := system.ShardName(i)
		cfg := c.shardConfig(name)
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return err
		}
		pid := pidOf(filepath.Join(c.dir, name+".pid"))
		c.targets[name] = &target{masters: cfg, pid: pid, http: hc, stop: func() {}}
		c.names = append(c.names, name)
	}
	cfg, err := contextConfig(filepath.Join(c.dir, cacheServerDir, rootdir.AdminKubeconfigFile), "")
	if err != nil {
		return err
	}
	c.cache = rest.CopyConfig(cfg)
	c.cache.Host = cacheclient.URL(cfg.Host, cacheclient.WildcardShard, logicalcluster.Wildcard)
	if c.cacheHTTP, err = rest.HTTPClientFor(cfg); err != nil {
		return err
	}
	c.cacheDyn, err = dynamic.NewForConfigAndClient(c.cache, c.cacheHTTP)
	return err
}

// rssParts returns the anonymous and the file-backed part of a process's
// resident set (RssAnon, RssFile of /proc/<pid>/status), -1 when unknown.
func rssParts(pid int) (anon, file int64) {
	anon, file = -1, -1
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return anon, file
	}
	for _, line := range strings.Split(string(data), "\n") {
		var kb int64
		if _, err := fmt.Sscanf(line, "RssAnon: %d kB", &kb); err == nil {
			anon = kb * 1024
		} else if _, err := fmt.Sscanf(line, "RssFile: %d kB", &kb); err == nil {
			file = kb * 1024
		}
	}
	return anon, file
}

// markQueues reads the CPU time of the cache server and the shards and the
// shards' replication and labeler work queue histograms; the function it
// returns fills the results with what happened since.
func (c *cacheRun) markQueues() func(cr *cacheResults) {
	type marks struct {
		cpu                                time.Duration
		repWait, repWork, labWait, labWork histogramMark
	}
	serverCPU := pidCPU(filepath.Join(c.dir, cacheServerDir+".pid"))
	before := map[string]marks{}
	for _, name := range c.names {
		t := c.targets[name]
		before[name] = marks{
			cpu:     pidCPU(filepath.Join(c.dir, name+".pid")),
			repWait: t.mark(workqueueWait, replicationQueue), repWork: t.mark(workqueueWork, replicationQueue),
			labWait: t.mark(workqueueWait, labelerQueue), labWork: t.mark(workqueueWork, labelerQueue),
		}
	}
	return func(cr *cacheResults) {
		cr.ServerCPUSeconds = (pidCPU(filepath.Join(c.dir, cacheServerDir+".pid")) - serverCPU).Seconds()
		for _, name := range c.names {
			t, m, s := c.targets[name], before[name], cr.Shard[name]
			s.CPUSeconds = (pidCPU(filepath.Join(c.dir, name+".pid")) - m.cpu).Seconds()
			s.ReplicationQueuedMs, _ = t.meanMsSince(m.repWait)
			s.ReplicationWorkMs, s.Replications = t.meanMsSince(m.repWork)
			s.LabelerQueuedMs, _ = t.meanMsSince(m.labWait)
			s.LabelerWorkMs, s.Labelings = t.meanMsSince(m.labWork)
		}
	}
}

// followDepth reads the shards' replication queue depth every second
// until the function it returns is called, keeping the largest.
func (c *cacheRun) followDepth(ctx context.Context, cr *cacheResults) func() {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, name := range c.names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sleepCtx(ctx, time.Second) {
				if d := c.targets[name].labelled("workqueue_depth", replicationQueue); d > cr.Shard[name].ReplicationQueueDepth {
					cr.Shard[name].ReplicationQueueDepth = d
				}
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}

// labelled returns the value of the first series of a metric whose labels
// contain labels, or -1.
func (t *target) labelled(name string, labels map[string]string) int {
	m, err := t.metrics()
	if err != nil {
		return -1
	}
	return int(valueOr(m, name, labels))
}

// pidOf reads a PID file, 0 when it cannot.
func pidOf(file string) int {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	var pid int
	_, _ = fmt.Sscanf(strings.TrimSpace(string(data)), "%d", &pid)
	return pid
}

// serverMemory reads the cache server's RSS (/proc) and its Go heap in use
// and goroutines (its /metrics). The cache server offers no forced GC and
// no /debug/pprof: its heap readings include garbage.
func (c *cacheRun) serverMemory() (rss, heap int64, goroutines int) {
	rss = pidRSS(filepath.Join(c.dir, cacheServerDir+".pid"))
	t := &target{masters: &rest.Config{Host: c.sys.CacheURL()}, http: c.cacheHTTP}
	heap, goroutines = int64(t.gauge("go_memstats_heap_inuse_bytes")), t.gauge("go_goroutines")
	return rss, heap, goroutines
}

// profile saves a shard's heap profile and goroutine dump to the profile
// directory, if one was asked for.
func (c *cacheRun) profile(shard, when string) {
	if c.o.profileDir == "" {
		return
	}
	_ = os.MkdirAll(c.o.profileDir, 0o755)
	for file, path := range map[string]string{
		shard + "-heap-" + when + ".pprof":     "/debug/pprof/heap",
		shard + "-goroutines-" + when + ".txt": "/debug/pprof/goroutine?debug=1",
	} {
		data, err := c.targets[shard].get(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s of %s: %v\n", path, shard, err)
			continue
		}
		_ = os.WriteFile(filepath.Join(c.o.profileDir, file), []byte(data), 0o644)
	}
}

// cpuProfiles takes a CPU profile of every shard from 10 s to 40 s after
// it is called, when a profile directory was asked for; the function it
// returns waits for them.
func (c *cacheRun) cpuProfiles(ctx context.Context) func() {
	var wg sync.WaitGroup
	if c.o.profileDir == "" {
		return wg.Wait
	}
	for _, name := range c.names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !sleepCtx(ctx, 10*time.Second) {
				return
			}
			data, err := c.targets[name].get("/debug/pprof/profile?seconds=30")
			if err != nil {
				fmt.Fprintf(os.Stderr, "bench: CPU profile of %s: %v\n", name, err)
				return
			}
			_ = os.WriteFile(filepath.Join(c.o.profileDir, name+"-cpu.pprof"), []byte(data), 0o644)
		}()
	}
	return wg.Wait
}

// place finds the shard of every workspace's logical cluster.
func (c *cacheRun) place(ctx context.Context, cr *cacheResults, clusters []logicalcluster.Name) error {
	p, err := c.placements(ctx)
	if err != nil {
		return err
	}
	for _, cl := range clusters {
		hosts := p.hosts[cl]
		if len(hosts) == 0 {
			return fmt.Errorf("logical cluster %s is on no shard", cl)
		}
		if len(hosts) > 1 {
			cr.ClustersOnSeveralShards++
		}
		c.clusters = append(c.clusters, cacheCluster{name: cl, shard: hosts[0]})
		cr.Shard[hosts[0]].Workspaces++
	}
	return nil
}

// cacheItem is one object to create.
type cacheItem struct {
	cluster cacheCluster
	kind    int // index in cacheKinds
	obj     *unstructured.Unstructured
}

// items spreads the objects over the workspaces (the first ones get one
// more when they do not divide) and, within a workspace, over the kinds in
// turn; they are ordered index by index across all workspaces, so that an
// export comes long after its schema and a binding after its role.
func (c *cacheRun) items(cr *cacheResults) []cacheItem {
	per := make([]int, len(c.clusters))
	for i := 0; i < c.o.objects; i++ {
		per[i%len(per)]++
	}
	cr.ObjectsKind, cr.ObjectsShard = map[string]int{}, map[string]int{}
	var out []cacheItem
	for i := 0; i < per[0]; i++ {
		for w, cl := range c.clusters {
			if i >= per[w] {
				continue
			}
			kind := i % len(cacheKinds)
			out = append(out, cacheItem{cluster: cl, kind: kind, obj: cacheObject(kind, i/len(cacheKinds))})
			cr.ObjectsKind[cacheKinds[kind].Resource]++
			cr.ObjectsShard[cl.shard]++
			cr.Shard[cl.shard].OwnObjects++
		}
	}
	return out
}

// cacheObject returns the j-th object of a kind in a workspace.
func cacheObject(kind, j int) *unstructured.Unstructured {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Labels: map[string]string{cacheMarkLabel: "1"}}
	}
	plural := fmt.Sprintf("widget%ds", j)
	export := fmt.Sprintf("export-%d", j)
	role := fmt.Sprintf("bind-export-%d", j)
	var obj runtime.Object
	switch kind {
	case 0:
		obj = &apisv1alpha1.APIResourceSchema{
			TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIResourceSchema"},
			ObjectMeta: meta("v1." + plural + "." + cacheGroup),
			Spec: apisv1alpha1.APIResourceSchemaSpec{
				Group: cacheGroup,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: fmt.Sprintf("widget%d", j), Kind: fmt.Sprintf("Widget%d", j), ListKind: fmt.Sprintf("Widget%dList", j)},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apisv1alpha1.APIResourceVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: runtime.RawExtension{Raw: []byte(`{"type":"object","properties":{"spec":{"type":"object","properties":{"size":{"type":"string"}}}}}`)},
				}},
			},
		}
	case 1:
		obj = &apisv1alpha2.APIExport{
			TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
			ObjectMeta: meta(export),
			Spec: apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{
				Name: plural, Group: cacheGroup, Schema: "v1." + plural + "." + cacheGroup,
			}}},
		}
	case 2:
		obj = &tenancyv1alpha1.WorkspaceType{
			TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "WorkspaceType"},
			ObjectMeta: meta(fmt.Sprintf("type-%d", j)),
		}
	case 3:
		obj = &rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: meta(role),
			Rules: []rbacv1.PolicyRule{{
				APIGroups: []string{apisv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"apiexports"},
				ResourceNames: []string{export}, Verbs: []string{"bind"},
			}},
		}
	default:
		obj = &rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
			ObjectMeta: meta(role),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: fmt.Sprintf("consumer-%d", j)}},
		}
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		panic(fmt.Sprintf("convert %T: %v", obj, err))
	}
	return &unstructured.Unstructured{Object: content}
}

// create creates the items on the shards of their workspaces at
// concurrency clients and returns how many it created.
func (c *cacheRun) create(ctx context.Context, items []cacheItem, concurrency int) (int, error) {
	clients := map[cacheCluster]dynamic.Interface{}
	for _, cl := range c.clusters {
		t := c.targets[cl.shard]
		d, err := dynamic.NewForConfigAndClient(kcpclient.ClusterConfig(t.masters, cl.name), t.http)
		if err != nil {
			return 0, err
		}
		clients[cl] = d
	}
	ch := make(chan cacheItem, len(items))
	for _, it := range items {
		ch <- it
	}
	close(ch)
	var created atomic.Int64
	err := parallel(ctx, concurrency, ch, func(it cacheItem) error {
		gvr := cacheKinds[it.kind]
		if _, err := clients[it.cluster].Resource(gvr).Create(ctx, it.obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create %s %s in %s on %s: %w", gvr.Resource, it.obj.GetName(), it.cluster.name, it.cluster.shard, err)
		}
		created.Add(1)
		return nil
	})
	return int(created.Load()), err
}

// counts returns how many replicas of each kind the cache server holds, and
// the resource version of each count. A LIST with limit 1 carries the
// number of the others (remainingItemCount), so counting costs the cache
// server one object per kind.
func (c *cacheRun) counts(ctx context.Context) (map[string]int, map[string]string, error) {
	n, rv := map[string]int{}, map[string]string{}
	for _, gvr := range cacheKinds {
		list, err := c.cacheDyn.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return nil, nil, fmt.Errorf("count %s on the cache server: %w", gvr.Resource, err)
		}
		n[gvr.Resource] = len(list.Items)
		if more := list.GetRemainingItemCount(); more != nil {
			n[gvr.Resource] += int(*more)
		}
		rv[gvr.Resource] = list.GetResourceVersion()
	}
	return n, rv, nil
}

// convergence follows the cache server's counts and the shards' copies of
// their global informers from the first create on.
type convergence struct {
	c        *cacheRun
	ctx      context.Context
	cancel   context.CancelFunc
	expected map[string]int
	baseline map[string]int
	done     sync.WaitGroup
	mu       sync.Mutex
	// cacheAt is when the cache first held all of a kind; informersAt
	// when a shard's copies first held every object.
	cacheAt     map[string]time.Time
	informersAt map[string]time.Time
	missing     []string
}

func (c *cacheRun) awaitConvergence(ctx context.Context, cr *cacheResults, baseline map[string]int) *convergence {
	ctx, cancel := context.WithCancel(ctx)
	return &convergence{c: c, ctx: ctx, cancel: cancel, expected: cr.ObjectsKind, baseline: baseline,
		cacheAt: map[string]time.Time{}, informersAt: map[string]time.Time{}}
}

// start polls the cache server's counts every cacheCountPeriod and every
// shard's copies every cacheCopyPeriod until they hold every object.
func (v *convergence) start(from time.Time) {
	v.done.Add(1 + len(v.c.names))
	go func() {
		defer v.done.Done()
		var last map[string]int
		for {
			n, _, err := v.c.counts(v.ctx)
			now := time.Now()
			if err == nil {
				last = n
				v.mu.Lock()
				for kind, want := range v.expected {
					if _, ok := v.cacheAt[kind]; !ok && n[kind]-v.baseline[kind] >= want {
						v.cacheAt[kind] = now
					}
				}
				all := len(v.cacheAt) == len(v.expected)
				v.mu.Unlock()
				if all {
					return
				}
			}
			if !sleepCtx(v.ctx, cacheCountPeriod) {
				v.mu.Lock()
				for kind, want := range v.expected {
					if _, ok := v.cacheAt[kind]; !ok {
						v.missing = append(v.missing, fmt.Sprintf("cache: %d of %d %s", last[kind]-v.baseline[kind], want, kind))
					}
				}
				v.mu.Unlock()
				return
			}
		}
	}()
	total := 0
	for _, n := range v.expected {
		total += n
	}
	for _, name := range v.c.names {
		go func() {
			defer v.done.Done()
			copies := newCopyCounter(filepath.Join(v.c.dir, name, globalCopyDir))
			for {
				n := copies.count()
				if n >= total {
					v.mu.Lock()
					v.informersAt[name] = time.Now()
					v.mu.Unlock()
					return
				}
				if !sleepCtx(v.ctx, cacheCopyPeriod) {
					v.mu.Lock()
					v.missing = append(v.missing, fmt.Sprintf("shard %s's global informers: %d of %d", name, n, total))
					v.mu.Unlock()
					return
				}
			}
		}()
	}
}

// wait waits until every poll is done, at most cacheConvergeTimeout, and
// fills the results: times are from the last create (first to last create
// for ConvergeFromFirst).
func (v *convergence) wait(cr *cacheResults, first, last time.Time) {
	timeout := time.AfterFunc(cacheConvergeTimeout, v.cancel)
	v.done.Wait()
	timeout.Stop()
	v.cancel()
	cr.ConvergeKind, cr.InformersConverge = map[string]float64{}, map[string]float64{}
	var all time.Time
	for kind, at := range v.cacheAt {
		cr.ConvergeKind[kind] = max(0, at.Sub(last).Seconds())
		if at.After(all) {
			all = at
		}
	}
	if len(v.cacheAt) == len(v.expected) {
		cr.ConvergeSeconds = max(0, all.Sub(last).Seconds())
		cr.ConvergeFromFirst = all.Sub(first).Seconds()
	} else {
		cr.ConvergeSeconds, cr.ConvergeFromFirst = -1, -1
	}
	for name, at := range v.informersAt {
		cr.InformersConverge[name] = max(0, at.Sub(last).Seconds())
	}
	sort.Strings(v.missing)
	cr.Missing = strings.Join(v.missing, "; ")
}

func (v *convergence) stop() { v.cancel(); v.done.Wait() }

// sleepCtx sleeps d and tells whether ctx is still alive.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// copyCounter counts the marked objects in a shard's copies of its global
// informers: what each informer held at its last write (a copy is written
// after every change, changes during a write coalesced into the next one,
// so it trails the informer by at most one write). A file is read again
// only when its size or time changed.
type copyCounter struct {
	dir   string
	files map[string]copyFile
}

type copyFile struct {
	size  int64
	mtime time.Time
	marks int
}

func newCopyCounter(dir string) *copyCounter {
	return &copyCounter{dir: dir, files: map[string]copyFile{}}
}

func (cc *copyCounter) count() int {
	n := 0
	for _, gvr := range cacheKinds {
		file := filepath.Join(cc.dir, gvr.Resource+"."+gvr.Group+".json")
		st, err := os.Stat(file)
		if err != nil {
			continue
		}
		f := cc.files[file]
		if st.Size() != f.size || !st.ModTime().Equal(f.mtime) {
			data, err := os.ReadFile(file)
			if err != nil {
				continue
			}
			f = copyFile{size: st.Size(), mtime: st.ModTime(), marks: bytes.Count(data, cacheMark)}
			cc.files[file] = f
		}
		n += f.marks
	}
	return n
}

// cacheWatchers are N watchers of the cache server's wildcard, each with
// its own connection and one watch per kind.
type cacheWatchers struct {
	cancel   context.CancelFunc
	watchers []*cacheWatcher
	expected int
	done     sync.WaitGroup
}

// cacheWatcher counts the events one watcher receives.
type cacheWatcher struct {
	mu     sync.Mutex
	events int64
	marked int // ADDED events of marked objects
	lastAt time.Time
	allAt  time.Time
}

// watch starts the watchers from the resource versions of the counts.
func (c *cacheRun) watch(ctx context.Context, rv map[string]string, cr *cacheResults) (*cacheWatchers, error) {
	ctx, cancel := context.WithCancel(ctx)
	ws := &cacheWatchers{cancel: cancel}
	for _, n := range cr.ObjectsKind {
		ws.expected += n
	}
	for i := 0; i < c.o.watchers; i++ {
		cfg := rest.CopyConfig(c.cache)
		// A dialer of its own gives the watcher a transport, and so a
		// connection, of its own, as each shard has.
		cfg.Dial = (&net.Dialer{}).DialContext
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			cancel()
			return nil, err
		}
		w := &cacheWatcher{}
		ws.watchers = append(ws.watchers, w)
		for _, gvr := range cacheKinds {
			// Every replicated kind has a group: /apis/<group>/<version>.
			url := fmt.Sprintf("%s/apis/%s/%s/%s?watch=true&resourceVersion=%s", strings.TrimSuffix(cfg.Host, "/"), gvr.Group, gvr.Version, gvr.Resource, rv[gvr.Resource])
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				cancel()
				return nil, err
			}
			resp, err := hc.Do(req)
			if err != nil {
				cancel()
				return nil, fmt.Errorf("watch %s on the cache server: %w", gvr.Resource, err)
			}
			if resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				cancel()
				return nil, fmt.Errorf("watch %s on the cache server: %s", gvr.Resource, resp.Status)
			}
			ws.done.Add(1)
			go func() {
				defer ws.done.Done()
				defer resp.Body.Close()
				w.receive(json.NewDecoder(resp.Body), ws.expected)
			}()
		}
	}
	return ws, nil
}

// receive counts the events of one watch stream until it ends.
func (w *cacheWatcher) receive(d *json.Decoder, expected int) {
	for {
		var e struct {
			Type   string `json:"type"`
			Object struct {
				Metadata struct {
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
			} `json:"object"`
		}
		if err := d.Decode(&e); err != nil {
			return
		}
		now := time.Now()
		w.mu.Lock()
		w.events++
		w.lastAt = now
		if e.Type == "ADDED" && e.Object.Metadata.Labels[cacheMarkLabel] == "1" {
			w.marked++
			if w.marked == expected {
				w.allAt = now
			}
		}
		w.mu.Unlock()
	}
}

// wait waits until every watcher has seen every object (or the timeout)
// and fills the results: all-seen times are from the last create; events
// per second are over first create to the last event.
func (ws *cacheWatchers) wait(cr *cacheResults, first, last time.Time) {
	deadline := time.Now().Add(cacheConvergeTimeout)
	for time.Now().Before(deadline) {
		done := true
		for _, w := range ws.watchers {
			w.mu.Lock()
			done = done && !w.allAt.IsZero()
			w.mu.Unlock()
		}
		if done {
			break
		}
		time.Sleep(cacheCountPeriod)
	}
	// Updates after the last ADDED (an export's identity, a label) still
	// count as delivered events.
	time.Sleep(time.Second)
	var seen []time.Duration
	var lastEvent time.Time
	var perWatcher float64
	missing := []string{}
	if cr.Missing != "" {
		missing = append(missing, cr.Missing)
	}
	for i, w := range ws.watchers {
		w.mu.Lock()
		cr.WatchEvents += w.events
		if w.allAt.IsZero() {
			missing = append(missing, fmt.Sprintf("watcher %d saw %d of %d", i, w.marked, ws.expected))
		} else {
			seen = append(seen, max(0, w.allAt.Sub(last)))
		}
		if w.lastAt.After(lastEvent) {
			lastEvent = w.lastAt
		}
		if w.lastAt.After(first) {
			perWatcher += float64(w.events) / w.lastAt.Sub(first).Seconds()
		}
		w.mu.Unlock()
	}
	cr.Missing = strings.Join(missing, "; ")
	if lastEvent.After(first) {
		cr.WatchEventsPerSec = float64(cr.WatchEvents) / lastEvent.Sub(first).Seconds()
	}
	if n := len(ws.watchers); n > 0 {
		cr.WatchEventsPerSecOne = perWatcher / float64(n)
	}
	cr.WatchAllSeenP50, cr.WatchAllSeenMax = percentile(seen, 50)/1000, percentile(seen, 100)/1000
}

func (ws *cacheWatchers) stop() { ws.cancel(); ws.done.Wait() }

// print writes the cache mode's table rows.
func (cr *cacheResults) print(tw *tabwriter.Writer) {
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	row("shards / workspaces / concurrency", fmt.Sprintf("%d / %d / %d (%d workspaces with a LogicalCluster on several shards)", cr.Shards, cr.Workspaces, cr.Concurrency, cr.ClustersOnSeveralShards))
	row("objects", fmt.Sprintf("%d: per kind %v, per shard %v", cr.Objects, cr.ObjectsKind, cr.ObjectsShard))
	row("create on the shards", fmt.Sprintf("%.1f s, %.0f objects/s", cr.CreateSeconds, cr.CreatePerSec))
	row("cache holds every replica", fmt.Sprintf("%.2f s after the last create (%.1f s after the first); per kind %v", cr.ConvergeSeconds, cr.ConvergeFromFirst, roundMap(cr.ConvergeKind)))
	row("shards' global informers have them", fmt.Sprintf("%v s after the last create (their copies on disk)", roundMap(cr.InformersConverge)))
	row("replicas listed at the end", fmt.Sprintf("%v", cr.Verified))
	if cr.Missing != "" {
		row("NOT converged", cr.Missing)
	}
	row(fmt.Sprintf("%d watchers of the cache's wildcard", cr.Watchers), fmt.Sprintf("%d events, %.0f events/s in all, %.0f per watcher; all seen p50 %.2f s, max %.2f s after the last create",
		cr.WatchEvents, cr.WatchEventsPerSec, cr.WatchEventsPerSecOne, cr.WatchAllSeenP50, cr.WatchAllSeenMax))
	row("cache server RSS", fmt.Sprintf("idle %s, before the objects %s, with them %s (anon %s, file %s), watchers closed %s", mib(cr.ServerRSSIdle), mib(cr.ServerRSSBefore), mib(cr.ServerRSS), mib(cr.ServerRSSAnon), mib(cr.ServerRSSFile), mib(cr.ServerRSSNoWatchers)))
	row("cache server heap (no forced GC)", fmt.Sprintf("before %s, with the objects %s, watchers closed %s", mib(cr.ServerHeapBefore), mib(cr.ServerHeap), mib(cr.ServerHeapNoWatchers)))
	row("cache server goroutines", fmt.Sprintf("%d before, %d with watchers, %d without", cr.ServerGoroutinesPre, cr.ServerGoroutines, cr.ServerGoroutinesPost))
	row("CPU, first create to converged", fmt.Sprintf("cache server %.1f s", cr.ServerCPUSeconds))
	names := make([]string, 0, len(cr.Shard))
	for n := range cr.Shard {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		m := cr.Shard[n]
		row("shard "+n+" memory", fmt.Sprintf("RSS %s idle, %s with %d workspaces, %s with the objects (+%s); heap %s, %s, %s (+%s); %d own objects",
			mib(m.RSSIdle), mib(m.RSSWorkspaces), m.Workspaces, mib(m.RSSObjects), mib(m.RSSObjects-m.RSSWorkspaces),
			mib(m.HeapIdle), mib(m.HeapWorkspaces), mib(m.HeapObjects), mib(m.HeapObjects-m.HeapWorkspaces), m.OwnObjects))
		row("shard "+n+" goroutines", fmt.Sprintf("%d idle, %d with the workspaces, %d with the objects (%.3f per workspace from the objects)",
			m.GoroutinesIdle, m.GoroutinesWorkspaces, m.GoroutinesObjects, m.GoroutinesPerWS))
		row("shard "+n+" work", fmt.Sprintf("CPU %.1f s; replication %d reconciles, %.1f ms queued, %.1f ms working (mean), depth up to %d; labeler %d, %.1f ms queued, %.1f ms working",
			m.CPUSeconds, m.Replications, m.ReplicationQueuedMs, m.ReplicationWorkMs, m.ReplicationQueueDepth, m.Labelings, m.LabelerQueuedMs, m.LabelerWorkMs))
	}
}

// roundMap rounds durations in seconds to 10 ms for printing.
func roundMap(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = float64(int64(v*100+0.5)) / 100
	}
	return out
}
