// Package replication copies a shard's own objects into the cache server,
// where other shards read them: APIExports, APIResourceSchemas,
// APIExportEndpointSlices, WorkspaceTypes, Shards, LogicalClusterMigrations,
// and the ClusterRoles
// and ClusterRoleBindings marked with internal.kcp.io/replicate (which the
// Labeler sets on the RBAC that grants bind, use or apiexports/content).
//
// One Controller serves every replicated kind and every logical cluster of
// the shard with one queue and a fixed number of workers. For each kind it
// keeps an informer of the shard's replicas in the cache server
// (/services/cache/shards/<shard>/clusters/*), next to the shard's own
// wildcard informer, and both enqueue: a change on the shard reaches the
// cache within a second; a shard restart re-populates the cache (the first
// lists enqueue every key); a wiped cache is re-populated, and replicas of
// objects deleted while the cache was away are deleted, when its informer
// lists again after the cache returns. Objects of system:* clusters are
// never replicated.
package replication

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Source is one kind the shard replicates.
type Source struct {
	// Kind is the kind as the cache server serves it; the informer's
	// objects are in its version.
	Kind cacheclient.Kind
	// Informer is the shard's own wildcard informer of the kind (typed or
	// unstructured objects, keyed by wildcardinformer.KeyFunc).
	Informer *wildcardinformer.Informer
	// Filter selects the objects to replicate; nil replicates every
	// object. RBAC kinds replicate those MarkedForReplication.
	Filter func(metav1.Object) bool
	// FilterReads are informers of other kinds Filter reads: a change of
	// one of their objects checks this kind's objects of its logical
	// cluster again.
	FilterReads []*wildcardinformer.Informer
}

// Controller replicates the objects of its sources into the cache server.
type Controller struct {
	cache *cacheClient
	loop  *loop.Loop
	// kinds are the replicated kinds by kindKey.
	kinds map[string]*replicatedKind
	order []*replicatedKind
}

// replicatedKind is a source with the informer of its replicas.
type replicatedKind struct {
	source     Source
	replicas   *wildcardinformer.Informer
	reconciler *replicaReconciler
}

// Config is what the controller needs.
type Config struct {
	// ShardName is the shard whose objects are replicated.
	ShardName string
	// Cache is the cache server's base URL, with the credentials of a
	// writer.
	Cache *rest.Config
	// Sources are the kinds replicated, with their informers.
	Sources []Source
}

// New returns a controller that replicates the sources' objects of the
// shard to the cache server. It registers handlers on the sources'
// informers: call it before they run.
func New(cfg Config) (*Controller, error) {
	shard, cache, sources := cfg.ShardName, cfg.Cache, cfg.Sources
	if err := cacheclient.ValidateShard(shard); err != nil || cacheclient.Shard(shard).IsWildcard() {
		return nil, fmt.Errorf("replication: invalid shard name %q: must be 1 to 61 lower-case alphanumerics, '-' or ':'", shard)
	}
	if cache == nil {
		return nil, fmt.Errorf("replication: no cache server configuration")
	}
	client, err := newCacheClient(cache, cacheclient.Shard(shard))
	if err != nil {
		return nil, err
	}
	c := &Controller{cache: client, kinds: make(map[string]*replicatedKind, len(sources))}
	c.loop = loop.New("replication", c.reconcile)
	for _, s := range sources {
		if s.Informer == nil {
			return nil, fmt.Errorf("replication: source %s has no informer", s.Kind.Resource)
		}
		kk := kindKey(s.Kind)
		if _, dup := c.kinds[kk]; dup {
			return nil, fmt.Errorf("replication: %s is listed twice", s.Kind.Resource)
		}
		k := &replicatedKind{
			source:   s,
			replicas: wildcardinformer.NewRemote(client.listWatch(s.Kind), &unstructured.Unstructured{}, "cache-replicas-"+kk),
		}
		k.reconciler = c.newReconciler(shard, k)
		c.kinds[kk] = k
		c.order = append(c.order, k)
		s.Informer.AddHandler(c.loop.Handler(keyOf(kk, true)))
		for _, inf := range s.FilterReads {
			inf.AddHandler(clusterHandler{enqueue: func(cluster logicalcluster.Name) { c.enqueueCluster(kk, k, cluster) }})
		}
		k.replicas.AddHandler(relistHandler{Handler: c.loop.Handler(keyOf(kk, false)), relisted: func() { c.enqueueLocal(kk, k) }})
	}
	return c, nil
}

func (c *Controller) newReconciler(shard string, k *replicatedKind) *replicaReconciler {
	kind := k.source.Kind
	return &replicaReconciler{
		shard:      shard,
		kind:       kind,
		getLocal:   k.source.Informer.Get,
		replicated: replicated(k.source.Filter),
		getReplica: func(cluster logicalcluster.Name, namespace, name string) (*unstructured.Unstructured, bool, error) {
			obj, exists, err := k.replicas.Get(cluster, namespace, name)
			if err != nil || !exists {
				return nil, false, err
			}
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				return nil, false, fmt.Errorf("replica informer holds %T", obj)
			}
			return u, true, nil
		},
		create: func(ctx context.Context, cluster logicalcluster.Name, obj *unstructured.Unstructured) error {
			return c.cache.create(ctx, kind, cluster, obj)
		},
		update: func(ctx context.Context, cluster logicalcluster.Name, obj *unstructured.Unstructured) error {
			return c.cache.update(ctx, kind, cluster, obj)
		},
		delete: func(ctx context.Context, cluster logicalcluster.Name, namespace, name string, uid types.UID) error {
			return c.cache.delete(ctx, kind, cluster, namespace, name, uid)
		},
	}
}

// kindKey names a kind in queue keys: <resource>.<group>.
func kindKey(k cacheclient.Kind) string { return k.Resource.GroupResource().String() }

// keySeparator separates the kind from the object's key in queue keys; a
// logical cluster name never contains it.
const keySeparator = "::"

// keyOf returns the queue key of a changed object of a kind:
// <resource>.<group>::<cluster>|[<namespace>/]<name>. Objects of system
// clusters are skipped when skipSystem is set.
func keyOf(kk string, skipSystem bool) func(obj interface{}) (string, bool) {
	return func(obj interface{}) (string, bool) {
		key, err := wildcardinformer.KeyFunc(obj)
		if err != nil {
			return "", false
		}
		if skipSystem {
			if cluster, _, _, ok := wildcardinformer.SplitKey(key); !ok || cluster.IsSystem() {
				return "", false
			}
		}
		return kk + keySeparator + key, true
	}
}

func (c *Controller) reconcile(ctx context.Context, key string) error {
	kk, objKey, ok := strings.Cut(key, keySeparator)
	if !ok {
		return nil
	}
	k, ok := c.kinds[kk]
	if !ok {
		return nil
	}
	cluster, namespace, name, ok := wildcardinformer.SplitKey(objKey)
	if !ok {
		return nil
	}
	return k.reconciler.reconcile(ctx, cluster, namespace, name)
}

// Run starts the informers of the replicas and, once they and the
// sources' informers (which the shard runs) have listed, the workers; it
// returns when ctx is done. Before the sources have listed every object
// would look deleted, before the replicas have every replica would look
// missing. While the cache server is away at start the workers wait;
// CacheReachable tells why.
func (c *Controller) Run(ctx context.Context, workers int) {
	locals := make([]*wildcardinformer.Informer, 0, len(c.order))
	replicas := make([]*wildcardinformer.Informer, 0, len(c.order))
	for _, k := range c.order {
		locals = append(locals, k.source.Informer)
		replicas = append(replicas, k.replicas)
		go k.replicas.Run(ctx)
	}
	if err := wildcardinformer.WaitForSync(ctx, append(locals, replicas...)...); err != nil {
		return
	}
	c.loop.Run(ctx, workers)
}

// Synced tells whether the replicas of every kind have been listed from
// the cache server once.
func (c *Controller) Synced() bool {
	for _, k := range c.order {
		if !k.replicas.HasSynced() {
			return false
		}
	}
	return true
}

// CacheReachable returns nil when the cache server answered the latest
// request of the controller, or why it did not.
func (c *Controller) CacheReachable() error { return c.cache.reach.get() }

// HealthCheck is a check named cache-replication that fails while the
// cache server does not answer or the replicas have not been listed yet.
// A shard serves without the cache, so it belongs in a condition or an
// informational probe, not in liveness.
func (c *Controller) HealthCheck() healthz.HealthChecker {
	return healthz.NamedCheck("cache-replication", func(*http.Request) error {
		if err := c.CacheReachable(); err != nil {
			return err
		}
		if !c.Synced() {
			return fmt.Errorf("replicas in the cache server not listed yet")
		}
		return nil
	})
}

// relistHandler is the handler of a kind's replicas that, when the
// replicas are listed afresh (the cache server returned, perhaps wiped),
// checks every local object of the kind again: a replica the informer
// never saw (created just before the cache went away) has no deletion to
// report.
type relistHandler struct {
	wildcardinformer.Handler
	relisted func()
}

func (h relistHandler) OnReplace() { h.relisted() }

// clusterHandler reports the logical cluster of every changed object.
type clusterHandler struct{ enqueue func(logicalcluster.Name) }

func (h clusterHandler) changed(obj interface{}) {
	key, err := wildcardinformer.KeyFunc(obj)
	if err != nil {
		return
	}
	if cluster, _, _, ok := wildcardinformer.SplitKey(key); ok && !cluster.IsSystem() {
		h.enqueue(cluster)
	}
}

func (h clusterHandler) OnAdd(obj interface{})       { h.changed(obj) }
func (h clusterHandler) OnUpdate(_, obj interface{}) { h.changed(obj) }
func (h clusterHandler) OnDelete(obj interface{})    { h.changed(obj) }

// enqueueCluster enqueues every local object of a kind in cluster, and
// every replica of it: a replica whose object is no longer wanted goes.
func (c *Controller) enqueueCluster(kk string, k *replicatedKind, cluster logicalcluster.Name) {
	for _, inf := range []*wildcardinformer.Informer{k.source.Informer, k.replicas} {
		objs, _ := inf.List(cluster, "")
		for _, o := range objs {
			if key, err := wildcardinformer.KeyFunc(o); err == nil {
				c.loop.Enqueue(kk + keySeparator + key)
			}
		}
	}
}

// enqueueLocal enqueues every local object of a kind.
func (c *Controller) enqueueLocal(kk string, k *replicatedKind) {
	for _, key := range k.source.Informer.Indexer().ListKeys() {
		if cluster, _, _, ok := wildcardinformer.SplitKey(key); ok && !cluster.IsSystem() {
			c.loop.Enqueue(kk + keySeparator + key)
		}
	}
}
