// Package resourcequota keeps status.hard and status.used of the
// ResourceQuotas of all logical clusters of a shard, as
// kube-controller-manager's resource quota controller does for one cluster,
// counting objects with upstream's quota evaluators.
//
// Upstream's controller takes one cluster's informers and discovery; here
// one instance serves every cluster: quotas come from a wildcard informer,
// and a resource is watched (one wildcard metadata watch for the shard,
// keeping no objects) only once some quota counts it, to count the quotas
// of a namespace again when an object goes there (creates are charged by
// quota admission). Usage is counted by listing the namespace (or, for
// kcp's workspace-wide quotas, the whole cluster) in the quota's own
// cluster, so an idle workspace costs nothing.
package resourcequota

import (
	"context"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	quotav1 "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/client-go/discovery"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/quota"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Controller computes the status of ResourceQuotas in all logical clusters.
type Controller struct {
	loop   *loop.Loop
	quotas *wildcardinformer.Informer
	crds   *wildcardinformer.Informer
	usage  *usage

	wildcardMetadata metadata.Interface
	// discoverBuiltins returns the version of every built-in resource.
	discoverBuiltins func() (map[schema.GroupResource]builtin, error)

	mu       sync.Mutex
	runCtx   context.Context
	builtins map[schema.GroupResource]builtin
	monitors map[schema.GroupResource]*monitor
}

// Config is what the controller needs.
type Config struct {
	// Quotas is a wildcard informer of ResourceQuotas, CRDs the shard's
	// shared one of CustomResourceDefinitions (it may be running already:
	// the controller looks at every quota when it starts).
	Quotas, CRDs *wildcardinformer.Informer
	// Loopback is the shard's loopback configuration without a cluster.
	Loopback *rest.Config
}

// New returns the controller.
func New(cfg Config) (*Controller, error) {
	quotas, crds, base := cfg.Quotas, cfg.CRDs, cfg.Loopback
	httpClient, err := rest.HTTPClientFor(base)
	if err != nil {
		return nil, err
	}
	wildcardMetadata, err := metadata.NewForConfigAndClient(kcpclient.ClusterConfig(base, logicalcluster.Wildcard), httpClient)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		quotas:           quotas,
		crds:             crds,
		wildcardMetadata: wildcardMetadata,
		discoverBuiltins: func() (map[schema.GroupResource]builtin, error) { return discoverBuiltins(base, httpClient) },
		monitors:         map[schema.GroupResource]*monitor{},
	}
	c.usage = &usage{
		list: func(ctx context.Context, cluster logicalcluster.Name, gr schema.GroupResource, ns string) ([]runtime.Object, error) {
			gvr, namespaced, ok := c.resourceIn(cluster, gr)
			if !ok || (!namespaced && ns != "") {
				return nil, nil // nothing of it in this cluster or namespace
			}
			client, err := metadata.NewForConfigAndClient(kcpclient.ClusterConfig(base, cluster), httpClient)
			if err != nil {
				return nil, err
			}
			list, err := client.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
			if apierrors.IsNotFound(err) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			out := make([]runtime.Object, 0, len(list.Items))
			for i := range list.Items {
				out = append(out, &list.Items[i])
			}
			return out, nil
		},
		updateStatus: func(ctx context.Context, cluster logicalcluster.Name, q *corev1.ResourceQuota) error {
			client, err := corev1client.NewForConfigAndClient(kcpclient.ClusterConfig(base, cluster), httpClient)
			if err != nil {
				return err
			}
			_, err = client.ResourceQuotas(q.Namespace).UpdateStatus(ctx, q, metav1.UpdateOptions{})
			return err
		},
	}
	c.loop = loop.New("resourcequota", c.reconcile)
	quotas.AddHandler(quotaHandler{c})
	crds.AddHandler(crdHandler{c})
	return c, nil
}

// builtin is a built-in resource's preferred version and scope.
type builtin struct {
	version    string
	namespaced bool
}

// discoverBuiltins reads the preferred version of every built-in resource
// from the system:admin cluster; they are the same in every cluster.
func discoverBuiltins(base *rest.Config, httpClient *http.Client) (map[schema.GroupResource]builtin, error) {
	d, err := discovery.NewDiscoveryClientForConfigAndClient(kcpclient.ClusterConfig(base, logicalcluster.SystemAdmin), httpClient)
	if err != nil {
		return nil, err
	}
	lists, err := d.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, err
	}
	out := map[schema.GroupResource]builtin{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			out[gv.WithResource(r.Name).GroupResource()] = builtin{version: gv.Version, namespaced: r.Namespaced}
		}
	}
	return out, nil
}

// Run discovers the built-in resources, then computes quotas with the given
// number of workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	logger := klog.FromContext(ctx).WithName("resourcequota")
	ctx = klog.NewContext(ctx, logger)
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
		builtins, err := c.discoverBuiltins()
		if err != nil {
			logger.Error(err, "Discovering resources failed, retrying")
			return false, nil
		}
		c.mu.Lock()
		c.builtins, c.runCtx = builtins, ctx
		c.mu.Unlock()
		return true, nil
	})
	if err != nil {
		return
	}
	// A full recount now and then, as upstream's resync: it repairs usage
	// that admission charged for a create that then failed.
	go wait.UntilWithContext(ctx, func(context.Context) {
		for _, key := range c.quotas.Indexer().ListKeys() {
			c.loop.Enqueue(key)
		}
	}, resyncPeriod)
	c.loop.Run(ctx, workers)
}

// resyncPeriod is upstream's default --resource-quota-sync-period.
const resyncPeriod = 5 * time.Minute

// quotaHandler enqueues new quotas and quotas whose limits changed. As
// upstream, status updates (admission charging a create, or this
// controller) do not trigger a recount: a recount racing an admitted
// create that is not stored yet would undo its charge.
type quotaHandler struct{ c *Controller }

func (h quotaHandler) OnAdd(obj interface{}) { h.c.enqueueQuota(obj) }
func (h quotaHandler) OnUpdate(old, cur interface{}) {
	o, ok1 := old.(*corev1.ResourceQuota)
	n, ok2 := cur.(*corev1.ResourceQuota)
	if !ok1 || !ok2 || !quotav1.Equals(o.Spec.Hard, n.Spec.Hard) || !quotav1.Equals(n.Spec.Hard, n.Status.Hard) ||
		o.Annotations[quota.ClusterScopedAnnotation] != n.Annotations[quota.ClusterScopedAnnotation] {
		h.c.enqueueQuota(cur)
	}
}
func (h quotaHandler) OnDelete(interface{}) {}

// resourceIn returns the version and scope of a resource that a cluster
// serves: a built-in one, or an established CRD of that cluster.
func (c *Controller) resourceIn(cluster logicalcluster.Name, gr schema.GroupResource) (schema.GroupVersionResource, bool, bool) {
	if obj, exists, _ := c.crds.Get(cluster, "", gr.String()); exists {
		crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
		if !ok || !established(crd) {
			return schema.GroupVersionResource{}, false, false
		}
		namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
		for _, v := range crd.Spec.Versions {
			if v.Served && v.Storage {
				return gr.WithVersion(v.Name), namespaced, true
			}
		}
		for _, v := range crd.Spec.Versions {
			if v.Served {
				return gr.WithVersion(v.Name), namespaced, true
			}
		}
		return schema.GroupVersionResource{}, false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.builtins[gr]
	return gr.WithVersion(b.version), b.namespaced, ok
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

func (c *Controller) reconcile(ctx context.Context, key string) error {
	cluster, _, _, ok := wildcardinformer.SplitKey(key)
	if !ok {
		return nil
	}
	obj, exists, err := c.quotas.Indexer().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	q, ok := obj.(*corev1.ResourceQuota)
	if !ok || q.DeletionTimestamp != nil {
		return nil
	}
	for _, gr := range quota.CountedResources(q.Spec.Hard) {
		c.watch(cluster, gr)
	}
	err = c.usage.reconcile(ctx, cluster, q)
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // the informer brings the current quota back
	}
	return err
}

// enqueueNamespace sends the quotas that count objects of a namespace ("":
// cluster-scoped objects) back to the queue: the namespace's own and the
// cluster's workspace-wide ones.
func (c *Controller) enqueueNamespace(cluster logicalcluster.Name, ns string) {
	for _, obj := range quota.Limiting(c.quotas, cluster, ns) {
		c.enqueueQuota(obj)
	}
}

func (c *Controller) enqueueQuota(obj interface{}) {
	if key, err := wildcardinformer.KeyFunc(obj); err == nil {
		c.loop.Enqueue(key)
	}
}
