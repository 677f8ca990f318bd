package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

// The bindings run binds one export in many workspaces (issue 13).
const (
	benchGroup     = "bench.shardplane.dev"
	benchResource  = "gizmos"
	bindingName    = "gizmos"
	providerName   = "bench-provider"
	freshBindings  = 50
	boundTimeout   = 2 * time.Minute
	firstReqPeriod = 5 * time.Millisecond
	// settle is the pause before a goroutine or memory reading: a consistent
	// read that waited for the watch cache leaves a goroutine behind for the
	// cache's 3 s block timeout (k8s.io/apiserver storage/cacher).
	settle = 4 * time.Second

	watchCacheReadWait = "apiserver_watch_cache_read_wait_seconds"
	workqueueWait      = "workqueue_queue_duration_seconds"
	workqueueWork      = "workqueue_work_duration_seconds"
)

// The series of the work queues and the watch cache the bench reads.
var (
	apibindingQueue  = map[string]string{"name": "apibinding"}
	replicationQueue = map[string]string{"name": "replication"}
	labelerQueue     = map[string]string{"name": "replication-labeler"}
	gizmosLabels     = map[string]string{"group": benchGroup, "resource": benchResource}
)

var (
	apiResourceSchemas = apisv1alpha1.SchemeGroupVersion.WithResource("apiresourceschemas")
	apiExports         = apisv1alpha2.SchemeGroupVersion.WithResource("apiexports")
	apiBindings        = apisv1alpha2.SchemeGroupVersion.WithResource("apibindings")
	gizmos             = schema.GroupVersionResource{Group: benchGroup, Version: "v1", Resource: benchResource}
)

// gizmoSchema is a small namespaced resource with a status subresource.
func gizmoSchema() *apisv1alpha1.APIResourceSchema {
	return &apisv1alpha1.APIResourceSchema{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIResourceSchema"},
		ObjectMeta: metav1.ObjectMeta{Name: "v1." + benchResource + "." + benchGroup},
		Spec: apisv1alpha1.APIResourceSchemaSpec{
			Group: benchGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: benchResource, Singular: "gizmo", Kind: "Gizmo", ListKind: "GizmoList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apisv1alpha1.APIResourceVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: runtime.RawExtension{Raw: []byte(`{"type":"object","properties":{` +
					`"spec":{"type":"object","properties":{"size":{"type":"string","default":"small"},"replicas":{"type":"integer"}}},` +
					`"status":{"type":"object","properties":{"ready":{"type":"boolean"}}}}}`)},
			}},
		},
	}
}

// boundWatch watches APIBindings of all workspaces and reports when the
// expected ones are Bound, with the time the event arrived.
type boundWatch struct {
	mu      sync.Mutex
	waiting map[logicalcluster.Name]chan time.Time
	stop    context.CancelFunc
}

func (b *bench) watchBindings() (*boundWatch, error) {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := b.masters.Watch(ctx, logicalcluster.Wildcard, apiBindings, "0")
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch apibindings: %w", err)
	}
	bw := &boundWatch{waiting: map[logicalcluster.Name]chan time.Time{}, stop: cancel}
	go resumeWatch(ctx, b.masters, apiBindings, w, bw.handle)
	return bw, nil
}

func (bw *boundWatch) handle(e watch.Event) {
	now := time.Now()
	ab, ok := e.Object.(*apisv1alpha2.APIBinding)
	if !ok || ab.Name != bindingName || ab.Status.Phase != apisv1alpha2.APIBindingPhaseBound {
		return
	}
	cluster, _ := logicalcluster.ObjectCluster(ab.Annotations)
	bw.mu.Lock()
	defer bw.mu.Unlock()
	if ch, ok := bw.waiting[cluster]; ok {
		delete(bw.waiting, cluster)
		ch <- now
	}
}

func (bw *boundWatch) expect(cluster logicalcluster.Name) chan time.Time {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	ch := make(chan time.Time, 1)
	bw.waiting[cluster] = ch
	return ch
}

// bindingRun holds what the phases of the bindings run share.
type bindingRun struct {
	*bench
	watch    *boundWatch
	provider logicalcluster.Name
	identity string
	http     *http.Client // kcp-admin
}

// bindings runs the APIBinding phase: one export bound in n workspaces
// (the flat run's, topped up), then objects in each, a wildcard list by
// identity and the first request after a fresh binding.
func (b *bench) bindings(ctx context.Context, t *target, r *results, o options, flat []string) error {
	step := func(s string) { fmt.Fprintf(os.Stderr, "bench: %s\n", s) }
	n := o.bindings
	r.Bindings, r.ObjectsPerBinding = n, o.objectsPerBinding

	step("publishing a schema and an export in " + providerName)
	ws, _, err := b.createOne(ctx, logicalcluster.Root, providerName)
	if err != nil {
		return err
	}
	br := &bindingRun{bench: b, provider: logicalcluster.Name(ws.Spec.Cluster)}
	if br.http, err = rest.HTTPClientFor(b.adminConfig); err != nil {
		return err
	}
	if br.identity, err = br.publish(ctx); err != nil {
		return err
	}

	reuse := min(n, len(flat))
	step(fmt.Sprintf("workspaces for %d bindings: %d of the flat run, %d new, %d more for fresh bindings", n, reuse, n-reuse, freshBindings))
	clusters, err := b.clustersOf(ctx, flat[:reuse])
	if err != nil {
		return err
	}
	more, err := b.readyWorkspaces(ctx, b.names("bind", n-reuse))
	if err != nil {
		return err
	}
	clusters = append(clusters, more...)
	fresh, err := b.readyWorkspaces(ctx, b.names("fresh", freshBindings))
	if err != nil {
		return err
	}

	if br.watch, err = b.watchBindings(); err != nil {
		return err
	}
	defer br.watch.stop()
	time.Sleep(settle)
	rssBefore, heapBefore := t.memory()
	goroutinesBefore := t.gauge("go_goroutines")

	step(fmt.Sprintf("binding the export in %d workspaces", n))
	queued, worked := t.mark(workqueueWait, apibindingQueue), t.mark(workqueueWork, apibindingQueue)
	start := time.Now()
	lat, err := timeEach(ctx, b.concurrency, clusters, func(c logicalcluster.Name) (time.Duration, error) {
		created, bound, err := br.bind(ctx, c)
		return bound.Sub(created), err
	})
	if err != nil {
		return err
	}
	r.BindingsPerSec = float64(n) / time.Since(start).Seconds()
	r.BindingBoundP50Ms, r.BindingBoundP99Ms = percentile(lat, 50), percentile(lat, 99)
	r.APIBindingQueueWaitMeanMs, _ = t.meanMsSince(queued)
	r.APIBindingWorkMeanMs, r.APIBindingReconciles = t.meanMsSince(worked)

	// One request in every workspace, so that whatever the shard builds
	// per workspace to serve a bound resource is in the memory reading.
	step(fmt.Sprintf("listing %s once in each of the %d workspaces", benchResource, n))
	start = time.Now()
	if err := br.list(ctx, clusters[0]); err != nil {
		return err
	}
	r.BoundSchemaFirstListMs = ms(time.Since(start))
	if _, err := timeEach(ctx, b.concurrency, clusters[1:], func(c logicalcluster.Name) (time.Duration, error) {
		return 0, br.list(ctx, c)
	}); err != nil {
		return err
	}

	time.Sleep(settle)
	rssAfter, heapAfter := t.memory()
	goroutinesAfter := t.gauge("go_goroutines")
	r.BindingMemory = []memoryPoint{
		{Workspaces: b.count(), RSSBytes: rssBefore, HeapBytes: heapBefore},
		{Workspaces: b.count(), RSSBytes: rssAfter, HeapBytes: heapAfter},
	}
	r.HeapBytesPerBinding = float64(heapAfter-heapBefore) / float64(n)
	r.RSSBytesPerBinding = float64(rssAfter-rssBefore) / float64(n)
	r.GoroutinesBeforeBindings, r.GoroutinesAfterBindings = goroutinesBefore, goroutinesAfter
	r.GoroutinesPerBinding = float64(goroutinesAfter-goroutinesBefore) / float64(n)

	step(fmt.Sprintf("timing the first request after %d fresh bindings, one at a time", len(fresh)))
	// A LIST without resourceVersion is a consistent read from the watch
	// cache: it waits until the cache has seen etcd's current revision.
	// The shard's metric of that wait says how much of the latency it is.
	waited := t.mark(watchCacheReadWait, gizmosLabels)
	var first []time.Duration
	for _, c := range fresh {
		_, bound, err := br.bind(ctx, c)
		if err != nil {
			return err
		}
		d, retries, err := br.firstList(ctx, c, bound)
		if err != nil {
			return err
		}
		first = append(first, d)
		r.FreshBindingRetries += retries
	}
	r.FreshFirstRequestP50Ms, r.FreshFirstRequestP99Ms = percentile(first, 50), percentile(first, 99)
	r.FreshCacheWaitMeanMs, _ = t.meanMsSince(waited)

	if o.objectsPerBinding > 0 {
		step(fmt.Sprintf("creating %d %s in each of the %d workspaces", o.objectsPerBinding, benchResource, n))
		if err := br.fill(ctx, clusters, o.objectsPerBinding); err != nil {
			return err
		}
		time.Sleep(settle)
		_, heapObjects := t.memory()
		r.HeapBytesPerBoundObject = float64(heapObjects-heapAfter) / float64(n*o.objectsPerBinding)
	}

	step("wildcard LIST by identity")
	return br.wildcardList(ctx, r)
}

// timeEach runs fn for every item with the given concurrency and collects
// the durations it returns.
func timeEach[T any](ctx context.Context, concurrency int, all []T, fn func(T) (time.Duration, error)) ([]time.Duration, error) {
	items := make(chan T, len(all))
	for _, it := range all {
		items <- it
	}
	close(items)
	var mu sync.Mutex
	out := make([]time.Duration, 0, len(all))
	err := parallel(ctx, concurrency, items, func(it T) error {
		d, err := fn(it)
		if err != nil {
			return err
		}
		mu.Lock()
		out = append(out, d)
		mu.Unlock()
		return nil
	})
	return out, err
}

// publish creates the schema and an export of it in the provider workspace
// and returns the export's identity hash once it has one.
func (br *bindingRun) publish(ctx context.Context) (string, error) {
	s := gizmoSchema()
	if err := br.kcp.Create(ctx, br.provider, apiResourceSchemas, s, &apisv1alpha1.APIResourceSchema{}); err != nil {
		return "", fmt.Errorf("create APIResourceSchema: %w", err)
	}
	export := &apisv1alpha2.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: benchResource},
		Spec: apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{
			Name: benchResource, Group: benchGroup, Schema: s.Name,
		}}},
	}
	if err := br.kcp.Create(ctx, br.provider, apiExports, export, &apisv1alpha2.APIExport{}); err != nil {
		return "", fmt.Errorf("create APIExport: %w", err)
	}
	got := &apisv1alpha2.APIExport{}
	if err := framework.PollEvery(ctx, 50*time.Millisecond, boundTimeout, func(ctx context.Context) error {
		if err := br.kcp.Get(ctx, br.provider, apiExports, benchResource, got); err != nil {
			return err
		}
		if got.Status.IdentityHash == "" {
			return errors.New("no identity hash yet")
		}
		return nil
	}); err != nil {
		return "", fmt.Errorf("APIExport %s has no identity after %s: %w", benchResource, boundTimeout, err)
	}
	return got.Status.IdentityHash, nil
}

// bind binds the export in cluster and returns when the binding was
// created and when it was seen Bound.
func (br *bindingRun) bind(ctx context.Context, cluster logicalcluster.Name) (created, bound time.Time, err error) {
	ch := br.watch.expect(cluster)
	ab := &apisv1alpha2.APIBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: bindingName},
		Spec: apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{
			Path: string(br.provider), Name: benchResource,
		}}},
	}
	created = time.Now()
	if err := br.kcp.Create(ctx, cluster, apiBindings, ab, &apisv1alpha2.APIBinding{}); err != nil {
		return created, bound, fmt.Errorf("create APIBinding in %s: %w", cluster, err)
	}
	select {
	case bound = <-ch:
		return created, bound, nil
	case <-time.After(boundTimeout):
		return created, bound, fmt.Errorf("APIBinding in %s not Bound after %s", cluster, boundTimeout)
	case <-ctx.Done():
		return created, bound, ctx.Err()
	}
}

// gizmos returns the bound resource in cluster, as kcp-admin.
func (br *bindingRun) gizmos(cluster logicalcluster.Name) (dynamic.NamespaceableResourceInterface, error) {
	c, err := dynamic.NewForConfigAndClient(kcpclient.ClusterConfig(br.adminConfig, cluster), br.http)
	if err != nil {
		return nil, err
	}
	return c.Resource(gizmos), nil
}

func (br *bindingRun) list(ctx context.Context, cluster logicalcluster.Name) error {
	g, err := br.gizmos(cluster)
	if err != nil {
		return err
	}
	if _, err := g.List(ctx, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("list %s in %s: %w", benchResource, cluster, err)
	}
	return nil
}

// firstList lists the bound resource in cluster until it is served and
// returns the time from bound to the first success and how many requests
// were refused before.
func (br *bindingRun) firstList(ctx context.Context, cluster logicalcluster.Name, bound time.Time) (time.Duration, int, error) {
	g, err := br.gizmos(cluster)
	if err != nil {
		return 0, 0, err
	}
	for retries := 0; ; retries++ {
		_, err := g.List(ctx, metav1.ListOptions{})
		if err == nil {
			return time.Since(bound), retries, nil
		}
		if !apierrors.IsNotFound(err) || time.Since(bound) > boundTimeout {
			return 0, retries, fmt.Errorf("first list of %s in %s: %w", benchResource, cluster, err)
		}
		select {
		case <-ctx.Done():
			return 0, retries, ctx.Err()
		case <-time.After(firstReqPeriod):
		}
	}
}

// fill creates per objects of the bound resource in every cluster.
func (br *bindingRun) fill(ctx context.Context, clusters []logicalcluster.Name, per int) error {
	type item struct {
		cluster logicalcluster.Name
		i       int
	}
	items := make(chan item, len(clusters)*per)
	for _, c := range clusters {
		for i := 0; i < per; i++ {
			items <- item{c, i}
		}
	}
	close(items)
	resources := sync.Map{}
	return parallel(ctx, br.concurrency, items, func(it item) error {
		g, ok := resources.Load(it.cluster)
		if !ok {
			c, err := br.gizmos(it.cluster)
			if err != nil {
				return err
			}
			g, _ = resources.LoadOrStore(it.cluster, c)
		}
		obj := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": gizmos.GroupVersion().String(), "kind": "Gizmo",
			"metadata": map[string]interface{}{"name": fmt.Sprintf("gizmo-%d", it.i)},
			"spec":     map[string]interface{}{"replicas": int64(it.i)},
		}}
		if _, err := g.(dynamic.NamespaceableResourceInterface).Namespace("default").Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create %s in %s: %w", benchResource, it.cluster, err)
		}
		return nil
	})
}

// wildcardList times one LIST of /clusters/*/apis/<group>/v1/<resource>:<identity>
// as system:masters.
func (br *bindingRun) wildcardList(ctx context.Context, r *results) error {
	cfg := rest.CopyConfig(br.mastersConfig)
	cfg.Host = strings.TrimSuffix(cfg.Host, "/") + logicalcluster.Wildcard.RequestPath()
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	res := gizmos
	res.Resource += ":" + br.identity
	start := time.Now()
	list, err := c.Resource(res).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("wildcard list by identity: %w", err)
	}
	r.WildcardIdentityListMs = ms(time.Since(start))
	r.WildcardIdentityListItems = len(list.Items)
	return nil
}

// clustersOf returns the logical clusters of workspaces in root.
func (b *bench) clustersOf(ctx context.Context, names []string) ([]logicalcluster.Name, error) {
	if len(names) == 0 {
		return nil, nil
	}
	list := &tenancyv1alpha1.WorkspaceList{}
	if err := b.kcp.List(ctx, logicalcluster.Root, kcpclient.Workspaces, list); err != nil {
		return nil, fmt.Errorf("list workspaces in root: %w", err)
	}
	byName := map[string]logicalcluster.Name{}
	for _, ws := range list.Items {
		byName[ws.Name] = logicalcluster.Name(ws.Spec.Cluster)
	}
	out := make([]logicalcluster.Name, 0, len(names))
	for _, n := range names {
		c, ok := byName[n]
		if !ok || c == "" {
			return nil, fmt.Errorf("workspace root:%s has no logical cluster", n)
		}
		out = append(out, c)
	}
	return out, nil
}

// readyWorkspaces creates workspaces under root and returns their logical
// clusters once all are Ready.
func (b *bench) readyWorkspaces(ctx context.Context, names []string) ([]logicalcluster.Name, error) {
	items := make(chan string, len(names))
	for _, n := range names {
		items <- n
	}
	close(items)
	var mu sync.Mutex
	byName := map[string]logicalcluster.Name{}
	err := parallel(ctx, b.concurrency, items, func(name string) error {
		ws, _, err := b.createOne(ctx, logicalcluster.Root, name)
		if err != nil {
			return err
		}
		mu.Lock()
		byName[name] = logicalcluster.Name(ws.Spec.Cluster)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]logicalcluster.Name, 0, len(names))
	for _, n := range names {
		out = append(out, byName[n])
	}
	return out, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
