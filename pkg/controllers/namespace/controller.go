// Package namespace deletes the content of terminating namespaces in every
// logical cluster, with Kubernetes' own namespace deletion logic (status
// conditions, finalizers, the "kubernetes" finalizer token) run against the
// namespace's cluster.
package namespace

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/controller/namespace/deletion"

	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Controller finalizes namespaces being deleted.
type Controller struct {
	loop       *loop.Loop
	namespaces *wildcardinformer.Informer
	// base is the shard's loopback configuration without a cluster.
	base *rest.Config
	// clusterDeleting tells whether a logical cluster is being deleted as a
	// whole; its namespaces are emptied by that deletion, not here.
	clusterDeleting func(logicalcluster.Name) bool
}

// Config is what the controller needs.
type Config struct {
	// Namespaces is the shard's wildcard namespace informer.
	Namespaces *wildcardinformer.Informer
	// Loopback is the shard's loopback configuration without a cluster.
	Loopback *rest.Config
	// ClusterDeleting tells whether a logical cluster is being deleted as a
	// whole; its namespaces are emptied by that deletion, not here.
	ClusterDeleting func(logicalcluster.Name) bool
}

// New returns the controller; it registers a handler on Namespaces.
func New(cfg Config) *Controller {
	c := &Controller{namespaces: cfg.Namespaces, base: cfg.Loopback, clusterDeleting: cfg.ClusterDeleting}
	c.loop = loop.New("namespace-deletion", c.reconcile)
	cfg.Namespaces.AddHandler(c.loop.Handler(func(obj interface{}) (string, bool) {
		ns, ok := obj.(*corev1.Namespace)
		if !ok || ns.DeletionTimestamp == nil {
			return "", false
		}
		key, err := wildcardinformer.KeyFunc(ns)
		return key, err == nil
	}))
	return c
}

// Run runs the workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers) }

func (c *Controller) reconcile(ctx context.Context, key string) error {
	cluster, _, name, ok := wildcardinformer.SplitKey(key)
	if !ok {
		return nil
	}
	obj, exists, err := c.namespaces.Get(cluster, "", name)
	if err != nil || !exists {
		return err
	}
	if obj.(*corev1.Namespace).DeletionTimestamp == nil || c.clusterDeleting(cluster) {
		return nil
	}
	cfg := kcpclient.ClusterConfig(c.base, cluster)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	// The deleter discovers twice per call; once is enough.
	cached := memory.NewMemCacheClient(disco)
	deleter := deletion.NewNamespacedResourcesDeleter(ctx, client.CoreV1().Namespaces(), meta, client.CoreV1(),
		cached.ServerPreferredNamespacedResources, corev1.FinalizerKubernetes)
	err = deleter.Delete(ctx, name)
	var remaining *deletion.ResourcesRemainingError
	if errors.As(err, &remaining) {
		return loop.RequeueAfter(time.Duration(remaining.Estimate/2+1) * time.Second)
	}
	return err
}
