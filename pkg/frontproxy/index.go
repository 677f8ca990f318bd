package frontproxy

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/features"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Index maps workspace paths to logical clusters and logical clusters to
// the shards that serve them. It follows the Shard objects of root, and on
// every shard the Workspaces (parent cluster and name to child cluster) and
// LogicalClusters (which clusters the shard hosts) with wildcard watches,
// so that a workspace created or deleted anywhere is routable or gone as
// soon as its shard reports it. A path starts at a logical cluster: root,
// any cluster by its name, or a rootless one (a LogicalCluster no
// Workspace owns, such as a user's home) by its kcp.io/path (user:alice).
type Index struct {
	// shardConfig returns the client configuration for a shard's base URL.
	shardConfig func(baseURL string) (*rest.Config, error)

	mu sync.RWMutex
	// shards are the watched shards by name.
	shards map[string]*shardWatch
	// clusters maps a hosted logical cluster to the shard that serves it.
	clusters map[logicalcluster.Name]string
	// copies are the shards that report a cluster's LogicalCluster, and
	// what their copy says: during a move two shards have one.
	copies map[logicalcluster.Name]map[string]clusterCopy
	// routeChanged are closed when a cluster's route changes, for the
	// requests the proxy keeps during a cut-over.
	routeChanged map[logicalcluster.Name]chan struct{}
	// children maps a parent cluster and workspace name to the workspace.
	children map[logicalcluster.Name]map[string]child
	// rootless maps the canonical path of a logical cluster without a
	// parent Workspace to the cluster; rootlessPaths is its inverse.
	rootless      map[logicalcluster.Path]logicalcluster.Name
	rootlessPaths map[logicalcluster.Name]logicalcluster.Path
	// ctx ends every shard's watches.
	ctx context.Context
	// rootSynced tells whether the Shards of root are listed.
	rootSynced func() bool
}

// clusterCopy is what the index keeps of a shard's LogicalCluster.
type clusterCopy struct {
	// serving: not marked served elsewhere
	// (migrationv1alpha1.ServedElsewhereAnnotationKey).
	serving bool
	// held: the cut-over of a move away holds its requests
	// (migrationv1alpha1.WritesHeldAnnotationKey).
	held bool
}

// rank orders the copies a cluster is routed to: one that serves and is
// not held, then a held one, never one served elsewhere. During a
// cut-over the destination's copy serves only once it is verified, so
// the proxy switches to it without waiting for the origin to hand over.
func (c clusterCopy) rank() int {
	switch {
	case !c.serving:
		return 0
	case c.held:
		return 1
	}
	return 2
}

// child is what the index keeps of a Workspace.
type child struct {
	cluster logicalcluster.Name
	phase   corev1alpha1.LogicalClusterPhaseType
	// shard reported the workspace (the parent's shard).
	shard string
	// mount is the URL a mounted workspace is served at (spec.URL, copied
	// from its mount object), nil for a workspace with a logical cluster.
	mount *url.URL
	// mounted tells that the workspace has spec.mount.
	mounted bool
}

// routable tells whether requests to the workspace are forwarded: it has
// a logical cluster and is no longer being scheduled.
func (c child) routable() bool {
	return c.cluster != "" && c.phase != corev1alpha1.LogicalClusterPhaseScheduling
}

// shardWatch is one shard and the watches of its objects.
type shardWatch struct {
	name    string
	baseURL *url.URL
	stop    context.CancelFunc
	// synced tells whether both informers have their initial list.
	synced func() bool
}

// NewIndex returns an empty index; shardConfig returns the credentials to
// watch a shard at a base URL with (privileged: wildcard list and watch).
func NewIndex(shardConfig func(baseURL string) (*rest.Config, error)) *Index {
	return &Index{
		shardConfig:  shardConfig,
		shards:       map[string]*shardWatch{},
		clusters:     map[logicalcluster.Name]string{},
		copies:       map[logicalcluster.Name]map[string]clusterCopy{},
		routeChanged: map[logicalcluster.Name]chan struct{}{},
		children:     map[logicalcluster.Name]map[string]child{},

		rootless:      map[logicalcluster.Path]logicalcluster.Name{},
		rootlessPaths: map[logicalcluster.Name]logicalcluster.Path{},
	}
}

// Run follows the Shards of root with the client of root until ctx ends.
func (x *Index) Run(ctx context.Context, root *rest.Config) error {
	client, err := kcpclient.RESTClient(kcpclient.ClusterConfig(root, logicalcluster.Root), corev1alpha1.SchemeGroupVersion)
	if err != nil {
		return err
	}
	x.mu.Lock()
	x.ctx = ctx
	x.mu.Unlock()
	_, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.NewListWatchFromClient(client, "shards", metav1.NamespaceAll, fields.Everything()),
		ObjectType:    &corev1alpha1.Shard{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { x.shardChanged(obj.(*corev1alpha1.Shard)) },
			UpdateFunc: func(_, obj interface{}) { x.shardChanged(obj.(*corev1alpha1.Shard)) },
			DeleteFunc: func(obj interface{}) {
				if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				if s, ok := obj.(*corev1alpha1.Shard); ok {
					x.removeShard(s.Name)
				}
			},
		},
	})
	x.mu.Lock()
	x.rootSynced = informer.HasSynced
	x.mu.Unlock()
	informer.RunWithContext(ctx)
	x.mu.Lock()
	defer x.mu.Unlock()
	for name := range x.shards {
		x.removeShardLocked(name)
	}
	return nil
}

// HasSynced tells whether the Shards of root and every shard's objects
// are listed.
func (x *Index) HasSynced() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.rootSynced == nil || !x.rootSynced() {
		return false
	}
	for _, s := range x.shards {
		if !s.synced() {
			return false
		}
	}
	return true
}

// shardChanged starts watching a new shard, or a shard that moved.
func (x *Index) shardChanged(s *corev1alpha1.Shard) {
	u, err := url.Parse(s.Spec.BaseURL)
	if err != nil || u.Host == "" {
		klog.Background().Error(err, "Shard has no usable baseURL; not routing to it", "shard", s.Name, "baseURL", s.Spec.BaseURL)
		x.removeShard(s.Name)
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if old := x.shards[s.Name]; old != nil {
		if old.baseURL.String() == u.String() {
			return
		}
		x.removeShardLocked(s.Name)
	}
	if x.ctx == nil || x.ctx.Err() != nil {
		return
	}
	cfg, err := x.shardConfig(s.Spec.BaseURL)
	if err != nil {
		klog.Background().Error(err, "No client for shard", "shard", s.Name)
		return
	}
	wildcard := kcpclient.ClusterConfig(cfg, logicalcluster.Wildcard)
	core, err := kcpclient.RESTClient(wildcard, corev1alpha1.SchemeGroupVersion)
	if err != nil {
		klog.Background().Error(err, "No client for shard", "shard", s.Name)
		return
	}
	tenancy, err := kcpclient.RESTClient(wildcard, tenancyv1alpha1.SchemeGroupVersion)
	if err != nil {
		klog.Background().Error(err, "No client for shard", "shard", s.Name)
		return
	}
	// The handlers keep what routing needs; the reflectors keep no copies
	// of the objects (see handlerStore).
	lcs := newHandlerStore(logicalClusterHandler{x: x, shard: s.Name}, deletedLogicalCluster)
	workspaces := newHandlerStore(workspaceHandler{x: x, shard: s.Name, mounts: features.Enabled(features.WorkspaceMounts)}, deletedWorkspace)
	lcReflector := cache.NewReflectorWithOptions(listOnly{cache.NewListWatchFromClient(core, "logicalclusters", metav1.NamespaceAll, fields.Everything())},
		&corev1alpha1.LogicalCluster{}, lcs, cache.ReflectorOptions{Name: "front-proxy-logicalclusters-" + s.Name})
	wsReflector := cache.NewReflectorWithOptions(listOnly{cache.NewListWatchFromClient(tenancy, "workspaces", metav1.NamespaceAll, fields.Everything())},
		&tenancyv1alpha1.Workspace{}, workspaces, cache.ReflectorOptions{Name: "front-proxy-workspaces-" + s.Name})
	ctx, cancel := context.WithCancel(x.ctx)
	x.shards[s.Name] = &shardWatch{name: s.Name, baseURL: u, stop: cancel, synced: func() bool { return lcs.HasSynced() && workspaces.HasSynced() }}
	go lcReflector.RunWithContext(ctx)
	go wsReflector.RunWithContext(ctx)
	klog.Background().Info("Routing to shard", "shard", s.Name, "baseURL", s.Spec.BaseURL)
}

func (x *Index) removeShard(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.removeShardLocked(name)
}

// removeShardLocked stops watching a shard and forgets what it reported.
func (x *Index) removeShardLocked(name string) {
	s := x.shards[name]
	if s == nil {
		return
	}
	s.stop()
	delete(x.shards, name)
	for cluster, byShard := range x.copies {
		if _, ok := byShard[name]; ok {
			delete(byShard, name)
			x.routeLocked(cluster)
		}
	}
	for parent, byName := range x.children {
		for ws, c := range byName {
			if c.shard == name {
				delete(byName, ws)
			}
		}
		if len(byName) == 0 {
			delete(x.children, parent)
		}
	}
	klog.Background().Info("No longer routing to shard", "shard", name)
}

// Result is the outcome of resolving a path.
type Result int

const (
	// Found: the path names a logical cluster on a known shard.
	Found Result = iota
	// NotFound: no workspace has that path (or the caller may not know).
	NotFound
	// Unavailable: the workspace exists but is not yet placed on a shard,
	// or its shard is not reachable from the index yet.
	Unavailable
	// NotServing: the workspace is in phase Unavailable (a mount whose
	// object is not Ready); kcp's front-proxy answers 503.
	NotServing
)

// Target is where a resolved path is served.
type Target struct {
	Cluster logicalcluster.Name
	Shard   string
	BaseURL *url.URL
	// MountURL, for a mounted workspace, is the URL its requests go to
	// (the rest of the path appended); Cluster, Shard and BaseURL are
	// empty then.
	MountURL *url.URL
}

// Resolve maps a path (root:org:team) or a logical cluster name to its
// logical cluster and shard.
func (x *Index) Resolve(path logicalcluster.Path) (Target, Result) {
	segments := path.Segments()
	if len(segments) == 0 {
		return Target{}, NotFound
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	cluster, rest := x.start(segments)
	for i, name := range rest {
		c, ok := x.children[cluster][name]
		if !ok {
			return Target{}, NotFound
		}
		if c.mounted {
			return resolveMount(c, i == len(rest)-1)
		}
		if !c.routable() {
			return Target{}, Unavailable
		}
		cluster = c.cluster
	}
	shard, ok := x.clusters[cluster]
	if !ok {
		if len(rest) == 0 {
			return Target{}, NotFound
		}
		// Scheduled, but its shard has not reported the logical cluster.
		return Target{}, Unavailable
	}
	s := x.shards[shard]
	if s == nil {
		return Target{}, Unavailable
	}
	return Target{Cluster: cluster, Shard: shard, BaseURL: s.baseURL}, Found
}

// resolveMount resolves a path to a mounted workspace as kcp does: its
// URL while it has one, 503 while it is Unavailable, unknown while it is
// still Scheduling (its mount was never Ready). Paths below a mount name
// nothing the index knows (kcp sends them to the mount's URL, dropping
// the segments past the mount: we do not).
func resolveMount(c child, last bool) (Target, Result) {
	switch {
	case !last:
		return Target{}, NotFound
	case c.phase == corev1alpha1.LogicalClusterPhaseUnavailable:
		return Target{}, NotServing
	case c.mount == nil || scheduling(c.phase):
		return Target{}, NotFound
	}
	return Target{MountURL: c.mount}, Found
}

// scheduling tells whether a phase is (still) Scheduling.
func scheduling(phase corev1alpha1.LogicalClusterPhaseType) bool {
	return phase == "" || phase == corev1alpha1.LogicalClusterPhaseScheduling
}

// start returns the logical cluster a path starts at and the workspace
// names to walk from there: the first segment when it names a cluster the
// index knows, otherwise the longest prefix that is the path of a rootless
// cluster (user:alice of user:alice:project).
func (x *Index) start(segments []string) (logicalcluster.Name, []string) {
	first := logicalcluster.Name(segments[0])
	if _, known := x.clusters[first]; known || x.children[first] != nil {
		return first, segments[1:]
	}
	for i := len(segments); i > 0; i-- {
		if cluster, ok := x.rootless[logicalcluster.Path(strings.Join(segments[:i], ":"))]; ok {
			return cluster, segments[i:]
		}
	}
	return first, segments[1:]
}

// routeLocked picks the shard that serves cluster among the copies of
// the best rank: the current one while it has it, else the first by
// name. A cluster no copy serves is not routed.
func (x *Index) routeLocked(cluster logicalcluster.Name) {
	byShard := x.copies[cluster]
	if len(byShard) == 0 {
		delete(x.copies, cluster)
	}
	best := 0
	for _, c := range byShard {
		best = max(best, c.rank())
	}
	cur, routed := x.clusters[cluster]
	if routed && best > 0 && byShard[cur].rank() == best {
		return
	}
	defer x.notifyRouteLocked(cluster)
	if best == 0 {
		delete(x.clusters, cluster)
		x.forgetRootlessLocked(cluster)
		return
	}
	var next string
	for shard, c := range byShard {
		if c.rank() == best && (next == "" || shard < next) {
			next = shard
		}
	}
	x.clusters[cluster] = next
}

// notifyRouteLocked wakes the requests waiting for cluster's route.
func (x *Index) notifyRouteLocked(cluster logicalcluster.Name) {
	if ch, ok := x.routeChanged[cluster]; ok {
		close(ch)
		delete(x.routeChanged, cluster)
	}
}

// RouteChanged returns a channel that is closed when the shard cluster
// is routed to changes.
func (x *Index) RouteChanged(cluster logicalcluster.Name) <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	ch, ok := x.routeChanged[cluster]
	if !ok {
		ch = make(chan struct{})
		x.routeChanged[cluster] = ch
	}
	return ch
}

// forgetRootlessLocked drops the path of a rootless cluster.
func (x *Index) forgetRootlessLocked(cluster logicalcluster.Name) {
	if p, ok := x.rootlessPaths[cluster]; ok {
		delete(x.rootlessPaths, cluster)
		if x.rootless[p] == cluster {
			delete(x.rootless, p)
		}
	}
}

// ShardURL returns the base URL of a shard, for /services and shard-level
// requests.
func (x *Index) ShardURL(name string) (*url.URL, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s := x.shards[name]
	if s == nil {
		return nil, false
	}
	return s.baseURL, true
}

type logicalClusterHandler struct {
	x     *Index
	shard string
}

func (h logicalClusterHandler) OnAdd(obj interface{})       { h.set(obj, false) }
func (h logicalClusterHandler) OnUpdate(_, obj interface{}) { h.set(obj, false) }
func (h logicalClusterHandler) OnDelete(obj interface{})    { h.set(obj, true) }

func (h logicalClusterHandler) set(obj interface{}, deleted bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	lc, ok := obj.(*corev1alpha1.LogicalCluster)
	if !ok {
		return
	}
	cluster, ok := logicalcluster.ObjectCluster(lc.Annotations)
	if !ok {
		return
	}
	h.x.mu.Lock()
	defer h.x.mu.Unlock()
	byShard := h.x.copies[cluster]
	if byShard == nil {
		byShard = map[string]clusterCopy{}
		h.x.copies[cluster] = byShard
	}
	serving := lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] == ""
	if deleted {
		delete(byShard, h.shard)
	} else {
		byShard[h.shard] = clusterCopy{serving: serving, held: lc.Annotations[migrationv1alpha1.WritesHeldAnnotationKey] != ""}
	}
	h.x.routeLocked(cluster)
	if deleted || !serving || h.x.clusters[cluster] != h.shard {
		return
	}
	if p := logicalcluster.Path(lc.Annotations[logicalcluster.PathAnnotationKey]); lc.Spec.Owner == nil && p != "" && p != cluster.Path() {
		h.x.forgetRootlessLocked(cluster)
		h.x.rootless[p] = cluster
		h.x.rootlessPaths[cluster] = p
	}
}

type workspaceHandler struct {
	x     *Index
	shard string
	// mounts tells whether mounted workspaces are routed (kcp's
	// WorkspaceMounts gate); without, the index leaves them out.
	mounts bool
}

func (h workspaceHandler) OnAdd(obj interface{})       { h.set(obj, false) }
func (h workspaceHandler) OnUpdate(_, obj interface{}) { h.set(obj, false) }
func (h workspaceHandler) OnDelete(obj interface{})    { h.set(obj, true) }

func (h workspaceHandler) set(obj interface{}, deleted bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	ws, ok := obj.(*tenancyv1alpha1.Workspace)
	if !ok {
		return
	}
	parent, ok := logicalcluster.ObjectCluster(ws.Annotations)
	if !ok {
		return
	}
	h.x.mu.Lock()
	defer h.x.mu.Unlock()
	// During a move two shards hold the parent's Workspaces: the copy of
	// the shard that does not serve the parent neither replaces the entry
	// nor, when it goes (the origin's clean-up, a failed move's copy),
	// removes it.
	if owner, routed := h.x.clusters[parent]; routed && owner != h.shard {
		if _, known := h.x.children[parent][ws.Name]; known || deleted {
			return
		}
	}
	// A workspace being deleted is routed until it is gone, which is after
	// its LogicalCluster: terminators and clients work in it meanwhile.
	if deleted {
		if _, routed := h.x.children[parent][ws.Name]; routed && ws.DeletionTimestamp != nil {
			observeLag("delete", ws.DeletionTimestamp.Time)
		}
		delete(h.x.children[parent], ws.Name)
		if len(h.x.children[parent]) == 0 {
			delete(h.x.children, parent)
		}
		return
	}
	byName := h.x.children[parent]
	if byName == nil {
		byName = map[string]child{}
		h.x.children[parent] = byName
	}
	next := child{cluster: logicalcluster.Name(ws.Spec.Cluster), phase: ws.Status.Phase, shard: h.shard}
	if ws.Spec.Mount != nil {
		if !h.mounts {
			delete(byName, ws.Name)
			return
		}
		next = child{phase: ws.Status.Phase, shard: h.shard, mounted: true}
		if u, err := url.Parse(ws.Spec.URL); err == nil && ws.Spec.URL != "" && u.Scheme == "https" {
			next.mount = u
		}
	}
	if prev := byName[ws.Name]; !prev.routable() && next.routable() {
		observeLag("create", ws.CreationTimestamp.Time)
	}
	byName[ws.Name] = next
}

// String describes a target for logs.
func (t Target) String() string { return fmt.Sprintf("%s on shard %s", t.Cluster, t.Shard) }
