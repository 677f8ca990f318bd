// Package logicalcluster drives the LogicalClusters hosted on this shard:
// it bootstraps a new cluster's content (default namespace, owner as
// cluster-admin), moves it through Scheduling -> Initializing -> Ready, and
// on deletion removes all its content (RBAC last) before letting the
// LogicalCluster go. Terminators hold that deletion until each has released
// the cluster (reconcile_terminators.go).
package logicalcluster

import (
	"context"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/registry/content"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Controller reconciles LogicalClusters.
type Controller struct {
	loop            *loop.Loop
	logicalClusters *wildcardinformer.Informer
	kcp             *kcpclient.Client
	base            *rest.Config
	// httpClient is base's, shared by the clients of every cluster.
	httpClient *http.Client
	// createObjects creates objects in a cluster in-process, leaving
	// existing ones alone, and namespaceObjects are the objects every
	// namespace holds (its service account and root CA config map); with
	// both set, a new cluster's bootstrap creates its namespaces, their
	// objects and the owner's binding in-process (see BootstrapInProcess);
	// without, its namespaces and the binding through base.
	createObjects    func(ctx context.Context, cluster logicalcluster.Name, objs ...runtime.Object) error
	namespaceObjects func(namespace string) []runtime.Object
	// updateBootstrapStatus writes the status of a cluster that leaves
	// Scheduling: updateStatus, or in-process (BootstrapStatusInProcess).
	updateBootstrapStatus func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error
	// externalURL is written into status.URL: <externalURL>/clusters/<path>.
	externalURL string
	// deletion empties clusters being deleted.
	deletion *deletionReconciler
	// released holds clusters whose LogicalCluster this controller has let
	// go, until the informer sees it gone: events still queued for it (its
	// own status and namespace writes) must not empty it a second time.
	released sync.Map
	// written skips reconciles of LogicalClusters whose informer copy
	// predates this controller's last write of them.
	written loop.Written
}

// New returns the controller.
// deleteContent deletes everything in a cluster but its LogicalCluster,
// reading at least at resourceVersion, and reports what finalizers hold.
func New(logicalClusters, namespaces *wildcardinformer.Informer, kcp *kcpclient.Client, base *rest.Config, externalURL string,
	deleteContent func(ctx context.Context, cluster logicalcluster.Name, resourceVersion string) (content.Remaining, error)) *Controller {
	c := &Controller{logicalClusters: logicalClusters, kcp: kcp, base: base, externalURL: externalURL}
	c.updateBootstrapStatus = c.updateStatus
	if httpClient, err := rest.HTTPClientFor(base); err == nil {
		c.httpClient = httpClient
	}
	c.deletion = &deletionReconciler{
		deleteContent: deleteContent,
		updateStatus: func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) (*corev1alpha1.LogicalCluster, error) {
			return c.write(ctx, cluster, lc, "status")
		},
		update:   c.update,
		released: func(cluster logicalcluster.Name) bool { _, ok := c.released.Load(cluster); return ok },
		release:  func(cluster logicalcluster.Name) { c.released.Store(cluster, struct{}{}) },
		now:      time.Now,
	}
	c.loop = loop.New("logicalcluster", c.reconcile)
	logicalClusters.AddHandler(c.loop.Handler(nil))
	logicalClusters.AddHandler(forgetReleased{c})
	// A namespace going away may unblock a cluster's deletion (deletions of
	// other objects held by finalizers are caught by the requeue). Other
	// namespace events, those of every new cluster's bootstrap among them,
	// concern no LogicalCluster.
	c.RequeueOnDeletionOf(namespaces)
	return c
}

// BootstrapInProcess makes the bootstrap of a new cluster create its
// namespaces, each namespace's objects (namespaceObjects) and the owner's
// ClusterRoleBinding with create, in-process. Call before Run.
func (c *Controller) BootstrapInProcess(create func(ctx context.Context, cluster logicalcluster.Name, objs ...runtime.Object) error, namespaceObjects func(namespace string) []runtime.Object) {
	c.createObjects, c.namespaceObjects = create, namespaceObjects
}

// BootstrapStatusInProcess makes the status write that ends a new
// cluster's Scheduling (to Initializing or Ready) go through update, an
// in-process write of the LogicalCluster's status as the shard itself, as
// the bootstrap's creates do: until that write nobody but the system
// reaches the cluster, so no admission of that cluster has a say, and the
// only check of a status write, that it comes from the system, holds. Call
// before Run.
func (c *Controller) BootstrapStatusInProcess(update inProcessWrite) {
	c.updateBootstrapStatus = c.recorded(update)
}

// DeletionInProcess makes the writes of a deleted cluster's finalizers
// (kcp.io/has-terminators, and the removal of the deletion finalizer that
// lets the LogicalCluster go) go through update, an in-process write of
// the LogicalCluster as the shard itself: the cluster is being deleted,
// the system alone drives it from then on, and the admission of
// LogicalClusters lets the system change any finalizer. Call before Run.
func (c *Controller) DeletionInProcess(update inProcessWrite) {
	c.deletion.update = c.recorded(update)
}

// inProcessWrite writes a LogicalCluster in-process as the shard and
// returns the stored one.
type inProcessWrite func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) (*corev1alpha1.LogicalCluster, error)

// recorded writes through update and, as write does, records the stored
// resourceVersion, so that reconciles of older copies are skipped.
func (c *Controller) recorded(update inProcessWrite) func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
	return func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
		updated, err := update(ctx, cluster, lc)
		if err != nil {
			return err
		}
		c.written.RecordWrite(wildcardinformer.Key(cluster, "", lc.Name), updated)
		return nil
	}
}

// RequeueOnDeletionOf makes the deletion of an object of inf (a wildcard
// informer of a kind whose objects carry finalizers, such as APIBindings)
// look at its cluster again at once: a cluster being deleted may have been
// waiting for it, and would otherwise wait for the requeue. Call before the
// informers run.
func (c *Controller) RequeueOnDeletionOf(inf *wildcardinformer.Informer) {
	inf.AddHandler(requeueOnDelete{c})
}

// requeueOnDelete enqueues the LogicalCluster of a deleted object when it
// is being deleted too.
type requeueOnDelete struct{ c *Controller }

func (requeueOnDelete) OnAdd(interface{})                 {}
func (requeueOnDelete) OnUpdate(interface{}, interface{}) {}
func (h requeueOnDelete) OnDelete(obj interface{}) {
	key, err := wildcardinformer.KeyFunc(obj)
	if err != nil {
		return
	}
	cluster, _, _, _ := wildcardinformer.SplitKey(key)
	if h.c.logicalClusters != nil {
		lcObj, exists, err := h.c.logicalClusters.Get(cluster, "", corev1alpha1.LogicalClusterName)
		if err != nil || !exists || lcObj.(*corev1alpha1.LogicalCluster).DeletionTimestamp == nil {
			return
		}
	}
	h.c.loop.Enqueue(wildcardinformer.Key(cluster, "", corev1alpha1.LogicalClusterName))
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
		f.c.written.Forget(key)
		if f.c.deletion != nil {
			f.c.deletion.forget(cluster)
		}
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
	if c.written.Stale(key, obj.(*corev1alpha1.LogicalCluster).ResourceVersion) {
		return nil
	}
	lc := obj.(*corev1alpha1.LogicalCluster).DeepCopy()
	if lc.DeletionTimestamp != nil {
		return c.deletion.reconcile(ctx, cluster, lc)
	}
	return c.reconcilePhase(ctx, cluster, lc)
}

// clusterClient returns a client of one logical cluster.
func (c *Controller) clusterClient(cluster logicalcluster.Name) (kubernetes.Interface, error) {
	if c.httpClient == nil {
		return kubernetes.NewForConfig(kcpclient.ClusterConfig(c.base, cluster))
	}
	return kubernetes.NewForConfigAndClient(kcpclient.ClusterConfig(c.base, cluster), c.httpClient)
}

// update writes lc (its finalizers).
func (c *Controller) update(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
	_, err := c.write(ctx, cluster, lc)
	return err
}

// updateStatus writes lc's status.
func (c *Controller) updateStatus(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
	_, err := c.write(ctx, cluster, lc, "status")
	return err
}

// write updates lc (its status with subresource "status") and returns the
// stored LogicalCluster; until the informer shows the write, reconciles of
// older copies are skipped.
func (c *Controller) write(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster, subresource ...string) (*corev1alpha1.LogicalCluster, error) {
	lc.APIVersion, lc.Kind = corev1alpha1.SchemeGroupVersion.String(), "LogicalCluster"
	updated := &corev1alpha1.LogicalCluster{}
	if err := c.kcp.Update(ctx, cluster, kcpclient.LogicalClusters, lc.Name, lc, updated, subresource...); err != nil {
		return nil, err
	}
	c.written.RecordWrite(wildcardinformer.Key(cluster, "", lc.Name), updated)
	return updated, nil
}

var requeueSoon = loop.RequeueAfter(500 * time.Millisecond)
