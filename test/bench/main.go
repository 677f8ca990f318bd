// Command bench measures a shard: start-up, workspaces per second (flat and
// as a tree), memory per workspace, metric series, request latency,
// APIBindings (one export bound in many workspaces), reads (GETs spread over
// 5,000 workspaces, parallel GETs, wildcard LISTs of 10,000 and 50,000
// configmaps; reads.go), CRD serving (crds.go), deletion, and memory after
// deletion and over create-delete cycles (churn.go). It prints a table and
// one JSON line. It starts its own shard unless --kubeconfig points at a
// running one. With --mode=system it starts
// the root shard, more shards and the front-proxy instead and measures what
// the proxy adds (system.go); with --mode=cache it starts them with a
// cache server and measures replication (cache.go); with --mode=noisy it
// starts one shard and the front-proxy and measures one tenant's latency
// while another floods the shard (noisy.go); with --mode=moves, drain or
// scale it moves workspaces between shards (moves.go).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

type options struct {
	workspaces   int
	concurrency  int
	kubeconfig   string
	shardBinary  string
	treeFanout   int
	treeDepth    int
	memoryPoints string
	requests     int
	// bindings is the number of workspaces that bind one export; 0 skips
	// the bindings run.
	bindings          int
	objectsPerBinding int
	// mode is shard (one shard), system (shards and the front-proxy,
	// system.go), cache (replication through a cache server, cache.go) or
	// virtual (the APIExport view, virtual.go) or noisy (two tenants, one
	// flooding, noisy.go).
	mode string

	// getWorkspaces is the workspace count at which GETs spread over all
	// workspaces are timed (0 skips them).
	getWorkspaces       int
	parallelGetWorkers  int
	parallelGetDuration time.Duration
	listSizes           string
	listRepeats         int
	deleteWorkspaces    int
	crdWorkspaces       int
	crdIdleWait         time.Duration
	memoryReturnWait    time.Duration
	churnCycles         int
	churnWorkspaces     int
	churnSettle         time.Duration

	system  systemOptions
	cache   cacheOptions
	virtual virtualOptions
	noisy   noisyOptions
	moves   movesOptions
}

func main() {
	if runBareProxyFromEnv() || runVictimFromEnv() {
		return
	}
	var o options
	flag.IntVar(&o.workspaces, "workspaces", 1000, "number of workspaces for the flat and the tree run")
	flag.IntVar(&o.concurrency, "concurrency", 20, "concurrent clients")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "admin.kubeconfig of a running shard (default: start one)")
	flag.StringVar(&o.shardBinary, "shard-binary", "bin/shard", "shard binary to start when --kubeconfig is empty")
	flag.IntVar(&o.treeFanout, "tree-fanout", 6, "children per workspace in the tree run")
	flag.IntVar(&o.treeDepth, "tree-depth", 4, "depth of the tree run")
	flag.StringVar(&o.memoryPoints, "memory-points", "1000,5000", "idle workspace counts at which memory is measured")
	flag.IntVar(&o.requests, "requests", 2000, "configmap GETs and CREATEs for the latency run")
	flag.IntVar(&o.bindings, "bindings", 1000, "workspaces that bind one APIExport in the bindings run (0 skips it)")
	flag.IntVar(&o.objectsPerBinding, "objects-per-binding", 10, "objects of the bound resource created in each binding workspace")
	flag.IntVar(&o.getWorkspaces, "get-workspaces", 5000, "time --requests configmap GETs spread over all workspaces at the first --memory-points value with at least this many workspaces (0 skips)")
	flag.IntVar(&o.parallelGetWorkers, "parallel-get-workers", 10, "workers of the parallel GET run, each GETting its own configmap in its own workspace (0 skips)")
	flag.DurationVar(&o.parallelGetDuration, "parallel-get-duration", 10*time.Second, "duration of the parallel GET run")
	flag.StringVar(&o.listSizes, "list-sizes", "10000,50000", "configmap counts (all workspaces) at which wildcard LISTs are timed; empty skips")
	flag.IntVar(&o.listRepeats, "list-repeats", 5, "wildcard LISTs timed at each --list-sizes value (median and min reported)")
	flag.IntVar(&o.deleteWorkspaces, "delete-workspaces", 1000, "workspaces created and then deleted, timed from the first delete until all are gone (0 skips)")
	flag.IntVar(&o.crdWorkspaces, "crd-workspaces", 1000, "workspaces each with its own CRD for the CRD serving run (0 skips)")
	flag.DurationVar(&o.crdIdleWait, "crd-idle-wait", 0, "in the CRD run, wait this long after the first requests and read goroutines and heap again before deleting the CRDs (0 skips)")
	flag.DurationVar(&o.memoryReturnWait, "memory-return-wait", time.Minute, "after deleting all workspaces, read memory again this long after (0 skips)")
	flag.IntVar(&o.churnCycles, "churn-cycles", 5, "create-delete cycles after deleting all workspaces, memory read after each (0 skips)")
	flag.IntVar(&o.churnWorkspaces, "churn-workspaces", 1000, "workspaces created and deleted in each churn cycle")
	flag.DurationVar(&o.churnSettle, "churn-settle", 10*time.Second, "pause after each churn cycle's deletion before the memory reading")
	flag.StringVar(&o.mode, "mode", "shard", "shard: one shard (the runs above); system: root shard, more shards and the front-proxy, direct against proxied (system.go); cache: replication of 10,000 objects through a cache server (cache.go); virtual: an export bound in --bindings workspaces, wildcard LIST and watch through a virtual-workspaces process against the shard, its RSS (virtual.go); noisy: one shard and the front-proxy, tenant B's latency alone and while tenant A floods, with fairness on and off (noisy.go); moves, drain, scale: live moves of workspaces between shards, a drain, a shard joining a loaded system (moves.go)")
	o.system.addFlags(flag.CommandLine)
	o.cache.addFlags(flag.CommandLine)
	o.virtual.addFlags(flag.CommandLine)
	o.noisy.addFlags(flag.CommandLine)
	o.moves.addFlags(flag.CommandLine)
	flag.Parse()
	// An interrupt ends the run through ctx, so that the shard is stopped.
	sigCtx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	ctx, cancel := context.WithTimeout(sigCtx, 4*time.Hour)
	defer cancel()
	runMode := run
	switch o.mode {
	case "shard":
	case "system":
		runMode = runSystem
	case "cache":
		runMode = runCache
	case "virtual":
		runMode = runVirtual
	case "noisy":
		runMode = runNoisy
	case "moves":
		runMode = runMoves
	case "drain":
		runMode = runDrain
	case "scale":
		runMode = runScale
	default:
		fmt.Fprintf(os.Stderr, "bench: --mode must be shard, system, cache, virtual, noisy, moves, drain or scale, not %q\n", o.mode)
		os.Exit(2)
	}
	r, err := runMode(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		if o.mode == "shard" || r.movesResults != nil {
			fmt.Fprintln(os.Stderr, "bench: partial results of the steps before the error:")
			r.print(os.Stdout)
		}
		os.Exit(1)
	}
	r.print(os.Stdout)
}

// results are the numbers the benchmark reports; JSON keys are fixed by
// issues 6, 13 and 20 and docs/performance.md.
type results struct {
	StartToReadySeconds float64 `json:"start_to_ready_seconds"`
	RSSIdleBytes        int64   `json:"rss_idle_bytes"`
	HeapIdleBytes       int64   `json:"heap_idle_bytes"`
	// LiveHeapIdleBytes is the live heap after the same GC (HeapIdleBytes
	// also counts the free room in spans that hold live objects).
	LiveHeapIdleBytes int64   `json:"live_heap_idle_bytes"`
	WSPerSecFlat      float64 `json:"ws_per_sec_flat"`
	WSPerSecTree      float64 `json:"ws_per_sec_tree"`
	// WSCPUMsFlat and WSCPUMsTree are the shard's CPU milliseconds per
	// workspace created in the flat and the tree run: what the rates cost,
	// read the same whatever the machine's speed at the time.
	WSCPUMsFlat          float64 `json:"ws_cpu_ms_flat"`
	WSCPUMsTree          float64 `json:"ws_cpu_ms_tree"`
	WSReadyP50Ms         float64 `json:"ws_ready_p50_ms"`
	WSReadyP99Ms         float64 `json:"ws_ready_p99_ms"`
	TreeReadyP50Ms       float64 `json:"tree_ready_p50_ms"`
	TreeReadyP99Ms       float64 `json:"tree_ready_p99_ms"`
	RSSBytesPerWorkspace float64 `json:"rss_bytes_per_workspace"`
	HeapBytesPerWS       float64 `json:"heap_bytes_per_workspace"`
	// LiveHeapBytesPerWS is what the live heap grew by per workspace: the
	// rest of HeapBytesPerWS is free room in spans that live objects hold.
	LiveHeapBytesPerWS   float64       `json:"live_heap_bytes_per_workspace"`
	MetricSeriesEmpty    int           `json:"metric_series_empty"`
	MetricSeriesLoaded   int           `json:"metric_series_loaded"`
	GetP50Ms             float64       `json:"get_p50_ms"`
	GetP99Ms             float64       `json:"get_p99_ms"`
	CreateP50Ms          float64       `json:"create_p50_ms"`
	CreateP99Ms          float64       `json:"create_p99_ms"`
	WildcardListMs       float64       `json:"wildcard_list_ms"`
	WildcardListItems    int           `json:"wildcard_list_items"`
	DeleteAllSeconds     float64       `json:"delete_all_seconds"`
	RSSAfterDeleteBytes  int64         `json:"rss_after_delete_bytes"`
	HeapAfterDeleteBytes int64         `json:"heap_after_delete_bytes"`
	Memory               []memoryPoint `json:"memory"`
	Workspaces           int           `json:"workspaces"`
	Concurrency          int           `json:"concurrency"`
	BenchSeconds         float64       `json:"bench_seconds"`

	// Reads (issue 20, reads.go).
	GetSpreadWorkspaces int     `json:"get_5k_workspaces"` // workspaces present for get_*_5k
	GetSpreadP50Ms      float64 `json:"get_p50_ms_5k"`
	GetSpreadP99Ms      float64 `json:"get_p99_ms_5k"`
	// The same GETs from one client, one after the other: latency without
	// the queueing of --concurrency clients on a saturated shard.
	GetSpreadSerialP50Ms float64              `json:"get_serial_p50_ms_5k"`
	GetSpreadSerialP99Ms float64              `json:"get_serial_p99_ms_5k"`
	GetParallelWorkers   int                  `json:"get_parallel_workers"`
	GetParallelPerSec    float64              `json:"get_parallel_per_sec"`
	GetParallelP50Ms     float64              `json:"get_parallel_p50_ms"`
	GetParallelP99Ms     float64              `json:"get_parallel_p99_ms"`
	WildcardLists        []wildcardListResult `json:"wildcard_lists"`
	WildcardList10kMs    float64              `json:"wildcard_list_10k_ms"` // median
	WildcardList10kMin   float64              `json:"wildcard_list_10k_min_ms"`
	WildcardList10kN     int                  `json:"wildcard_list_10k_items"`
	WildcardList50kMs    float64              `json:"wildcard_list_50k_ms"` // median
	WildcardList50kMin   float64              `json:"wildcard_list_50k_min_ms"`
	WildcardList50kN     int                  `json:"wildcard_list_50k_items"`

	// Deletion and memory coming back (issue 20, churn.go).
	DeleteWorkspaces        int       `json:"delete_workspaces"`
	Delete1kSeconds         float64   `json:"delete_1k_seconds"`
	RSSAfterDelete60sBytes  int64     `json:"rss_after_delete_60s_bytes"`
	HeapAfterDelete60sBytes int64     `json:"heap_after_delete_60s_bytes"`
	LiveHeapAfterDelete60s  int64     `json:"live_heap_after_delete_60s_bytes"`
	ChurnWorkspaces         int       `json:"churn_workspaces"`
	ChurnDeleteSeconds      []float64 `json:"churn_delete_seconds"`
	ChurnRSSBytes           []int64   `json:"churn_rss_bytes"`
	ChurnHeapBytes          []int64   `json:"churn_heap_bytes"`
	ChurnLiveHeapBytes      []int64   `json:"churn_live_heap_bytes"`

	// CRD serving (issue 20, crds.go).
	CRDWorkspaces          int     `json:"crd_workspaces"`
	CRDEstablishedP50Ms    float64 `json:"crd_established_p50_ms"`
	CRDEstablishedP99Ms    float64 `json:"crd_established_p99_ms"`
	CRDFirstRequestP50Ms   float64 `json:"crd_first_request_p50_ms"`
	CRDFirstRequestP99Ms   float64 `json:"crd_first_request_p99_ms"`
	CRDFirstRequestMaxMs   float64 `json:"crd_first_request_max_ms"`
	CRDFirstRequestRetries int     `json:"crd_first_request_retries"`
	CRDGoroutines          []int   `json:"crd_goroutines"` // before the CRDs, serving, [idle,] after deleting them
	CRDHeapBytes           []int64 `json:"crd_heap_bytes"` // the same moments

	// The bindings run (issue 13).
	Bindings                  int           `json:"bindings"`
	ObjectsPerBinding         int           `json:"objects_per_binding"`
	BindingsPerSec            float64       `json:"bindings_per_sec"`
	BindingBoundP50Ms         float64       `json:"binding_bound_p50_ms"`
	BindingBoundP99Ms         float64       `json:"binding_bound_p99_ms"`
	APIBindingReconciles      int           `json:"apibinding_reconciles"`
	APIBindingQueueWaitMeanMs float64       `json:"apibinding_queue_wait_mean_ms"`
	APIBindingWorkMeanMs      float64       `json:"apibinding_work_mean_ms"`
	BindingMemory             []memoryPoint `json:"binding_memory"` // before and after binding
	HeapBytesPerBinding       float64       `json:"heap_bytes_per_binding"`
	RSSBytesPerBinding        float64       `json:"rss_bytes_per_binding"`
	GoroutinesBeforeBindings  int           `json:"goroutines_before_bindings"`
	GoroutinesAfterBindings   int           `json:"goroutines_after_bindings"`
	GoroutinesPerBinding      float64       `json:"goroutines_per_binding"`
	BoundSchemaFirstListMs    float64       `json:"bound_schema_first_list_ms"`
	HeapBytesPerBoundObject   float64       `json:"heap_bytes_per_bound_object"`
	WildcardIdentityListMs    float64       `json:"wildcard_identity_list_ms"`
	WildcardIdentityListItems int           `json:"wildcard_identity_list_items"`
	FreshFirstRequestP50Ms    float64       `json:"fresh_binding_first_request_p50_ms"`
	FreshFirstRequestP99Ms    float64       `json:"fresh_binding_first_request_p99_ms"`
	FreshBindingRetries       int           `json:"fresh_binding_retries"`
	FreshCacheWaitMeanMs      float64       `json:"fresh_binding_cache_wait_mean_ms"`

	// The system mode (issue 14), set only by --mode=system.
	*systemResults
	// The cache mode (issue 15), set only by --mode=cache.
	*cacheResults
	// The virtual mode (issue 17), set only by --mode=virtual.
	*virtualResults
	// The noisy mode (issue 43), set only by --mode=noisy.
	*noisyResults
	// The moves, drain and scale modes (issue 42).
	*movesResults
}

type memoryPoint struct {
	Workspaces int   `json:"workspaces"`
	RSSBytes   int64 `json:"rss_bytes"`
	HeapBytes  int64 `json:"heap_bytes"`
	// LiveHeapBytes is the live heap after the same GC.
	LiveHeapBytes int64 `json:"live_heap_bytes,omitempty"`
	// Seconds is how long creating the workspaces up to this point took.
	Seconds float64 `json:"seconds,omitempty"`
}

func (r results) print(w *os.File) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if r.systemResults != nil {
		r.systemResults.print(tw)
		tw.Flush()
		b, _ := json.Marshal(r.systemResults)
		fmt.Fprintln(w, string(b))
		return
	}
	if r.virtualResults != nil {
		r.virtualResults.print(tw)
		tw.Flush()
		b, _ := json.Marshal(r.virtualResults)
		fmt.Fprintln(w, string(b))
		return
	}
	if r.noisyResults != nil {
		r.noisyResults.print(tw)
		tw.Flush()
		b, _ := json.Marshal(r.noisyResults)
		fmt.Fprintln(w, string(b))
		return
	}
	if r.movesResults != nil {
		r.movesResults.print(tw)
		tw.Flush()
		b, _ := json.Marshal(r.movesResults)
		fmt.Fprintln(w, string(b))
		return
	}
	if r.cacheResults != nil {
		r.cacheResults.print(tw)
		tw.Flush()
		b, _ := json.Marshal(r.cacheResults)
		fmt.Fprintln(w, string(b))
		return
	}
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	row("workspaces / concurrency", fmt.Sprintf("%d / %d", r.Workspaces, r.Concurrency))
	row("start to /readyz", fmt.Sprintf("%.2f s", r.StartToReadySeconds))
	row("idle RSS / heap", mib(r.RSSIdleBytes)+" / "+mib(r.HeapIdleBytes))
	row("workspaces/s flat", fmt.Sprintf("%.1f (ready p50 %.0f ms, p99 %.0f ms), %.1f CPU ms each", r.WSPerSecFlat, r.WSReadyP50Ms, r.WSReadyP99Ms, r.WSCPUMsFlat))
	row("workspaces/s tree", fmt.Sprintf("%.1f (ready p50 %.0f ms, p99 %.0f ms), %.1f CPU ms each", r.WSPerSecTree, r.TreeReadyP50Ms, r.TreeReadyP99Ms, r.WSCPUMsTree))
	for _, m := range r.Memory {
		took := ""
		if m.Seconds > 0 {
			took = fmt.Sprintf(" (topped up in %.0f s)", m.Seconds)
		}
		live := ""
		if m.LiveHeapBytes > 0 {
			live = " (live " + mib(m.LiveHeapBytes) + ")"
		}
		row(fmt.Sprintf("memory at %d workspaces", m.Workspaces), "RSS "+mib(m.RSSBytes)+", heap "+mib(m.HeapBytes)+live+took)
	}
	row("bytes per workspace", fmt.Sprintf("RSS %.1f KiB, heap %.1f KiB (live %.1f KiB)", r.RSSBytesPerWorkspace/1024, r.HeapBytesPerWS/1024, r.LiveHeapBytesPerWS/1024))
	row("metric series", fmt.Sprintf("%d empty, %d loaded", r.MetricSeriesEmpty, r.MetricSeriesLoaded))
	row("configmap GET", fmt.Sprintf("p50 %.2f ms, p99 %.2f ms", r.GetP50Ms, r.GetP99Ms))
	row("configmap CREATE", fmt.Sprintf("p50 %.2f ms, p99 %.2f ms", r.CreateP50Ms, r.CreateP99Ms))
	row("wildcard LIST configmaps", fmt.Sprintf("%.0f ms (%d items)", r.WildcardListMs, r.WildcardListItems))
	if r.GetSpreadWorkspaces > 0 {
		row(fmt.Sprintf("configmap GET over %d workspaces", r.GetSpreadWorkspaces), fmt.Sprintf("p50 %.2f ms, p99 %.2f ms (%d clients); one client: p50 %.2f ms, p99 %.2f ms",
			r.GetSpreadP50Ms, r.GetSpreadP99Ms, r.Concurrency, r.GetSpreadSerialP50Ms, r.GetSpreadSerialP99Ms))
	}
	if r.GetParallelWorkers > 0 {
		row(fmt.Sprintf("parallel GET, %d workers", r.GetParallelWorkers), fmt.Sprintf("%.0f GET/s (p50 %.2f ms, p99 %.2f ms)", r.GetParallelPerSec, r.GetParallelP50Ms, r.GetParallelP99Ms))
	}
	for _, l := range r.WildcardLists {
		row(fmt.Sprintf("wildcard LIST of %d configmaps", l.Size), fmt.Sprintf("JSON median %.0f ms, min %.0f ms; protobuf median %.0f ms, min %.0f ms (%d items, %d LISTs each)",
			l.MedianMs, l.MinMs, l.ProtoMedianMs, l.ProtoMinMs, l.Items, l.Repeats))
	}
	if r.Bindings > 0 {
		row("bindings / objects per binding", fmt.Sprintf("%d / %d", r.Bindings, r.ObjectsPerBinding))
		row("bindings/s to Bound", fmt.Sprintf("%.1f (create to Bound p50 %.0f ms, p99 %.0f ms)", r.BindingsPerSec, r.BindingBoundP50Ms, r.BindingBoundP99Ms))
		row("APIBinding controller", fmt.Sprintf("%d reconciles, mean %.1f ms queued, %.1f ms working", r.APIBindingReconciles, r.APIBindingQueueWaitMeanMs, r.APIBindingWorkMeanMs))
		if len(r.BindingMemory) == 2 {
			before, after := r.BindingMemory[0], r.BindingMemory[1]
			row("memory before / after binding", fmt.Sprintf("RSS %s / %s, heap %s / %s", mib(before.RSSBytes), mib(after.RSSBytes), mib(before.HeapBytes), mib(after.HeapBytes)))
		}
		row("bytes per binding", fmt.Sprintf("RSS %.1f KiB, heap %.1f KiB (the APIBinding in etcd's watch cache, informers and indexes, one LIST per workspace, the schema's serving state once; no objects)",
			r.RSSBytesPerBinding/1024, r.HeapBytesPerBinding/1024))
		row("goroutines before / after binding", fmt.Sprintf("%d / %d (%.3f per binding)", r.GoroutinesBeforeBindings, r.GoroutinesAfterBindings, r.GoroutinesPerBinding))
		row("first LIST of the bound schema", fmt.Sprintf("%.1f ms (builds its serving state)", r.BoundSchemaFirstListMs))
		row("fresh binding: Bound to first LIST", fmt.Sprintf("p50 %.2f ms, p99 %.2f ms (%d refused before served; mean wait for a fresh watch cache %.1f ms)",
			r.FreshFirstRequestP50Ms, r.FreshFirstRequestP99Ms, r.FreshBindingRetries, r.FreshCacheWaitMeanMs))
		if r.ObjectsPerBinding > 0 {
			row("heap per bound object", fmt.Sprintf("%.1f KiB", r.HeapBytesPerBoundObject/1024))
		}
		row("wildcard LIST by identity", fmt.Sprintf("%.0f ms (%d items)", r.WildcardIdentityListMs, r.WildcardIdentityListItems))
	}
	if r.DeleteWorkspaces > 0 {
		row(fmt.Sprintf("delete %d workspaces", r.DeleteWorkspaces), fmt.Sprintf("%.1f s", r.Delete1kSeconds))
	}
	if r.CRDWorkspaces > 0 {
		row("CRDs / workspaces", fmt.Sprintf("%d, one each (create to Established p50 %.0f ms, p99 %.0f ms)", r.CRDWorkspaces, r.CRDEstablishedP50Ms, r.CRDEstablishedP99Ms))
		row("CRD first request", fmt.Sprintf("p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d refused before served)", r.CRDFirstRequestP50Ms, r.CRDFirstRequestP99Ms, r.CRDFirstRequestMaxMs, r.CRDFirstRequestRetries))
		heaps := make([]string, len(r.CRDHeapBytes))
		for i, h := range r.CRDHeapBytes {
			heaps[i] = mib(h)
		}
		row("CRD goroutines / heap", fmt.Sprintf("%v / %s (before, serving, [idle,] CRDs deleted)", r.CRDGoroutines, strings.Join(heaps, ", ")))
	}
	row("delete all workspaces", fmt.Sprintf("%.1f s, after: RSS %s, heap %s", r.DeleteAllSeconds, mib(r.RSSAfterDeleteBytes), mib(r.HeapAfterDeleteBytes)))
	if r.RSSAfterDelete60sBytes != 0 {
		row("60 s after deleting all", fmt.Sprintf("RSS %s, heap %s (idle: %s, %s)", mib(r.RSSAfterDelete60sBytes), mib(r.HeapAfterDelete60sBytes), mib(r.RSSIdleBytes), mib(r.HeapIdleBytes)))
		row("", fmt.Sprintf("live heap %s (idle: %s)", mib(r.LiveHeapAfterDelete60s), mib(r.LiveHeapIdleBytes)))
	}
	if len(r.ChurnRSSBytes) > 0 {
		var rss, heap, live, del []string
		for i := range r.ChurnRSSBytes {
			rss = append(rss, mib(r.ChurnRSSBytes[i]))
			heap = append(heap, mib(r.ChurnHeapBytes[i]))
			live = append(live, mib(r.ChurnLiveHeapBytes[i]))
			del = append(del, fmt.Sprintf("%.1f s", r.ChurnDeleteSeconds[i]))
		}
		row(fmt.Sprintf("create-delete %d workspaces, %d cycles", r.ChurnWorkspaces, len(rss)), "RSS "+strings.Join(rss, ", "))
		row("", "heap "+strings.Join(heap, ", "))
		row("", "live heap "+strings.Join(live, ", "))
		row("", "delete "+strings.Join(del, ", "))
	}
	row("bench duration", fmt.Sprintf("%.0f s", r.BenchSeconds))
	tw.Flush()
	b, _ := json.Marshal(r)
	fmt.Fprintln(w, string(b))
}

// percentile returns the p-th percentile (0..100) of durations in ms.
func percentile(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1) * p / 100)
	return float64(s[i].Microseconds()) / 1000
}

func parsePoints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		var n int
		if _, err := fmt.Sscanf(strings.TrimSpace(f), "%d", &n); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}
