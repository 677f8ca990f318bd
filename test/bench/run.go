package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	corev1alpha1 "github.com/kplane-dev/kplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kplane-dev/kplane/pkg/apis/tenancy/v1alpha1"
	"github.com/kplane-dev/kplane/pkg/kcpclient"
	"github.com/kplane-dev/kplane/pkg/logicalcluster"
)

func run(ctx context.Context, o options) (results, error) {
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
	step := func(s string) { fmt.Fprintf(os.Stderr, "bench: %s\n", s) }

	time.Sleep(2 * time.Second) // let start-up work settle before the idle reading
	r.RSSIdleBytes, r.HeapIdleBytes = t.memory()
	r.MetricSeriesEmpty = t.metricSeries()

	b, err := newBench(t, o.concurrency)
	if err != nil {
		return r, err
	}
	defer b.stopWatch()

	step(fmt.Sprintf("creating %d workspaces flat under root", o.workspaces))
	flat := b.names("flat", o.workspaces)
	rate, lat, err := b.createFlat(ctx, flat)
	if err != nil {
		return r, err
	}
	r.WSPerSecFlat, r.WSReadyP50Ms, r.WSReadyP99Ms = rate, percentile(lat, 50), percentile(lat, 99)

	step(fmt.Sprintf("creating %d workspaces as a tree (fan-out %d, depth %d)", o.workspaces, o.treeFanout, o.treeDepth))
	rate, lat, err = b.createTree(ctx, o.workspaces, o.treeFanout, o.treeDepth)
	if err != nil {
		return r, err
	}
	r.WSPerSecTree, r.TreeReadyP50Ms, r.TreeReadyP99Ms = rate, percentile(lat, 50), percentile(lat, 99)
	r.MetricSeriesLoaded = t.metricSeries()

	total := b.count()
	for _, p := range parsePoints(o.memoryPoints) {
		if total < p {
			step(fmt.Sprintf("creating workspaces up to %d for the memory reading", p))
			extra := b.names(fmt.Sprintf("mem%d", p), p-total)
			if _, _, err := b.createFlat(ctx, extra); err != nil {
				return r, err
			}
			total = p
		}
		time.Sleep(time.Second)
		rss, heap := t.memory()
		r.Memory = append(r.Memory, memoryPoint{Workspaces: b.count(), RSSBytes: rss, HeapBytes: heap})
	}
	if n := len(r.Memory); n > 0 {
		last := r.Memory[n-1]
		r.RSSBytesPerWorkspace = float64(last.RSSBytes-r.RSSIdleBytes) / float64(last.Workspaces)
		r.HeapBytesPerWS = float64(last.HeapBytes-r.HeapIdleBytes) / float64(last.Workspaces)
	}

	// Configmaps last, so that the memory readings are of empty workspaces.
	step("measuring configmap latency")
	if err := b.latency(ctx, &r, flat, o.requests); err != nil {
		return r, err
	}

	if o.bindings > 0 {
		step(fmt.Sprintf("binding one export in %d workspaces", o.bindings))
		if err := b.bindings(ctx, t, &r, o, flat); err != nil {
			return r, err
		}
	}

	step(fmt.Sprintf("deleting all %d workspaces", b.count()))
	start := time.Now()
	if err := b.deleteAll(ctx); err != nil {
		return r, err
	}
	r.DeleteAllSeconds = time.Since(start).Seconds()
	time.Sleep(2 * time.Second)
	r.RSSAfterDeleteBytes, r.HeapAfterDeleteBytes = t.memory()
	return r, nil
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
	b := &bench{kcp: kcp, masters: masters, adminConfig: t.admin, mastersConfig: t.masters, concurrency: concurrency, ready: map[string]chan *tenancyv1alpha1.Workspace{}}
	ctx, cancel := context.WithCancel(context.Background())
	b.watchEnd = cancel
	w, err := masters.Watch(ctx, logicalcluster.Wildcard, kcpclient.Workspaces, "0")
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch workspaces: %w", err)
	}
	go b.watchReady(w)
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

func (b *bench) watchReady(w watch.Interface) {
	for e := range w.ResultChan() {
		ws, ok := e.Object.(*tenancyv1alpha1.Workspace)
		if !ok || ws.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
			continue
		}
		parent, _ := logicalcluster.ObjectCluster(ws.Annotations)
		b.mu.Lock()
		if ch, ok := b.ready[key(parent, ws.Name)]; ok {
			delete(b.ready, key(parent, ws.Name))
			ch <- ws
		}
		b.mu.Unlock()
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
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
