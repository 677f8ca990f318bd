package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func run(ctx context.Context, o options) (results, error) {
	began := time.Now()
	r := results{Workspaces: o.workspaces, Concurrency: o.concurrency}
	var t *target
	var err error
	if o.kubeconfig != "" {
		t, err = loadTarget(o.kubeconfig)
	} else {
		var startup time.Duration
		t, startup, err = startShard(ctx, o.shardBinary)
		r.StartToReadySeconds = startup.Seconds()
	}
	if err != nil {
		return r, err
	}
	defer t.stop()
	step := func(s string) { fmt.Fprintf(os.Stderr, "bench: [%s] %s\n", time.Since(began).Round(time.Second), s) }

	time.Sleep(2 * time.Second) // let start-up work settle before the idle reading
	r.RSSIdleBytes, r.HeapIdleBytes, r.LiveHeapIdleBytes = t.memoryLive()
	r.MetricSeriesEmpty = t.metricSeries()

	b, err := newBench(t, o.concurrency)
	if err != nil {
		return r, err
	}
	defer b.stopWatch()

	step(fmt.Sprintf("creating %d workspaces flat under root", o.workspaces))
	flat := b.names("flat", o.workspaces)
	cpu := t.value("process_cpu_seconds_total")
	rate, lat, err := b.createFlat(ctx, flat)
	if err != nil {
		return r, err
	}
	r.WSPerSecFlat, r.WSReadyP50Ms, r.WSReadyP99Ms = rate, percentile(lat, 50), percentile(lat, 99)
	r.WSCPUMsFlat = t.cpuMsPer(cpu, len(flat))

	step(fmt.Sprintf("creating %d workspaces as a tree (fan-out %d, depth %d)", o.workspaces, o.treeFanout, o.treeDepth))
	cpu = t.value("process_cpu_seconds_total")
	before := b.count()
	rate, lat, err = b.createTree(ctx, o.workspaces, o.treeFanout, o.treeDepth)
	if err != nil {
		return r, err
	}
	r.WSPerSecTree, r.TreeReadyP50Ms, r.TreeReadyP99Ms = rate, percentile(lat, 50), percentile(lat, 99)
	r.WSCPUMsTree = t.cpuMsPer(cpu, b.count()-before)
	r.MetricSeriesLoaded = t.metricSeries()

	total := b.count()
	for _, p := range parsePoints(o.memoryPoints) {
		var took time.Duration
		if total < p {
			step(fmt.Sprintf("creating workspaces up to %d for the memory reading", p))
			extra := b.names(fmt.Sprintf("mem%d", p), p-total)
			start := time.Now()
			if _, _, err := b.createFlat(ctx, extra); err != nil {
				return r, err
			}
			took = time.Since(start)
			total = p
		}
		// Idle workspaces: the writes of their creation have settled, and
		// with them what the shard gives back once writes pause.
		time.Sleep(idleSettle)
		rss, heap, live := t.memoryLive()
		r.Memory = append(r.Memory, memoryPoint{Workspaces: b.count(), RSSBytes: rss, HeapBytes: heap, LiveHeapBytes: live, Seconds: took.Seconds()})
		step(fmt.Sprintf("memory at %d workspaces: RSS %.1f MiB, heap %.1f MiB, live heap %.1f MiB (topped up in %.0f s)", b.count(), float64(rss)/(1<<20), float64(heap)/(1<<20), float64(live)/(1<<20), took.Seconds()))
		// GETs spread over all workspaces, once, at the first point with
		// at least --get-workspaces; after the memory reading, and they
		// read only the kube-root-ca.crt every workspace has.
		if o.getWorkspaces > 0 && r.GetSpreadWorkspaces == 0 && b.count() >= o.getWorkspaces {
			step(fmt.Sprintf("timing %d configmap GETs spread over all %d workspaces", o.requests, b.count()))
			if err := b.spreadGets(ctx, &r, o.requests, step); err != nil {
				return r, err
			}
		}
	}
	if n := len(r.Memory); n > 0 {
		last := r.Memory[n-1]
		r.RSSBytesPerWorkspace = float64(last.RSSBytes-r.RSSIdleBytes) / float64(last.Workspaces)
		r.HeapBytesPerWS = float64(last.HeapBytes-r.HeapIdleBytes) / float64(last.Workspaces)
		r.LiveHeapBytesPerWS = float64(last.LiveHeapBytes-r.LiveHeapIdleBytes) / float64(last.Workspaces)
	}

	// Wildcard LISTs of --list-sizes configmaps, before the latency run adds
	// its configmaps (so that 10,000 can be reached with 5,000 workspaces);
	// the configmaps they add are deleted again afterwards.
	if sizes := parsePoints(o.listSizes); len(sizes) > 0 {
		step(fmt.Sprintf("wildcard LISTs of %s configmaps", o.listSizes))
		if err := b.wildcardLists(ctx, &r, sizes, o.listRepeats, step); err != nil {
			return r, err
		}
	}

	// Configmaps last, so that the memory readings are of empty workspaces.
	step("measuring configmap latency")
	if err := b.latency(ctx, &r, flat, o.requests); err != nil {
		return r, err
	}

	if o.parallelGetWorkers > 0 {
		step(fmt.Sprintf("parallel GETs: %d workers, each its own configmap in its own workspace, for %s", o.parallelGetWorkers, o.parallelGetDuration))
		if err := b.parallelGets(ctx, &r, flat, o.parallelGetWorkers, o.parallelGetDuration); err != nil {
			return r, err
		}
	}

	if o.bindings > 0 {
		step(fmt.Sprintf("binding one export in %d workspaces", o.bindings))
		if err := b.bindings(ctx, t, &r, o, flat); err != nil {
			return r, err
		}
	}

	if o.deleteWorkspaces > 0 {
		step(fmt.Sprintf("creating %d workspaces, then timing their deletion", o.deleteWorkspaces))
		if err := b.deleteTimed(ctx, &r, o.deleteWorkspaces); err != nil {
			return r, err
		}
	}

	if o.crdWorkspaces > 0 {
		step(fmt.Sprintf("one CRD in each of %d new workspaces, first request in each", o.crdWorkspaces))
		if err := b.crds(ctx, t, &r, o, step); err != nil {
			return r, err
		}
	}

	step(fmt.Sprintf("deleting all %d workspaces", b.count()))
	start := time.Now()
	if err := b.deleteAll(ctx); err != nil {
		return r, err
	}
	deleted := time.Now()
	r.DeleteAllSeconds = deleted.Sub(start).Seconds()
	time.Sleep(2 * time.Second)
	r.RSSAfterDeleteBytes, r.HeapAfterDeleteBytes = t.memory()

	// Memory coming back, last: nothing else runs in the shard meanwhile.
	if o.memoryReturnWait > 0 {
		step(fmt.Sprintf("waiting until %s after the deletion for the memory reading", o.memoryReturnWait))
		if err := sleep(ctx, time.Until(deleted.Add(o.memoryReturnWait))); err != nil {
			return r, err
		}
		r.RSSAfterDelete60sBytes, r.HeapAfterDelete60sBytes, r.LiveHeapAfterDelete60s = t.memoryLive()
	}
	if o.churnCycles > 0 && o.churnWorkspaces > 0 {
		step(fmt.Sprintf("%d cycles of creating and deleting %d workspaces", o.churnCycles, o.churnWorkspaces))
		if err := b.churn(ctx, t, &r, o, step); err != nil {
			return r, err
		}
	}
	r.BenchSeconds = time.Since(began).Seconds()
	return r, nil
}

// idleSettle is the pause after creating workspaces before the memory
// reading of idle workspaces: what the shard gives back once writes pause
// is back by then. The watch caches let a burst's history go 5 to 7 s after
// a resource's last write and relist about 1 s later; 5 s after the last of
// them etcd is compacted, the heap returned and the executable's pages
// released, and the database file's pages within the next second. The
// controllers' last writes come a few seconds after the last workspace is
// Ready with 20,000 of them (by hand, all was back 20 s after creation).
const idleSettle = 30 * time.Second

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// bench creates workspaces and watches them become Ready.
type bench struct {
	kcp           *kcpclient.Client // kcp-admin
	masters       *kcpclient.Client // system:masters (wildcard watch)
	adminConfig   *rest.Config
	mastersConfig *rest.Config
	concurrency   int

	mu       sync.Mutex
	ready    map[string]chan *tenancyv1alpha1.Workspace // parent|name -> Ready notification
	gone     map[string]chan struct{}                   // parent|name -> deleted notification
	created  int
	watchEnd context.CancelFunc
}

func newBench(t *target, concurrency int) (*bench, error) {
	kcp, err := kcpclient.New(t.admin)
	if err != nil {
		return nil, err
	}
	masters, err := kcpclient.New(t.masters)
	if err != nil {
		return nil, err
	}
	b := &bench{kcp: kcp, masters: masters, adminConfig: t.admin, mastersConfig: t.masters, concurrency: concurrency,
		ready: map[string]chan *tenancyv1alpha1.Workspace{}, gone: map[string]chan struct{}{}}
	ctx, cancel := context.WithCancel(context.Background())
	b.watchEnd = cancel
	w, err := masters.Watch(ctx, logicalcluster.Wildcard, kcpclient.Workspaces, "0")
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch workspaces: %w", err)
	}
	go b.watchWorkspaces(ctx, w)
	return b, nil
}

func (b *bench) stopWatch() { b.watchEnd() }

func key(parent logicalcluster.Name, name string) string { return string(parent) + "|" + name }

func (b *bench) expect(parent logicalcluster.Name, name string) chan *tenancyv1alpha1.Workspace {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch := make(chan *tenancyv1alpha1.Workspace, 1)
	b.ready[key(parent, name)] = ch
	return ch
}

// expectGone returns a channel that is closed when the workspace is deleted.
func (b *bench) expectGone(parent logicalcluster.Name, name string) chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch := make(chan struct{})
	b.gone[key(parent, name)] = ch
	return ch
}

// watchWorkspaces reports Ready and deleted workspaces.
func (b *bench) watchWorkspaces(ctx context.Context, w watch.Interface) {
	resumeWatch(ctx, b.masters, kcpclient.Workspaces, w, func(e watch.Event) {
		ws, ok := e.Object.(*tenancyv1alpha1.Workspace)
		if !ok || e.Type == watch.Bookmark {
			return
		}
		parent, _ := logicalcluster.ObjectCluster(ws.Annotations)
		k := key(parent, ws.Name)
		b.mu.Lock()
		defer b.mu.Unlock()
		if ch, ok := b.gone[k]; ok && e.Type == watch.Deleted {
			delete(b.gone, k)
			close(ch)
		}
		if ch, ok := b.ready[k]; ok && e.Type != watch.Deleted && ws.Status.Phase == corev1alpha1.LogicalClusterPhaseReady {
			delete(b.ready, k)
			ch <- ws
		}
	})
}

// resumeWatch hands the events of w, a wildcard watch of gvr, to handle
// until ctx ends. The server ends a watch after its request timeout (30 to
// 60 minutes, shorter than a full run) and when a watch cache lets its
// history go after a burst (its watchers resume where they were), so the
// watch is resumed from the last resource version it saw, or from now after
// an error (most likely "too old").
func resumeWatch(ctx context.Context, c *kcpclient.Client, gvr schema.GroupVersionResource, w watch.Interface, handle func(watch.Event)) {
	lastRV := "0"
	for {
		for e := range w.ResultChan() {
			if e.Type == watch.Error {
				lastRV = ""
				break
			}
			if m, err := meta.Accessor(e.Object); err == nil {
				lastRV = m.GetResourceVersion()
			}
			handle(e)
		}
		w.Stop()
		for {
			if ctx.Err() != nil {
				return
			}
			var err error
			if w, err = c.Watch(ctx, logicalcluster.Wildcard, gvr, lastRV); err == nil {
				break
			}
			fmt.Fprintf(os.Stderr, "bench: resuming the watch of %s from %q: %v\n", gvr.Resource, lastRV, err)
			lastRV = ""
			time.Sleep(time.Second)
		}
	}
}

func (b *bench) names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%05d", prefix, i)
	}
	return out
}

func (b *bench) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.created
}

// createOne creates a workspace and waits until it is Ready.
func (b *bench) createOne(ctx context.Context, parent logicalcluster.Name, name string) (*tenancyv1alpha1.Workspace, time.Duration, error) {
	ch := b.expect(parent, name)
	ws := &tenancyv1alpha1.Workspace{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}
	start := time.Now()
	if err := b.kcp.Create(ctx, parent, kcpclient.Workspaces, ws, &tenancyv1alpha1.Workspace{}); err != nil {
		return nil, 0, fmt.Errorf("create workspace %s in %s: %w", name, parent, err)
	}
	b.mu.Lock()
	b.created++
	b.mu.Unlock()
	select {
	case ready := <-ch:
		return ready, time.Since(start), nil
	case <-time.After(2 * time.Minute):
		return nil, 0, fmt.Errorf("workspace %s in %s not Ready after 2m", name, parent)
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
}

// parallel runs fn for every item with the bench's concurrency.
func parallel[T any](ctx context.Context, n int, items <-chan T, fn func(T) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range items {
				if err := fn(it); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// createFlat creates workspaces under root and reports the sustained rate
// and create-to-Ready latencies.
func (b *bench) createFlat(ctx context.Context, names []string) (float64, []time.Duration, error) {
	items := make(chan string, len(names))
	for _, n := range names {
		items <- n
	}
	close(items)
	var mu sync.Mutex
	var lat []time.Duration
	start := time.Now()
	err := parallel(ctx, b.concurrency, items, func(name string) error {
		_, d, err := b.createOne(ctx, logicalcluster.Root, name)
		mu.Lock()
		lat = append(lat, d)
		mu.Unlock()
		return err
	})
	return float64(len(names)) / time.Since(start).Seconds(), lat, err
}

type treeItem struct {
	parent logicalcluster.Name
	name   string
	depth  int
}

// createTree creates up to n workspaces breadth-first under one root
// workspace: each Ready workspace gets fanout children until depth.
func (b *bench) createTree(ctx context.Context, n, fanout, depth int) (float64, []time.Duration, error) {
	items := make(chan treeItem, n+fanout)
	var mu sync.Mutex
	var lat []time.Duration
	queued, done := 0, 0
	enqueue := func(parent logicalcluster.Name, prefix string, d int) {
		for i := 0; i < fanout && queued < n; i++ {
			items <- treeItem{parent: parent, name: fmt.Sprintf("%s-%d", prefix, i), depth: d}
			queued++
		}
	}
	mu.Lock()
	enqueue(logicalcluster.Root, "tree", 1)
	mu.Unlock()
	start := time.Now()
	err := parallel(ctx, b.concurrency, items, func(it treeItem) error {
		ws, d, err := b.createOne(ctx, it.parent, it.name)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		lat = append(lat, d)
		done++
		if it.depth < depth {
			enqueue(logicalcluster.Name(ws.Spec.Cluster), it.name, it.depth+1)
		}
		if done == queued {
			close(items)
		}
		return nil
	})
	return float64(done) / time.Since(start).Seconds(), lat, err
}

// latency fills 10 configmaps into every flat workspace (timing the
// creates), times GETs in one workspace, and a wildcard LIST of all of them.
func (b *bench) latency(ctx context.Context, r *results, flat []string, gets int) error {
	type item struct {
		ws string
		i  int
	}
	items := make(chan item, len(flat)*10)
	for _, ws := range flat {
		for i := 0; i < 10; i++ {
			items <- item{ws, i}
		}
	}
	close(items)
	clients := sync.Map{}
	client := func(ws string) (kubernetes.Interface, error) {
		if c, ok := clients.Load(ws); ok {
			return c.(kubernetes.Interface), nil
		}
		cfg := rest.CopyConfig(b.adminConfig)
		cfg.Host = strings.TrimSuffix(cfg.Host, "/") + "/clusters/root:" + ws
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		clients.Store(ws, c)
		return c, nil
	}
	var mu sync.Mutex
	var creates []time.Duration
	err := parallel(ctx, b.concurrency, items, func(it item) error {
		c, err := client(it.ws)
		if err != nil {
			return err
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", it.i)}, Data: map[string]string{"k": "v"}}
		start := time.Now()
		if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create configmap in %s: %w", it.ws, err)
		}
		mu.Lock()
		creates = append(creates, time.Since(start))
		mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	r.CreateP50Ms, r.CreateP99Ms = percentile(creates, 50), percentile(creates, 99)

	c, err := client(flat[0])
	if err != nil {
		return err
	}
	getItems := make(chan int, gets)
	for i := 0; i < gets; i++ {
		getItems <- i
	}
	close(getItems)
	var getLat []time.Duration
	err = parallel(ctx, b.concurrency, getItems, func(i int) error {
		start := time.Now()
		if _, err := c.CoreV1().ConfigMaps("default").Get(ctx, fmt.Sprintf("cm-%d", i%10), metav1.GetOptions{}); err != nil {
			return err
		}
		mu.Lock()
		getLat = append(getLat, time.Since(start))
		mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	r.GetP50Ms, r.GetP99Ms = percentile(getLat, 50), percentile(getLat, 99)

	wildcard := rest.CopyConfig(b.mastersConfig)
	wildcard.Host = strings.TrimSuffix(wildcard.Host, "/") + "/clusters/*"
	wc, err := kubernetes.NewForConfig(wildcard)
	if err != nil {
		return err
	}
	start := time.Now()
	list, err := wc.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("wildcard list: %w", err)
	}
	r.WildcardListMs = float64(time.Since(start).Microseconds()) / 1000
	r.WildcardListItems = len(list.Items)
	return nil
}

// deleteAll deletes every workspace in root and waits until no workspace is
// left on the shard.
func (b *bench) deleteAll(ctx context.Context) error {
	list := &tenancyv1alpha1.WorkspaceList{}
	if err := b.kcp.List(ctx, logicalcluster.Root, kcpclient.Workspaces, list); err != nil {
		return err
	}
	items := make(chan string, len(list.Items))
	for _, ws := range list.Items {
		items <- ws.Name
	}
	close(items)
	if err := parallel(ctx, b.concurrency, items, func(name string) error {
		return b.kcp.Delete(ctx, logicalcluster.Root, kcpclient.Workspaces, name, nil)
	}); err != nil {
		return err
	}
	for {
		all := &tenancyv1alpha1.WorkspaceList{}
		if err := b.masters.List(ctx, logicalcluster.Wildcard, kcpclient.Workspaces, all); err != nil {
			return err
		}
		if len(all.Items) == 0 {
			b.mu.Lock()
			b.created = 0
			b.mu.Unlock()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
