// Package cachedresource publishes the objects ClusterCachedResources
// select into the cache server, as kcp's cachedresources controller does:
// each ClusterCachedResource of the shard gets its identity (the secret its
// spec.identity names, or kcp-system/<name>, written into spec.identity and
// created with a random key; the key's hex SHA-256 is status.identityHash), and, once its resource is
// found served and cluster-scoped in the workspace, a replicator that
// watches the selected objects there and keeps one CachedObject copy of
// each in the cache server, below the shard and the logical cluster, until
// the ClusterCachedResource is deleted, when the copies go first
// (finalizer cache.kcp.io/clustercachedresource). status.resourceCounts
// counts the objects and their copies; the conditions are kcp's
// (IdentityValid, ResourceValid, ReplicationStarted).
//
// ClusterCachedResourceEndpointSlices get the URL of the view of the
// copies (pkg/virtual/replication) in status.endpoints.
package cachedresource

import (
	"context"
	"fmt"
	"sync"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Config is what the controller needs.
type Config struct {
	// ShardName is the shard the copies come from.
	ShardName string
	// CachedResources and EndpointSlices are the shard's wildcard
	// informers of cache.kcp.io.
	CachedResources, EndpointSlices *wildcardinformer.Informer
	// KCP writes the objects' status and finalizers as the system.
	KCP *kcpclient.Client
	// Loopback reads secrets, discovery and the published objects of any
	// logical cluster of the shard.
	Loopback *rest.Config
	// Cache is the cache server's base URL with a writer's credentials.
	Cache *rest.Config
	// ViewURL returns the URL of the view of an endpoint slice's copies.
	ViewURL func(cluster logicalcluster.Name, slice string) string
	// APIExports are the shard's APIExports, then the cache server's
	// replicas, which slices' spec.export names; nil: not checked.
	APIExports []*wildcardinformer.Informer
}

// Controller reconciles the ClusterCachedResources and their endpoint
// slices of the shard.
type Controller struct {
	cfg    Config
	loop   *loop.Loop
	slices *loop.Loop
	cache  *cacheWriter

	mu          sync.Mutex
	replicators map[string]*replicator
	// runCtx is the context of Run, which replicators run under.
	runCtx context.Context
}

// New returns the controller and registers its handlers; call before the
// informers run.
func New(cfg Config) (*Controller, error) {
	cw, err := newCacheWriter(cfg.Cache, cfg.ShardName)
	if err != nil {
		return nil, err
	}
	c := &Controller{cfg: cfg, cache: cw, replicators: map[string]*replicator{}}
	c.loop = loop.New("clustercachedresource", c.reconcile)
	c.slices = loop.New("clustercachedresourceendpointslice", c.reconcileSlice)
	cfg.CachedResources.AddHandler(c.loop.Handler(nil))
	cfg.EndpointSlices.AddHandler(c.slices.Handler(nil))
	// A slice names its ClusterCachedResource: look at the slices of a
	// cluster again when one of its ClusterCachedResources changes.
	cfg.CachedResources.AddHandler(c.loop.Handler(func(obj interface{}) (string, bool) {
		if r, ok := obj.(*cachev1alpha1.ClusterCachedResource); ok {
			if cluster, ok := logicalcluster.ObjectCluster(r.Annotations); ok {
				c.enqueueSlicesOf(cluster)
			}
		}
		return "", false
	}))
	// A slice names its APIExport: look again when an export of its
	// workspace changes.
	if len(cfg.APIExports) > 0 && cfg.APIExports[0] != nil {
		cfg.APIExports[0].AddHandler(c.slices.Handler(func(obj interface{}) (string, bool) {
			if m, ok := obj.(interface{ GetAnnotations() map[string]string }); ok {
				if cluster, ok := logicalcluster.ObjectCluster(m.GetAnnotations()); ok {
					c.enqueueSlicesOf(cluster)
				}
			}
			return "", false
		}))
	}
	return c, nil
}

// Run runs the workers until ctx is done, then stops every replicator.
func (c *Controller) Run(ctx context.Context, workers int) {
	c.mu.Lock()
	c.runCtx = ctx
	c.mu.Unlock()
	go c.slices.Run(ctx, 1)
	c.loop.Run(ctx, workers)
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, r := range c.replicators {
		r.stop()
		delete(c.replicators, key)
	}
}

func (c *Controller) get(cluster logicalcluster.Name, name string) (*cachev1alpha1.ClusterCachedResource, error) {
	obj, exists, err := c.cfg.CachedResources.Get(cluster, "", name)
	if err != nil || !exists {
		return nil, err
	}
	return obj.(*cachev1alpha1.ClusterCachedResource), nil
}

func (c *Controller) reconcile(ctx context.Context, key string) error {
	cluster, _, name, ok := wildcardinformer.SplitKey(key)
	if !ok {
		return nil
	}
	r, err := c.get(cluster, name)
	if err != nil {
		return err
	}
	if r == nil {
		// Gone without our finalizer (the gate was off meanwhile): its
		// replicator stops; copies left behind are the finalizer's to
		// remove, which it could not.
		c.stopReplicator(key)
		return nil
	}
	r = r.DeepCopy()
	if r.DeletionTimestamp != nil {
		return c.finalize(ctx, cluster, key, r)
	}
	// The finalizer, and the default identity secret written into the
	// spec as kcp writes it; the informer sees the update and enqueues.
	if !hasFinalizer(r) || r.Spec.Identity == nil || r.Spec.Identity.SecretRef == nil {
		if !hasFinalizer(r) {
			r.Finalizers = append(r.Finalizers, cachev1alpha1.ClusterCachedResourceFinalizer)
		}
		if r.Spec.Identity == nil || r.Spec.Identity.SecretRef == nil {
			r.Spec.Identity = &cachev1alpha1.Identity{SecretRef: &cachev1alpha1.SecretReference{Namespace: DefaultIdentitySecretNamespace, Name: r.Name}}
		}
		r.APIVersion, r.Kind = cachev1alpha1.SchemeGroupVersion.String(), "ClusterCachedResource"
		return ignoreNotFound(c.cfg.KCP.Update(ctx, cluster, kcpclient.ClusterCachedResources, r.Name, r, &cachev1alpha1.ClusterCachedResource{}))
	}
	old := r.Status.DeepCopy()
	reconcileErr := c.reconcileReplication(ctx, cluster, key, r)
	if !apiequality.Semantic.DeepEqual(*old, r.Status) {
		if err := c.updateStatus(ctx, cluster, r); err != nil {
			return err
		}
	}
	return reconcileErr
}

func (c *Controller) updateStatus(ctx context.Context, cluster logicalcluster.Name, r *cachev1alpha1.ClusterCachedResource) error {
	r.APIVersion, r.Kind = cachev1alpha1.SchemeGroupVersion.String(), "ClusterCachedResource"
	return ignoreNotFound(c.cfg.KCP.Update(ctx, cluster, kcpclient.ClusterCachedResources, r.Name, r, &cachev1alpha1.ClusterCachedResource{}, "status"))
}

// finalize stops the replicator, deletes every copy and lets the object go.
func (c *Controller) finalize(ctx context.Context, cluster logicalcluster.Name, key string, r *cachev1alpha1.ClusterCachedResource) error {
	if !hasFinalizer(r) {
		return nil
	}
	c.stopReplicator(key)
	if r.Status.Phase != cachev1alpha1.ClusterCachedResourcePhaseDeleting {
		r.Status.Phase = cachev1alpha1.ClusterCachedResourcePhaseDeleting
		if err := c.updateStatus(ctx, cluster, r); err != nil {
			return err
		}
		return nil
	}
	if err := c.cache.deleteAll(ctx, cluster, r.Name); err != nil {
		return fmt.Errorf("delete the copies of %s|%s: %w", cluster, r.Name, err)
	}
	var kept []string
	for _, f := range r.Finalizers {
		if f != cachev1alpha1.ClusterCachedResourceFinalizer {
			kept = append(kept, f)
		}
	}
	r.Finalizers = kept
	r.APIVersion, r.Kind = cachev1alpha1.SchemeGroupVersion.String(), "ClusterCachedResource"
	klog.FromContext(ctx).V(2).Info("Deleted the copies of a ClusterCachedResource", "cluster", cluster, "name", r.Name)
	return ignoreNotFound(c.cfg.KCP.Update(ctx, cluster, kcpclient.ClusterCachedResources, r.Name, r, &cachev1alpha1.ClusterCachedResource{}))
}

func (c *Controller) stopReplicator(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.replicators[key]; ok {
		r.stop()
		delete(c.replicators, key)
	}
}

func hasFinalizer(r *cachev1alpha1.ClusterCachedResource) bool {
	for _, f := range r.Finalizers {
		if f == cachev1alpha1.ClusterCachedResourceFinalizer {
			return true
		}
	}
	return false
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
