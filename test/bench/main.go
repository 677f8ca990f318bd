// Command bench measures a shard: start-up, workspaces per second (flat and
// as a tree), memory per workspace, metric series, request latency and
// deletion. It prints a table and one JSON line. It starts its own shard
// unless --kubeconfig points at a running one.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
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
}

func main() {
	var o options
	flag.IntVar(&o.workspaces, "workspaces", 1000, "number of workspaces for the flat and the tree run")
	flag.IntVar(&o.concurrency, "concurrency", 20, "concurrent clients")
	flag.StringVar(&o.kubeconfig, "kubeconfig", "", "admin.kubeconfig of a running shard (default: start one)")
	flag.StringVar(&o.shardBinary, "shard-binary", "bin/shard", "shard binary to start when --kubeconfig is empty")
	flag.IntVar(&o.treeFanout, "tree-fanout", 6, "children per workspace in the tree run")
	flag.IntVar(&o.treeDepth, "tree-depth", 4, "depth of the tree run")
	flag.StringVar(&o.memoryPoints, "memory-points", "1000,5000", "idle workspace counts at which memory is measured")
	flag.IntVar(&o.requests, "requests", 2000, "configmap GETs and CREATEs for the latency run")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	r, err := run(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	r.print(os.Stdout)
}

// results are the numbers the benchmark reports; JSON keys are fixed by
// issue 6 and docs/performance.md.
type results struct {
	StartToReadySeconds  float64       `json:"start_to_ready_seconds"`
	RSSIdleBytes         int64         `json:"rss_idle_bytes"`
	HeapIdleBytes        int64         `json:"heap_idle_bytes"`
	WSPerSecFlat         float64       `json:"ws_per_sec_flat"`
	WSPerSecTree         float64       `json:"ws_per_sec_tree"`
	WSReadyP50Ms         float64       `json:"ws_ready_p50_ms"`
	WSReadyP99Ms         float64       `json:"ws_ready_p99_ms"`
	TreeReadyP50Ms       float64       `json:"tree_ready_p50_ms"`
	TreeReadyP99Ms       float64       `json:"tree_ready_p99_ms"`
	RSSBytesPerWorkspace float64       `json:"rss_bytes_per_workspace"`
	HeapBytesPerWS       float64       `json:"heap_bytes_per_workspace"`
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
}

type memoryPoint struct {
	Workspaces int   `json:"workspaces"`
	RSSBytes   int64 `json:"rss_bytes"`
	HeapBytes  int64 `json:"heap_bytes"`
}

func (r results) print(w *os.File) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	row("workspaces / concurrency", fmt.Sprintf("%d / %d", r.Workspaces, r.Concurrency))
	row("start to /readyz", fmt.Sprintf("%.2f s", r.StartToReadySeconds))
	row("idle RSS / heap", mib(r.RSSIdleBytes)+" / "+mib(r.HeapIdleBytes))
	row("workspaces/s flat", fmt.Sprintf("%.1f (ready p50 %.0f ms, p99 %.0f ms)", r.WSPerSecFlat, r.WSReadyP50Ms, r.WSReadyP99Ms))
	row("workspaces/s tree", fmt.Sprintf("%.1f (ready p50 %.0f ms, p99 %.0f ms)", r.WSPerSecTree, r.TreeReadyP50Ms, r.TreeReadyP99Ms))
	for _, m := range r.Memory {
		row(fmt.Sprintf("memory at %d workspaces", m.Workspaces), "RSS "+mib(m.RSSBytes)+", heap "+mib(m.HeapBytes))
	}
	row("bytes per workspace", fmt.Sprintf("RSS %.1f KiB, heap %.1f KiB", r.RSSBytesPerWorkspace/1024, r.HeapBytesPerWS/1024))
	row("metric series", fmt.Sprintf("%d empty, %d loaded", r.MetricSeriesEmpty, r.MetricSeriesLoaded))
	row("configmap GET", fmt.Sprintf("p50 %.2f ms, p99 %.2f ms", r.GetP50Ms, r.GetP99Ms))
	row("configmap CREATE", fmt.Sprintf("p50 %.2f ms, p99 %.2f ms", r.CreateP50Ms, r.CreateP99Ms))
	row("wildcard LIST configmaps", fmt.Sprintf("%.0f ms (%d items)", r.WildcardListMs, r.WildcardListItems))
	row("delete all workspaces", fmt.Sprintf("%.1f s, after: RSS %s, heap %s", r.DeleteAllSeconds, mib(r.RSSAfterDeleteBytes), mib(r.HeapAfterDeleteBytes)))
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
