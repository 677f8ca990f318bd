// Package logicalcluster drives the LogicalClusters hosted on this shard:
// it bootstraps a new cluster's content (default namespace, owner as
// cluster-admin), moves it through Scheduling -> Initializing -> Ready, and
// on deletion removes all its content (RBAC last) before letting the
// LogicalCluster go. Terminators hold that deletion until each has released
// the cluster (reconcile_terminators.go).
package logicalcluster

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	corev1alpha1 "github.com/kplane-dev/kplane/pkg/apis/core/v1alpha1"
	"github.com/kplane-dev/kplane/pkg/controllers/loop"
	"github.com/kplane-dev/kplane/pkg/kcpclient"
	"github.com/kplane-dev/kplane/pkg/logicalcluster"
	"github.com/kplane-dev/kplane/pkg/registry/content"
	"github.com/kplane-dev/kplane/pkg/wildcardinformer"
)

// Controller reconciles LogicalClusters.
type Controller struct {
	loop            *loop.Loop
	logicalClusters *wildcardinformer.Informer
	kcp             *kcpclient.Client
	base            *rest.Config
	// externalURL is written into status.URL: <externalURL>/clusters/<path>.
	externalURL string
	// deletion empties clusters being deleted.
	deletion *deletionReconciler
	// released holds clusters whose LogicalCluster this controller has let
	// go, until the informer sees it gone: events still queued for it (its
	// own status and namespace writes) must not empty it a second time.
	released sync.Map
}

// New returns the controller.
// deleteContent deletes everything in a cluster but its LogicalCluster,
// reading at least at resourceVersion, and reports what finalizers hold.
func New(logicalClusters, namespaces *wildcardinformer.Informer, kcp *kcpclient.Client, base *rest.Config, externalURL string,
	deleteContent func(ctx context.Context, cluster logicalcluster.Name, resourceVersion string) (content.Remaining, error)) *Controller {
	c := &Controller{logicalClusters: logicalClusters, kcp: kcp, base: base, externalURL: externalURL}
	c.deletion = &deletionReconciler{
		deleteContent: deleteContent,
		updateStatus: func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) (*corev1alpha1.LogicalCluster, error) {
			updated := &corev1alpha1.LogicalCluster{}
			lc.APIVersion, lc.Kind = corev1alpha1.SchemeGroupVersion.String(), "LogicalCluster"
			err := c.kcp.Update(ctx, cluster, kcpclient.LogicalClusters, lc.Name, lc, updated, "status")
			return updated, err
		},
		update:   c.update,
		released: func(cluster logicalcluster.Name) bool { _, ok := c.released.Load(cluster); return ok },
		release:  func(cluster logicalcluster.Name) { c.released.Store(cluster, struct{}{}) },
	}
	c.loop = loop.New("logicalcluster", c.reconcile)
	logicalClusters.AddHandler(c.loop.Handler(nil))
	logicalClusters.AddHandler(forgetReleased{c})
	// A namespace going away may unblock a cluster's deletion (deletions of
	// other objects held by finalizers are caught by the requeue).
	namespaces.AddHandler(c.loop.Handler(func(obj interface{}) (string, bool) {
		key, err := wildcardinformer.KeyFunc(obj)
		if err != nil {
			return "", false
		}
		cluster, _, _, _ := wildcardinformer.SplitKey(key)
		return wildcardinformer.Key(cluster, "", corev1alpha1.LogicalClusterName), true
	}))
	return c
}

// RequeueOnDeletionOf makes the deletion of an object of inf (a wildcard
// informer of a kind whose objects carry finalizers, such as APIBindings)
// look at its cluster again at once: a cluster being deleted may have been
// waiting for it, and would otherwise wait for the requeue. Call before the
// informers run.
func (c *Controller) RequeueOnDeletionOf(inf *wildcardinformer.Informer) {
	inf.AddHandler(requeueOnDelete{c})
}

// requeueOnDelete enqueues the LogicalCluster of a deleted object.
type requeueOnDelete struct{ c *Controller }

func (requeueOnDelete) OnAdd(interface{})                 {}
func (requeueOnDelete) OnUpdate(interface{}, interface{}) {}
func (h requeueOnDelete) OnDelete(obj interface{}) {
	if key, err := wildcardinformer.KeyFunc(obj); err == nil {
		cluster, _, _, _ := wildcardinformer.SplitKey(key)
		h.c.loop.Enqueue(wildcardinformer.Key(cluster, "", corev1alpha1.LogicalClusterName))
	}
}

// forgetReleased drops a cluster from released once its LogicalCluster is
// gone from the informer.
type forgetReleased struct{ c *Controller }

func (forgetReleased) OnAdd(interface{})                 {}
func (forgetReleased) OnUpdate(interface{}, interface{}) {}
func (f forgetReleased) OnDelete(obj interface{}) {
	if key, err := wildcardinformer.KeyFunc(obj); err == nil {
		cluster, _, _, _ := wildcardinformer.SplitKey(key)
		f.c.released.Delete(cluster)
	}
}

// Run runs the workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers) }

func (c *Controller) reconcile(ctx context.Context, key string) error {
	cluster, _, name, ok := wildcardinformer.SplitKey(key)
	if !ok || name != corev1alpha1.LogicalClusterName {
		return nil
	}
	obj, exists, err := c.logicalClusters.Get(cluster, "", name)
	if err != nil || !exists {
		return err
	}
	lc := obj.(*corev1alpha1.LogicalCluster).DeepCopy()
	if lc.DeletionTimestamp != nil {
		return c.deletion.reconcile(ctx, cluster, lc)
	}
	return c.reconcilePhase(ctx, cluster, lc)
}

// update writes lc (its finalizers).
func (c *Controller) update(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
	lc.APIVersion, lc.Kind = corev1alpha1.SchemeGroupVersion.String(), "LogicalCluster"
	return c.kcp.Update(ctx, cluster, kcpclient.LogicalClusters, lc.Name, lc, &corev1alpha1.LogicalCluster{})
}

// updateStatus writes lc's status.
func (c *Controller) updateStatus(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
	lc.APIVersion, lc.Kind = corev1alpha1.SchemeGroupVersion.String(), "LogicalCluster"
	return c.kcp.Update(ctx, cluster, kcpclient.LogicalClusters, lc.Name, lc, &corev1alpha1.LogicalCluster{}, "status")
}

var requeueSoon = loop.RequeueAfter(500 * time.Millisecond)
