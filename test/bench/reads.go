package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Reads (issue 20): GETs spread over many workspaces, parallel GETs of one
// object per worker, and wildcard LISTs of many configmaps.
const (
	rootCAConfigMap = "kube-root-ca.crt" // in the default namespace of every workspace
	fillLabel       = "bench.shardplane.dev/fill"
	rootCATimeout   = 2 * time.Minute
)

// wildcardListResult is the timing of repeated wildcard LISTs at one size.
type wildcardListResult struct {
	Size     int     `json:"size"`    // configmaps asked for
	Items    int     `json:"items"`   // configmaps listed (more than size when more existed)
	Created  int     `json:"created"` // configmaps created for this size, the rest existed
	Repeats  int     `json:"repeats"`
	MedianMs float64 `json:"median_ms"` // JSON, as kubectl and the default client-go config
	MinMs    float64 `json:"min_ms"`
	// ProtoMedianMs and ProtoMinMs are of the same LIST in protobuf, as
	// Kubernetes' own components and client-go configured for it read
	// built-in kinds.
	ProtoMedianMs float64 `json:"proto_median_ms"`
	ProtoMinMs    float64 `json:"proto_min_ms"`
	FillSeconds   float64 `json:"fill_seconds"` // creating the configmaps up to size
}

// coreClient returns a core/v1 REST client at the shard's base URL; the
// requests name their cluster in an absolute path.
func coreClient(config *rest.Config) (rest.Interface, error) {
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return cs.CoreV1().RESTClient(), nil
}

// configMapPath is the path of a configmap in the default namespace of a
// cluster (a logical cluster name or a workspace path).
func configMapPath(cluster logicalcluster.Path, name string) string {
	p := cluster.RequestPath() + "/api/v1/namespaces/default/configmaps"
	if name != "" {
		p += "/" + name
	}
	return p
}

// allClusters returns the logical clusters of every workspace on the shard.
func (b *bench) allClusters(ctx context.Context) ([]logicalcluster.Name, error) {
	list := &tenancyv1alpha1.WorkspaceList{}
	if err := b.masters.List(ctx, logicalcluster.Wildcard, kcpclient.Workspaces, list); err != nil {
		return nil, fmt.Errorf("list workspaces: %w", err)
	}
	out := make([]logicalcluster.Name, 0, len(list.Items))
	for _, ws := range list.Items {
		if ws.Spec.Cluster != "" {
			out = append(out, logicalcluster.Name(ws.Spec.Cluster))
		}
	}
	return out, nil
}

// waitRootCA waits until every one of clusters has its kube-root-ca.crt (a
// controller publishes it after the workspace is Ready), at most
// rootCATimeout, and returns the clusters that have it.
func (b *bench) waitRootCA(ctx context.Context, clusters []logicalcluster.Name, step func(string)) ([]logicalcluster.Name, error) {
	c, err := coreClient(b.mastersConfig)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(rootCATimeout)
	for {
		l := &corev1.ConfigMapList{}
		if err := c.Get().AbsPath(logicalcluster.Wildcard.RequestPath()+"/api/v1/configmaps").
			Param("fieldSelector", "metadata.name="+rootCAConfigMap).Do(ctx).Into(l); err != nil {
			return nil, fmt.Errorf("wildcard list of %s: %w", rootCAConfigMap, err)
		}
		have := map[logicalcluster.Name]bool{}
		for _, cm := range l.Items {
			if c, ok := logicalcluster.ObjectCluster(cm.Annotations); ok {
				have[c] = true
			}
		}
		present := make([]logicalcluster.Name, 0, len(clusters))
		for _, c := range clusters {
			if have[c] {
				present = append(present, c)
			}
		}
		if len(present) == len(clusters) {
			return present, nil
		}
		if time.Now().After(deadline) {
			step(fmt.Sprintf("%d of %d workspaces still have no %s after %s; going on without them", len(clusters)-len(present), len(clusters), rootCAConfigMap, rootCATimeout))
			return present, nil
		}
		if err := sleep(ctx, time.Second); err != nil {
			return nil, err
		}
	}
}

// spreadGets times gets GETs of the kube-root-ca.crt configmap, each in
// the next of all workspaces (by logical cluster name, as kcp-admin), at
// the bench's concurrency and then, the same GETs again, from one client.
func (b *bench) spreadGets(ctx context.Context, r *results, gets int, step func(string)) error {
	clusters, err := b.allClusters(ctx)
	if err != nil {
		return err
	}
	if len(clusters) == 0 {
		return fmt.Errorf("no workspaces to GET from")
	}
	if clusters, err = b.waitRootCA(ctx, clusters, step); err != nil {
		return err
	}
	if len(clusters) == 0 {
		return fmt.Errorf("no workspace has its %s", rootCAConfigMap)
	}
	c, err := coreClient(b.adminConfig)
	if err != nil {
		return err
	}
	items := make([]logicalcluster.Name, gets)
	for i := range items {
		items[i] = clusters[i%len(clusters)]
	}
	get := func(cluster logicalcluster.Name) (time.Duration, error) {
		start := time.Now()
		if err := c.Get().AbsPath(configMapPath(cluster.Path(), rootCAConfigMap)).Do(ctx).Into(&corev1.ConfigMap{}); err != nil {
			return 0, fmt.Errorf("get %s in %s: %w", rootCAConfigMap, cluster, err)
		}
		return time.Since(start), nil
	}
	lat, err := timeEach(ctx, b.concurrency, items, get)
	if err != nil {
		return err
	}
	serial, err := timeEach(ctx, 1, items, get)
	if err != nil {
		return err
	}
	r.GetSpreadSerialP50Ms, r.GetSpreadSerialP99Ms = percentile(serial, 50), percentile(serial, 99)
	r.GetSpreadWorkspaces = len(clusters)
	r.GetSpreadP50Ms, r.GetSpreadP99Ms = percentile(lat, 50), percentile(lat, 99)
	return nil
}

// parallelGets runs workers goroutines for d, each GETting cm-0 (made by
// the latency run) in its own flat workspace, one request after the other,
// and reports GETs per second and their latency.
func (b *bench) parallelGets(ctx context.Context, r *results, flat []string, workers int, d time.Duration) error {
	if len(flat) == 0 {
		return fmt.Errorf("parallel GETs need the flat run's workspaces")
	}
	c, err := coreClient(b.adminConfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for w := 0; w < workers; w++ {
		path := configMapPath(logicalcluster.Root.Path().Join(flat[w%len(flat)]), "cm-0")
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := c.Get().AbsPath(path).Do(ctx).Into(&corev1.ConfigMap{}); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("get %s: %w", path, err)
					}
					mu.Unlock()
					cancel()
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	r.GetParallelWorkers = workers
	r.GetParallelPerSec = float64(len(lat)) / time.Since(start).Seconds()
	r.GetParallelP50Ms, r.GetParallelP99Ms = percentile(lat, 50), percentile(lat, 99)
	return nil
}

// wildcardLists creates configmaps (labelled fillLabel, spread round-robin
// over all workspaces) until each size in sizes is reached, times repeats
// LISTs of /clusters/*/api/v1/configmaps as system:masters at each, and
// deletes the configmaps it created again.
func (b *bench) wildcardLists(ctx context.Context, r *results, sizes []int, repeats int, step func(string)) error {
	if repeats < 1 {
		repeats = 1
	}
	wildcard, err := coreClient(b.mastersConfig)
	if err != nil {
		return err
	}
	protoConfig := rest.CopyConfig(b.mastersConfig)
	protoConfig.ContentType = runtime.ContentTypeProtobuf
	protoConfig.AcceptContentTypes = runtime.ContentTypeProtobuf
	wildcardProto, err := coreClient(protoConfig)
	if err != nil {
		return err
	}
	admin, err := coreClient(b.adminConfig)
	if err != nil {
		return err
	}
	clusters, err := b.allClusters(ctx)
	if err != nil {
		return err
	}
	if len(clusters) == 0 {
		return fmt.Errorf("no workspaces to fill with configmaps")
	}
	// Counted once every workspace has its kube-root-ca.crt, so that the
	// count does not move while filling.
	if _, err := b.waitRootCA(ctx, clusters, step); err != nil {
		return err
	}
	listPath := logicalcluster.Wildcard.RequestPath() + "/api/v1/configmaps"
	listWith := func(c rest.Interface) (int, time.Duration, error) {
		start := time.Now()
		l := &corev1.ConfigMapList{}
		if err := c.Get().AbsPath(listPath).Do(ctx).Into(l); err != nil {
			return 0, 0, fmt.Errorf("wildcard list of configmaps: %w", err)
		}
		return len(l.Items), time.Since(start), nil
	}
	list := func() (int, time.Duration, error) { return listWith(wildcard) }
	have, _, err := list()
	if err != nil {
		return err
	}
	filled := 0 // configmaps created, named fill-<i> in clusters[i%len]
	sort.Ints(sizes)
	defer func() {
		if filled == 0 {
			return
		}
		// Remove them, so that what runs next sees the same shard as
		// without this step.
		used := clusters
		if filled < len(clusters) {
			used = clusters[:filled]
		}
		step(fmt.Sprintf("deleting the %d configmaps added for the LISTs", filled))
		if _, err := timeEach(context.Background(), b.concurrency, used, func(c logicalcluster.Name) (time.Duration, error) {
			return 0, admin.Delete().AbsPath(configMapPath(c.Path(), "")).Param("labelSelector", fillLabel).Do(context.Background()).Error()
		}); err != nil {
			step("deleting the added configmaps: " + err.Error())
		}
	}()
	create := func(from, n int) error {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = from + i
		}
		_, err := timeEach(ctx, b.concurrency, idx, func(i int) (time.Duration, error) {
			c := clusters[i%len(clusters)]
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fill-%d", i), Labels: map[string]string{fillLabel: "true"}},
				Data:       map[string]string{"k": "v"},
			}
			if err := admin.Post().AbsPath(configMapPath(c.Path(), "")).Body(cm).Do(ctx).Error(); err != nil {
				return 0, fmt.Errorf("create configmap in %s: %w", c, err)
			}
			return 0, nil
		})
		return err
	}
	for _, size := range sizes {
		fillStart := time.Now()
		created := 0
		// The count can move while workspaces still get their
		// kube-root-ca.crt: count again after filling, and create or
		// delete (of those just created) the difference.
	fill:
		for round := 0; round < 3 && have != size; round++ {
			switch {
			case have < size:
				n := size - have
				step(fmt.Sprintf("%d configmaps exist; creating %d for %d", have, n, size))
				err := create(filled, n)
				filled, created = filled+n, created+n
				if err != nil {
					return err
				}
			case created > 0:
				n := min(have-size, created)
				for i := filled - n; i < filled; i++ {
					c := clusters[i%len(clusters)]
					if err := admin.Delete().AbsPath(configMapPath(c.Path(), fmt.Sprintf("fill-%d", i))).Do(ctx).Error(); err != nil {
						return fmt.Errorf("delete configmap in %s: %w", c, err)
					}
				}
				filled, created = filled-n, created-n
			default:
				step(fmt.Sprintf("%d configmaps exist already, more than %d", have, size))
				break fill
			}
			if have, _, err = list(); err != nil {
				return err
			}
		}
		res := wildcardListResult{Size: size, Created: created, Repeats: repeats, FillSeconds: time.Since(fillStart).Seconds()}
		var times, protoTimes []time.Duration
		for i := 0; i < repeats; i++ {
			items, d, err := list()
			if err != nil {
				return err
			}
			res.Items = items
			times = append(times, d)
			if _, d, err = listWith(wildcardProto); err != nil {
				return err
			}
			protoTimes = append(protoTimes, d)
		}
		res.MedianMs, res.MinMs = percentile(times, 50), percentile(times, 0)
		res.ProtoMedianMs, res.ProtoMinMs = percentile(protoTimes, 50), percentile(protoTimes, 0)
		r.WildcardLists = append(r.WildcardLists, res)
		switch size {
		case 10000:
			r.WildcardList10kMs, r.WildcardList10kMin, r.WildcardList10kN = res.MedianMs, res.MinMs, res.Items
		case 50000:
			r.WildcardList50kMs, r.WildcardList50kMin, r.WildcardList50kN = res.MedianMs, res.MinMs, res.Items
		}
	}
	return nil
}
