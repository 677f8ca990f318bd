// Package garbagecollector deletes objects whose owners are gone, in every
// logical cluster of a shard, with Kubernetes' semantics: background,
// foreground (foregroundDeletion finalizer, blockOwnerDeletion) and orphan
// (orphan finalizer) propagation, for built-in and custom resources, those
// of CRDs and those of APIBindings alike.
//
// Why not Kubernetes' garbage collector as a library: its graph is keyed by
// UID alone, its object references carry no logical cluster, and it reaches
// objects through one metadata client and one RESTMapper. Driving it per
// logical cluster would take one instance (graph, monitors, workers) per
// cluster, which the shard must not have. This is a compact re-implementation
// of the same decisions (attemptToDeleteItem, processDeletingDependentsItem,
// orphanDependents) over one graph keyed by (cluster, UID), fed by one
// wildcard metadata watch per resource, with live lookups made in the
// object's own cluster.
package garbagecollector

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/apiextensions"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// byCRDName indexes CRDs by name (resource.group) across clusters.
const byCRDName = "garbagecollector-crd-name"

// ignoredResources are never collected, as in kube-controller-manager.
var ignoredResources = sets.New(
	schema.GroupResource{Resource: "events"},
	schema.GroupResource{Group: "events.k8s.io", Resource: "events"},
)

// Controller is the garbage collector of all logical clusters of a shard.
type Controller struct {
	// wildcardMetadata lists and watches across all clusters.
	wildcardMetadata metadata.Interface
	crds             *wildcardinformer.Informer
	// bound tells which resources APIBindings serve; bindings are the
	// APIBindings of all clusters. Both nil: custom resources come from
	// CRDs only.
	bound            apiextensions.BoundAPIs
	bindings         *wildcardinformer.Informer
	graph            *graph
	deletes, orphans *loop.Loop

	// observe is Config.Observe, or nil.
	observe func(schema.GroupVersionResource, metav1.Object)

	// clusterMetadata returns a metadata client of one logical cluster.
	clusterMetadata func(cluster logicalcluster.Name) (metadata.Interface, error)
	// clusterEvents returns an events client of one logical cluster.
	clusterEvents func(cluster logicalcluster.Name) (corev1client.EventsGetter, error)
	// discoverBuiltins returns the resources every cluster serves.
	discoverBuiltins func() ([]schema.GroupVersionResource, meta.RESTMapper, error)
	builtinMapper    meta.RESTMapper

	mu       sync.Mutex
	runCtx   context.Context
	monitors map[schema.GroupResource]*monitor
}

// Config is what the collector needs.
type Config struct {
	// Loopback is the shard's loopback configuration without a cluster.
	Loopback *rest.Config
	// CRDs is the shard's shared wildcard informer of CRDs. It may be
	// running already: the index added here is filled from what it holds,
	// and Run looks at every CRD once.
	CRDs *wildcardinformer.Informer
	// Bound tells which resources the APIBindings of each cluster serve
	// (pkg/boundapis), and APIBindings is the shard's wildcard informer of
	// APIBindings it reads them from: bound resources are watched and
	// resolved like custom resources. Optional.
	Bound       apiextensions.BoundAPIs
	APIBindings *wildcardinformer.Informer
	// Observe, if set, is given every object the collector's watches list
	// or see created or updated, with the resource watched: a controller
	// that acts on objects of any resource (the permission claim labels)
	// needs no second watch of each. It runs on the watch's goroutine and
	// must be quick. Events, which the collector does not watch, are not
	// observed.
	Observe func(resource schema.GroupVersionResource, obj metav1.Object)
}

// New returns the collector.
func New(cfg Config) (*Controller, error) {
	base, crds := cfg.Loopback, cfg.CRDs
	if err := crds.AddIndexers(cache.Indexers{byCRDName: func(obj interface{}) ([]string, error) {
		if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
			return []string{crd.Name}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, err
	}
	httpClient, err := rest.HTTPClientFor(base)
	if err != nil {
		return nil, err
	}
	wildcard := kcpclient.ClusterConfig(base, logicalcluster.Wildcard)
	wildcardMetadata, err := metadata.NewForConfigAndClient(wildcard, httpClient)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		wildcardMetadata: wildcardMetadata,
		crds:             crds,
		bound:            cfg.Bound,
		bindings:         cfg.APIBindings,
		graph:            newGraph(),
		observe:          cfg.Observe,
		monitors:         map[schema.GroupResource]*monitor{},
		clusterMetadata: func(cluster logicalcluster.Name) (metadata.Interface, error) {
			return metadata.NewForConfigAndClient(kcpclient.ClusterConfig(base, cluster), httpClient)
		},
		clusterEvents: func(cluster logicalcluster.Name) (corev1client.EventsGetter, error) {
			return corev1client.NewForConfigAndClient(kcpclient.ClusterConfig(base, cluster), httpClient)
		},
		discoverBuiltins: func() ([]schema.GroupVersionResource, meta.RESTMapper, error) {
			return discoverBuiltins(base, httpClient)
		},
	}
	c.deletes = loop.New("garbagecollector-attempt-to-delete", c.attemptToDelete)
	c.orphans = loop.New("garbagecollector-attempt-to-orphan", c.attemptToOrphan)
	crds.AddHandler(crdHandler{c})
	if c.bound != nil && c.bindings != nil {
		c.bindings.AddHandler(bindingHandler{c})
	}
	return c, nil
}

// discoverBuiltins reads the resources of the system:admin cluster that can
// be listed, watched and deleted: the built-in ones are the same in every
// cluster. Custom resources are watched from the CRD informer instead.
func discoverBuiltins(base *rest.Config, httpClient *http.Client) ([]schema.GroupVersionResource, meta.RESTMapper, error) {
	d, err := discovery.NewDiscoveryClientForConfigAndClient(kcpclient.ClusterConfig(base, logicalcluster.SystemAdmin), httpClient)
	if err != nil {
		return nil, nil, err
	}
	groups, err := restmapper.GetAPIGroupResources(d)
	if err != nil {
		return nil, nil, err
	}
	lists, err := d.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return nil, nil, err
	}
	gvrs, err := discovery.GroupVersionResources(discovery.FilteredBy(
		discovery.SupportsAllVerbs{Verbs: []string{"list", "watch", "delete"}}, lists))
	if err != nil {
		return nil, nil, err
	}
	var out []schema.GroupVersionResource
	for gvr := range gvrs {
		out = append(out, gvr)
	}
	return out, restmapper.NewDiscoveryRESTMapper(groups), nil
}

// Run watches every resource, waits until the first lists are in and then
// collects with the given number of workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	logger := klog.FromContext(ctx).WithName("garbagecollector")
	ctx = klog.NewContext(ctx, logger)
	var builtins []schema.GroupVersionResource
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
		var err error
		if builtins, c.builtinMapper, err = c.discoverBuiltins(); err != nil {
			logger.Error(err, "Discovering resources failed, retrying")
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return
	}
	c.mu.Lock()
	c.runCtx = ctx
	for _, gvr := range builtins {
		gr := gvr.GroupResource()
		if ignoredResources.Has(gr) || c.definedByCRD(logicalcluster.SystemAdmin, gr) {
			continue
		}
		c.startMonitorLocked(ctx, gvr, true)
	}
	c.mu.Unlock()
	for _, name := range c.crds.Indexer().ListIndexFuncValues(byCRDName) {
		c.syncResource(crdGroupResource(name))
	}
	for _, gr := range c.boundAnywhere() {
		c.syncResource(gr)
	}

	// Collecting before the graph is filled would only cost live lookups,
	// but a monitor that never syncs must not stop the collector.
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return c.synced(), nil
	})
	logger.Info("Garbage collector started", "resources", c.monitorCount(), "objects", c.graph.len())
	go c.orphans.Run(ctx, workers)
	c.deletes.Run(ctx, workers)
}

func (c *Controller) synced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.monitors {
		if !m.synced.Load() {
			return false
		}
	}
	return true
}

func (c *Controller) monitorCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.monitors)
}

func (c *Controller) definedByCRD(cluster logicalcluster.Name, gr schema.GroupResource) bool {
	obj, exists, _ := c.crds.Get(cluster, "", crdName(gr))
	return exists && obj != nil
}

// enqueue hands the keys of a graph change to the workers.
func (c *Controller) enqueue(w work) {
	for _, k := range w.attemptToDelete {
		c.deletes.Enqueue(keyString(k))
	}
	for _, k := range w.attemptToOrphan {
		c.orphans.Enqueue(keyString(k))
	}
}

func keyString(k nodeKey) string { return wildcardinformer.Key(k.cluster, "", string(k.uid)) }

func parseKey(s string) (nodeKey, bool) {
	cluster, _, uid, ok := wildcardinformer.SplitKey(s)
	return nodeKey{cluster: cluster, uid: types.UID(uid)}, ok
}

// mapping finds the resource of a kind in one logical cluster: a CRD of that
// cluster, a resource its APIBindings bind, or a built-in resource. The
// version is one the cluster serves, which need not be the one in the
// reference: any version reads the same object.
func (c *Controller) mapping(cluster logicalcluster.Name, apiVersion, kind string) (schema.GroupVersionResource, bool, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	objs, _ := c.crds.List(cluster, "")
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(objs))
	for _, obj := range objs {
		if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok && established(crd) {
			crds = append(crds, crd)
		}
	}
	if c.bound != nil {
		for _, br := range c.bound.List(cluster) {
			crds = append(crds, br.CRD)
		}
	}
	for _, crd := range crds {
		if crd.Spec.Group != gv.Group || crd.Spec.Names.Kind != kind {
			continue
		}
		if v := servedVersion(crd, gv.Version); v != "" {
			return schema.GroupVersionResource{Group: gv.Group, Version: v, Resource: crd.Spec.Names.Plural},
				crd.Spec.Scope == apiextensionsv1.NamespaceScoped, nil
		}
	}
	if c.builtinMapper == nil {
		return schema.GroupVersionResource{}, false, fmt.Errorf("resources not discovered yet")
	}
	m, err := c.builtinMapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: kind}, gv.Version)
	if err != nil {
		m, err = c.builtinMapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: kind})
	}
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// crdHandler starts and stops monitors as CRDs come and go.
type crdHandler struct{ c *Controller }

func (h crdHandler) OnAdd(obj interface{})       { h.sync(obj) }
func (h crdHandler) OnUpdate(_, obj interface{}) { h.sync(obj) }
func (h crdHandler) OnDelete(obj interface{})    { h.sync(obj) }

func (h crdHandler) sync(obj interface{}) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok {
		h.c.syncResource(crdGroupResource(crd.Name))
	}
}

// bindingHandler starts and stops monitors as APIBindings bind resources
// and let them go.
type bindingHandler struct{ c *Controller }

func (h bindingHandler) OnAdd(obj interface{}) { h.sync(obj) }
func (h bindingHandler) OnUpdate(old, obj interface{}) {
	h.sync(old)
	h.sync(obj)
}
func (h bindingHandler) OnDelete(obj interface{}) { h.sync(obj) }

func (h bindingHandler) sync(obj interface{}) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if b, ok := obj.(*apisv1alpha2.APIBinding); ok {
		for _, br := range b.Status.BoundResources {
			h.c.syncResource(schema.GroupResource{Group: br.Group, Resource: br.Resource})
		}
	}
}

// boundAnywhere returns the resources some APIBinding of the shard binds.
func (c *Controller) boundAnywhere() []schema.GroupResource {
	if c.bound == nil || c.bindings == nil {
		return nil
	}
	seen := map[schema.GroupResource]bool{}
	var out []schema.GroupResource
	for _, obj := range c.bindings.Indexer().List() {
		b, ok := obj.(*apisv1alpha2.APIBinding)
		if !ok {
			continue
		}
		for _, br := range b.Status.BoundResources {
			gr := schema.GroupResource{Group: br.Group, Resource: br.Resource}
			if !seen[gr] {
				seen[gr] = true
				out = append(out, gr)
			}
		}
	}
	return out
}

// deleteOptions returns options that delete exactly the object of uid.
func deleteOptions(uid types.UID, policy metav1.DeletionPropagation) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &policy}
}

// ignoreGone treats "already gone" and "replaced by another object of the
// same name" as success.
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
