package garbagecollector

import (
	"context"
	"sync/atomic"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// monitor is one wildcard metadata list/watch of a resource, across all
// logical clusters. There is one per group/resource, however many clusters
// serve it.
type monitor struct {
	resource schema.GroupVersionResource
	// builtin: served by every cluster, watched for the shard's lifetime.
	builtin bool
	cancel  context.CancelFunc
	synced  atomic.Bool
}

// startMonitor starts watching a resource. Call with c.mu held.
func (c *Controller) startMonitorLocked(ctx context.Context, resource schema.GroupVersionResource, builtin bool) {
	gr := resource.GroupResource()
	if m, ok := c.monitors[gr]; ok {
		m.builtin = m.builtin || builtin
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	m := &monitor{resource: resource, builtin: builtin, cancel: cancel}
	c.monitors[gr] = m
	client := c.wildcardMetadata.Resource(resource)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return client.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return client.Watch(ctx, opts)
		},
	}
	r := cache.NewReflectorWithOptions(lw, &metav1.PartialObjectMetadata{}, &monitorStore{c: c, m: m},
		cache.ReflectorOptions{Name: "garbagecollector-" + gr.String()})
	klog.FromContext(ctx).V(2).Info("Watching resource for garbage collection", "resource", resource)
	go r.RunWithContext(ctx)
}

// stopMonitorLocked stops watching a resource and forgets its objects. Call
// with c.mu held.
func (c *Controller) stopMonitorLocked(gr schema.GroupResource) {
	m, ok := c.monitors[gr]
	if !ok || m.builtin {
		return
	}
	m.cancel()
	delete(c.monitors, gr)
	for k := range c.graph.keysOf(gr) {
		c.enqueue(c.graph.remove(k))
	}
	c.checkUnobservedOwners(gr)
}

// checkUnobservedOwners asks to look at the dependents of the owners of
// resource gr that have no node (graph): a relist that no longer has them,
// or the end of their resource's watch, is the only word of their deletion
// the collector gets. A relist gives every owner it has that something
// names a node (upsert), so those it has are not among them. Looking reads
// each such owner.
func (c *Controller) checkUnobservedOwners(gr schema.GroupResource) {
	for owner, ref := range c.graph.unobservedOwners() {
		gvr, _, err := c.mapping(owner.cluster, ref.APIVersion, ref.Kind)
		if err == nil && gvr.GroupResource() != gr {
			continue // another resource's owner; unknown kinds are looked at
		}
		var w work
		for _, d := range c.graph.dependentsOf(owner) {
			w.attemptToDelete = append(w.attemptToDelete, d.key)
		}
		c.enqueue(w)
	}
}

// syncResource starts or stops the monitor of a custom resource: it is
// watched while an established CRD of its name in any cluster, or an
// APIBinding of any cluster, serves it. The wildcard metadata watch sees
// the instances of both.
func (c *Controller) syncResource(gr schema.GroupResource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runCtx == nil {
		return // Run starts the monitors of all CRDs and bindings.
	}
	objs, _ := c.crds.ByIndex(byCRDName, crdName(gr))
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, obj := range objs {
		if crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition); ok && established(crd) {
			crds = append(crds, crd)
		}
	}
	if c.bound != nil {
		for _, br := range c.bound.ForGroupResource(gr.Group, gr.Resource) {
			crds = append(crds, br.CRD)
		}
	}
	var watch schema.GroupVersionResource
	for _, crd := range crds {
		gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}
		if m := c.monitors[gvr.GroupResource()]; m != nil && servedVersion(crd, m.resource.Version) == m.resource.Version {
			return // a CRD or binding still serves the watched version
		}
		if gvr.Version = servedVersion(crd, ""); gvr.Version != "" && watch.Version == "" {
			watch = gvr
		}
	}
	if watch.Version == "" {
		c.stopMonitorLocked(gr)
		return
	}
	// The wildcard metadata watch returns the objects of every cluster in any
	// version some CRD or binding serves; the version it watches must stay
	// served.
	if m := c.monitors[gr]; m != nil && !m.builtin {
		m.cancel()
		delete(c.monitors, gr)
	}
	c.startMonitorLocked(c.runCtx, watch, false)
}

// crdGroupResource parses a CRD name, <resource>.<group> with "core" for the
// core group.
func crdGroupResource(name string) schema.GroupResource {
	gr := schema.ParseGroupResource(name)
	if gr.Group == "core" {
		gr.Group = ""
	}
	return gr
}

// crdName returns the name of the CRD that defines a resource.
func crdName(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource + ".core"
	}
	return gr.String()
}

// resourceIn returns the version of a resource to address an object with in
// one cluster: for a custom or bound resource, one its cluster's CRD or
// binding serves, which need not be the version the wildcard watch saw it
// in.
func (c *Controller) resourceIn(cluster logicalcluster.Name, gvr schema.GroupVersionResource) schema.GroupVersionResource {
	var crd *apiextensionsv1.CustomResourceDefinition
	if obj, exists, _ := c.crds.Get(cluster, "", crdName(gvr.GroupResource())); exists {
		crd, _ = obj.(*apiextensionsv1.CustomResourceDefinition)
	}
	if crd == nil && c.bound != nil {
		if br, ok := c.bound.Get(cluster, gvr.Group, gvr.Resource); ok {
			crd = br.CRD
		}
	}
	if crd != nil {
		if v := servedVersion(crd, gvr.Version); v != "" {
			gvr.Version = v
		}
	}
	return gvr
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, cond := range crd.Status.Conditions {
		if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// servedVersion returns want if the CRD serves it, else its storage version
// (or first served version); "" when it serves none.
func servedVersion(crd *apiextensionsv1.CustomResourceDefinition, want string) string {
	first := ""
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		if v.Name == want {
			return v.Name
		}
		if v.Storage {
			first = v.Name
		} else if first == "" {
			first = v.Name
		}
	}
	return first
}

// monitorStore is a reflector's store that feeds the graph; the collector
// keeps no other copy of the objects.
type monitorStore struct {
	c *Controller
	m *monitor
}

func (s *monitorStore) Add(obj interface{}) error {
	s.observe(obj)
	if n, ok := toNode(s.m.resource, obj); ok {
		s.c.enqueue(s.c.graph.upsert(n))
	}
	return nil
}

func (s *monitorStore) Update(obj interface{}) error { return s.Add(obj) }

func (s *monitorStore) Delete(obj interface{}) error {
	if n, ok := toNode(s.m.resource, obj); ok {
		s.c.enqueue(s.c.graph.remove(n.key))
	}
	return nil
}

func (s *monitorStore) Replace(list []interface{}, _ string) error {
	gr := s.m.resource.GroupResource()
	gone := s.c.graph.keysOf(gr)
	for _, obj := range list {
		s.observe(obj)
		if n, ok := toNode(s.m.resource, obj); ok {
			delete(gone, n.key)
			s.c.enqueue(s.c.graph.upsert(n))
		}
	}
	for k := range gone {
		s.c.enqueue(s.c.graph.remove(k))
	}
	s.c.checkUnobservedOwners(gr)
	s.m.synced.Store(true)
	return nil
}

func (s *monitorStore) Resync() error { return nil }

// observe hands a listed, created or updated object to Config.Observe.
func (s *monitorStore) observe(obj interface{}) {
	if s.c.observe == nil {
		return
	}
	if m, err := meta.Accessor(obj); err == nil {
		s.c.observe(s.m.resource, m)
	}
}

// toNode keeps what the collector needs of an object's metadata.
func toNode(resource schema.GroupVersionResource, obj interface{}) (*node, bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false
	}
	cluster, ok := logicalcluster.ObjectCluster(m.GetAnnotations())
	if !ok {
		return nil, false
	}
	n := &node{
		key:       nodeKey{cluster: cluster, uid: m.GetUID()},
		resource:  resource,
		namespace: m.GetNamespace(),
		name:      m.GetName(),
		owners:    m.GetOwnerReferences(),
		deleting:  m.GetDeletionTimestamp() != nil,
	}
	if n.deleting {
		for _, f := range m.GetFinalizers() {
			switch f {
			case metav1.FinalizerDeleteDependents:
				n.foreground = true
			case metav1.FinalizerOrphanDependents:
				n.orphan = true
			}
		}
	}
	return n, true
}
