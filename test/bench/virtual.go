package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync/atomic"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
	"github.com/shardplane/shardplane/test/framework"
)

// virtualOptions are the flags of --mode=virtual (issue 17): an export
// bound in many workspaces, listed and watched through the APIExport view
// of a virtual-workspaces process and directly on the shard.
type virtualOptions struct {
	binary string
	lists  int
	watchN int
}

func (v *virtualOptions) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&v.binary, "virtual-workspaces-binary", "bin/virtual-workspaces", "virtual-workspaces binary (--mode=virtual)")
	fs.IntVar(&v.lists, "virtual-lists", 5, "wildcard LISTs timed through the view and directly (--mode=virtual; the median counts)")
	fs.IntVar(&v.watchN, "virtual-watch-events", 2000, "objects created while watching through the view and directly (--mode=virtual)")
}

// virtualResults are the numbers of --mode=virtual.
type virtualResults struct {
	VirtualBindings          int     `json:"virtual_bindings"`
	VirtualObjects           int     `json:"virtual_objects"`
	DirectWildcardListMs     float64 `json:"direct_wildcard_list_ms"`
	ViewWildcardListMs       float64 `json:"view_wildcard_list_ms"`
	ViewListOverheadPercent  float64 `json:"view_list_overhead_percent"`
	DirectWatchEventsPerSec  float64 `json:"direct_watch_events_per_sec"`
	ViewWatchEventsPerSec    float64 `json:"view_watch_events_per_sec"`
	VirtualRSSIdleBytes      int64   `json:"virtual_workspaces_rss_idle_bytes"`
	VirtualRSSAfterBytes     int64   `json:"virtual_workspaces_rss_after_bytes"`
	VirtualRSSIdleBindings   int64   `json:"virtual_workspaces_rss_with_bindings_bytes"`
	ViewWatchEventsDelivered int     `json:"view_watch_events_delivered"`
}

// runVirtual starts a shard and a virtual-workspaces process for it,
// binds one export in --bindings workspaces with --objects-per-binding
// objects each, and compares the view with the shard.
func runVirtual(ctx context.Context, o options) (results, error) {
	r := results{Concurrency: o.concurrency, virtualResults: &virtualResults{}}
	step := func(s string) { fmt.Fprintf(os.Stderr, "bench: %s\n", s) }
	t, _, err := startShard(ctx, o.shardBinary)
	if err != nil {
		return r, err
	}
	defer t.stop()
	vw, err := startVirtualWorkspaces(ctx, o.virtual.binary, t)
	if err != nil {
		return r, err
	}
	defer vw.stop()
	time.Sleep(settle)
	r.VirtualRSSIdleBytes = rssOf(vw.pid)

	b, err := newBench(t, o.concurrency)
	if err != nil {
		return r, err
	}
	defer b.stopWatch()
	step("publishing an export in " + providerName)
	ws, _, err := b.createOne(ctx, logicalcluster.Root, providerName)
	if err != nil {
		return r, err
	}
	br := &bindingRun{bench: b, provider: logicalcluster.Name(ws.Spec.Cluster)}
	if br.http, err = rest.HTTPClientFor(b.adminConfig); err != nil {
		return r, err
	}
	if br.identity, err = br.publish(ctx); err != nil {
		return r, err
	}
	step(fmt.Sprintf("binding it in %d workspaces with %d objects each", o.bindings, o.objectsPerBinding))
	clusters, err := b.readyWorkspaces(ctx, b.names("virtual", o.bindings))
	if err != nil {
		return r, err
	}
	if br.watch, err = b.watchBindings(); err != nil {
		return r, err
	}
	defer br.watch.stop()
	if _, err := timeEach(ctx, b.concurrency, clusters, func(c logicalcluster.Name) (time.Duration, error) {
		_, _, err := br.bind(ctx, c)
		return 0, err
	}); err != nil {
		return r, err
	}
	if err := br.fill(ctx, clusters, o.objectsPerBinding); err != nil {
		return r, err
	}
	r.VirtualBindings, r.VirtualObjects = len(clusters), len(clusters)*o.objectsPerBinding
	time.Sleep(settle)
	r.VirtualRSSIdleBindings = rssOf(vw.pid)

	direct := rest.CopyConfig(t.masters)
	direct.Host = logicalcluster.Wildcard.Path().URL(direct.Host)
	view := vw.config(t.admin.BearerToken)
	view.Host = logicalcluster.Wildcard.Path().URL(viewurl.APIExportURL(view.Host, br.provider, benchResource))
	identityRes := gizmos
	identityRes.Resource += ":" + br.identity
	step(fmt.Sprintf("timing %d wildcard LISTs of %d objects directly and through the view", o.virtual.lists, r.VirtualObjects))
	if r.DirectWildcardListMs, err = medianList(ctx, direct, identityRes, o.virtual.lists, r.VirtualObjects); err != nil {
		return r, fmt.Errorf("direct: %w", err)
	}
	if r.ViewWildcardListMs, err = medianList(ctx, view, gizmos, o.virtual.lists, r.VirtualObjects); err != nil {
		return r, fmt.Errorf("view: %w", err)
	}
	r.ViewListOverheadPercent = 100 * (r.ViewWildcardListMs - r.DirectWildcardListMs) / r.DirectWildcardListMs

	step(fmt.Sprintf("watching directly and through the view while %d objects are created", o.virtual.watchN))
	if err := watchRates(ctx, br, clusters, direct, view, o.virtual.watchN, r.virtualResults); err != nil {
		return r, err
	}
	r.VirtualRSSAfterBytes = rssOf(vw.pid)
	return r, nil
}

// medianList times n wildcard LISTs (JSON) and returns the median in ms.
func medianList(ctx context.Context, cfg *rest.Config, res schema.GroupVersionResource, n, want int) (float64, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	var times []time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		list, err := c.Resource(res).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		times = append(times, time.Since(start))
		if len(list.Items) != want {
			return 0, fmt.Errorf("listed %d objects, want %d", len(list.Items), want)
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	return ms(times[len(times)/2]), nil
}

// watchRates watches directly and through the view, creates n objects,
// and records the events per second each watch delivered.
func watchRates(ctx context.Context, br *bindingRun, clusters []logicalcluster.Name, direct, view *rest.Config, n int, r *virtualResults) error {
	identityRes := gizmos
	identityRes.Resource += ":" + br.identity
	type watcher struct {
		count atomic.Int64
		last  atomic.Int64
	}
	start := func(cfg *rest.Config, res schema.GroupVersionResource, w *watcher) (func(), error) {
		c, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		list, err := c.Resource(res).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return nil, err
		}
		wi, err := c.Resource(res).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
		if err != nil {
			return nil, err
		}
		go func() {
			for range wi.ResultChan() {
				w.count.Add(1)
				w.last.Store(time.Now().UnixNano())
			}
		}()
		return wi.Stop, nil
	}
	var dw, vw watcher
	stopDirect, err := start(direct, identityRes, &dw)
	if err != nil {
		return fmt.Errorf("direct watch: %w", err)
	}
	defer stopDirect()
	stopView, err := start(view, gizmos, &vw)
	if err != nil {
		return fmt.Errorf("view watch: %w", err)
	}
	defer stopView()
	per := max(1, n/len(clusters))
	begin := time.Now()
	if err := fillFrom(ctx, br, clusters, per, 1000); err != nil {
		return err
	}
	total := int64(per * len(clusters))
	deadline := time.Now().Add(boundTimeout)
	for (dw.count.Load() < total || vw.count.Load() < total) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	rate := func(w *watcher) float64 {
		return float64(w.count.Load()) / time.Unix(0, w.last.Load()).Sub(begin).Seconds()
	}
	r.DirectWatchEventsPerSec, r.ViewWatchEventsPerSec = rate(&dw), rate(&vw)
	r.ViewWatchEventsDelivered = int(vw.count.Load())
	if vw.count.Load() < total {
		return fmt.Errorf("the view delivered %d of %d watch events", vw.count.Load(), total)
	}
	return nil
}

// fillFrom creates per objects, numbered from first, in every cluster.
func fillFrom(ctx context.Context, br *bindingRun, clusters []logicalcluster.Name, per, first int) error {
	type item struct {
		cluster logicalcluster.Name
		i       int
	}
	items := make(chan item, len(clusters)*per)
	for _, c := range clusters {
		for i := 0; i < per; i++ {
			items <- item{c, first + i}
		}
	}
	close(items)
	return parallel(ctx, br.concurrency, items, func(it item) error {
		g, err := br.gizmos(it.cluster)
		if err != nil {
			return err
		}
		obj := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": gizmos.GroupVersion().String(), "kind": "Gizmo",
			"metadata": map[string]interface{}{"name": fmt.Sprintf("gizmo-%d", it.i)},
		}}
		_, err = g.Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
		return err
	})
}

// virtualWorkspacesProcess is a started virtual-workspaces process.
type virtualWorkspacesProcess struct {
	url  string
	pid  int
	stop func()
}

// config reaches the process as the holder of token, without verifying
// its generated serving certificate (loopback only).
func (v *virtualWorkspacesProcess) config(token string) *rest.Config {
	return &rest.Config{Host: v.url, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: -1}
}

// startVirtualWorkspaces starts a virtual-workspaces process serving the
// shard of t with its system:masters credentials, accepting the shard's
// kcp-admin token.
func startVirtualWorkspaces(ctx context.Context, binary string, t *target) (*virtualWorkspacesProcess, error) {
	dir, err := os.MkdirTemp("", "shardplane-bench-vw-")
	if err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	ca := t.masters.CAData
	if len(ca) == 0 && t.masters.CAFile != "" {
		if ca, err = os.ReadFile(t.masters.CAFile); err != nil {
			return nil, err
		}
	}
	cfg.Clusters["shard"] = &clientcmdapi.Cluster{Server: t.masters.Host, CertificateAuthorityData: ca}
	cfg.AuthInfos["masters"] = &clientcmdapi.AuthInfo{Token: t.masters.BearerToken}
	cfg.Contexts["shard"] = &clientcmdapi.Context{Cluster: "shard", AuthInfo: "masters"}
	cfg.CurrentContext = "shard"
	kubeconfig := filepath.Join(dir, "shard.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		return nil, err
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(fmt.Sprintf("%s,%s,%s,%q\n", t.admin.BearerToken, identities.KCPAdminUser, identities.KCPAdminUser, identities.KCPAdminGroup)), 0o600); err != nil {
		return nil, err
	}
	ports, err := framework.FindFreePorts(1)
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	proc := &framework.Process{
		Name:   "virtual-workspaces",
		Binary: binary,
		Args: func() []string {
			return []string{"--kubeconfig=" + kubeconfig, "--root-directory=" + filepath.Join(dir, "root"), "--bind-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(ports[0]), "--token-auth-file=" + tokens}
		},
		WorkDir:       dir,
		ReadyURL:      url + "/readyz",
		ReadyInterval: 50 * time.Millisecond,
		ReadyTimeout:  time.Minute,
	}
	v := &virtualWorkspacesProcess{url: url}
	v.stop = func() {
		_ = proc.Stop()
		_ = os.RemoveAll(dir)
	}
	start := time.Now()
	if err := proc.StartContext(ctx); err != nil {
		v.stop()
		return nil, fmt.Errorf("virtual-workspaces not ready after %s (%w), log in %s", time.Since(start), err, proc.LogPath())
	}
	v.pid = proc.PID()
	return v, nil
}

// rssOf returns the resident set size of a process, or -1.
func rssOf(pid int) int64 {
	t := &target{pid: pid}
	return t.rss()
}

func (v *virtualResults) print(tw *tabwriter.Writer) {
	row := func(k string, val any) { fmt.Fprintf(tw, "%s\t%v\n", k, val) }
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	row("bindings / objects", fmt.Sprintf("%d / %d", v.VirtualBindings, v.VirtualObjects))
	row("wildcard LIST direct (median)", fmt.Sprintf("%.1f ms", v.DirectWildcardListMs))
	row("wildcard LIST through the view (median)", fmt.Sprintf("%.1f ms (%+.1f%%, target <= +20%%)", v.ViewWildcardListMs, v.ViewListOverheadPercent))
	row("watch events/s direct", fmt.Sprintf("%.0f", v.DirectWatchEventsPerSec))
	row("watch events/s through the view", fmt.Sprintf("%.0f (%d events)", v.ViewWatchEventsPerSec, v.ViewWatchEventsDelivered))
	row("virtual-workspaces RSS idle", mib(v.VirtualRSSIdleBytes)+" (target <= 80 MiB)")
	row("virtual-workspaces RSS with the bindings", mib(v.VirtualRSSIdleBindings))
	row("virtual-workspaces RSS after the runs", mib(v.VirtualRSSAfterBytes))
}
