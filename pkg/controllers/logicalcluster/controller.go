// Package logicalcluster drives the LogicalClusters hosted on this shard:
// it bootstraps a new cluster's content (default namespace, owner as
// cluster-admin), moves it through Scheduling -> Initializing -> Ready, and
// on deletion removes all its content (RBAC last) before letting the
// LogicalCluster go. Terminators hold that deletion until each has released
// the cluster (reconcile_terminators.go).
package logicalcluster

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	// objects and the owner's binding in-process (see useInProcess);
	// without, its namespaces and the binding through base.
	createObjects    func(ctx context.Context, cluster logicalcluster.Name, objs ...runtime.Object) error
	namespaceObjects func(namespace string) []runtime.Object
	// updateBootstrapStatus writes the status of a cluster that leaves
	// Scheduling: updateStatus, or in-process (useInProcess).
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

// Config is what the controller needs.
type Config struct {
	// LogicalClusters and Namespaces are the shard's wildcard informers.
	LogicalClusters, Namespaces *wildcardinformer.Informer
	// RequeueOnDeletionOf are informers of kinds whose objects carry
	// finalizers (APIBindings): the deletion of one looks at its cluster
	// again at once, since a cluster being deleted may wait for it.
	RequeueOnDeletionOf []*wildcardinformer.Informer
	// KCP writes LogicalClusters through the API; Loopback is the shard's
	// loopback configuration without a cluster.
	KCP      *kcpclient.Client
	Loopback *rest.Config
	// ExternalURL is written into status.URL: <ExternalURL>/clusters/<path>.
	ExternalURL string
	// DeleteContent deletes everything in a cluster but its LogicalCluster,
	// reading at least at resourceVersion, and reports what finalizers hold.
	DeleteContent func(ctx context.Context, cluster logicalcluster.Name, resourceVersion string) (content.Remaining, error)
	// InProcess, when set, takes the writes only the system makes while
	// nobody else reaches a cluster: a new cluster's bootstrap, the status
	// write that ends its Scheduling, and a deleted cluster's finalizers.
	InProcess InProcess
	// NamespaceObjects are the objects every namespace holds (its service
	// account and root CA config map), created with a new cluster's
	// namespaces when InProcess is set.
	NamespaceObjects func(namespace string) []runtime.Object
}

// InProcess calls the shard's REST storages as the shard itself
// (loopback.Client).
type InProcess interface {
	Create(ctx context.Context, cluster logicalcluster.Name, objs ...runtime.Object) error
	Update(ctx context.Context, cluster logicalcluster.Name, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error)
}

// New returns the controller.
func New(cfg Config) *Controller {
	c := &Controller{logicalClusters: cfg.LogicalClusters, kcp: cfg.KCP, base: cfg.Loopback, externalURL: cfg.ExternalURL}
	c.updateBootstrapStatus = c.updateStatus
	if httpClient, err := rest.HTTPClientFor(cfg.Loopback); err == nil {
		c.httpClient = httpClient
	}
	c.deletion = &deletionReconciler{
		deleteContent: cfg.DeleteContent,
		updateStatus: func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) (*corev1alpha1.LogicalCluster, error) {
			return c.write(ctx, cluster, lc, "status")
		},
		update:   c.update,
		released: func(cluster logicalcluster.Name) bool { _, ok := c.released.Load(cluster); return ok },
		release:  func(cluster logicalcluster.Name) { c.released.Store(cluster, struct{}{}) },
		now:      time.Now,
	}
	if cfg.InProcess != nil {
		c.useInProcess(cfg.InProcess, cfg.NamespaceObjects)
	}
	c.loop = loop.New("logicalcluster", c.reconcile)
	cfg.LogicalClusters.AddHandler(c.loop.Handler(nil))
	cfg.LogicalClusters.AddHandler(forgetReleased{c})
	// A namespace going away may unblock a cluster's deletion (deletions of
	// other objects held by finalizers are caught by the requeue). Other
	// namespace events, those of every new cluster's bootstrap among them,
	// concern no LogicalCluster.
	c.requeueOnDeletionOf(cfg.Namespaces)
	for _, inf := range cfg.RequeueOnDeletionOf {
		c.requeueOnDeletionOf(inf)
	}
	return c
}

// useInProcess makes a new cluster's bootstrap create its namespaces, each
// namespace's objects (namespaceObjects) and the owner's
// ClusterRoleBinding in-process. The status write that ends Scheduling goes
// in-process too: until then nobody but the system reaches the cluster, so
// no admission of that cluster has a say, and the only check of a status
// write, that it comes from the system, holds. So do the writes of a
// deleted cluster's finalizers: the system alone drives it from then on,
// and the admission of LogicalClusters lets the system change any
// finalizer.
func (c *Controller) useInProcess(client InProcess, namespaceObjects func(namespace string) []runtime.Object) {
	c.createObjects, c.namespaceObjects = client.Create, namespaceObjects
	c.updateBootstrapStatus = c.recorded(inProcessWrite(client, "logicalclusters/status"))
	c.deletion.update = c.recorded(inProcessWrite(client, "logicalclusters"))
}

// inProcessWrite returns a write of a LogicalCluster through resource
// ("logicalclusters" or "logicalclusters/status") of client.
func inProcessWrite(client InProcess, resource string) func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) (*corev1alpha1.LogicalCluster, error) {
	gvr := corev1alpha1.SchemeGroupVersion.WithResource(resource)
	return func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) (*corev1alpha1.LogicalCluster, error) {
		obj, err := client.Update(ctx, cluster, gvr, lc)
		if err != nil {
			return nil, err
		}
		updated, ok := obj.(*corev1alpha1.LogicalCluster)
		if !ok {
			return nil, fmt.Errorf("in-process write of %s returned %T", gvr, obj)
		}
		return updated, nil
	}
}

// recorded writes through update and, as write does, records the stored
// resourceVersion, so that reconciles of older copies are skipped.
func (c *Controller) recorded(update func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) (*corev1alpha1.LogicalCluster, error)) func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
	return func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
		updated, err := update(ctx, cluster, lc)
		if err != nil {
			return err
		}
		c.written.RecordWrite(wildcardinformer.Key(cluster, "", lc.Name), updated)
		return nil
	}
}

// requeueOnDeletionOf makes the deletion of an object of inf look at its
// cluster again at once, if that cluster is being deleted.
func (c *Controller) requeueOnDeletionOf(inf *wildcardinformer.Informer) {
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
