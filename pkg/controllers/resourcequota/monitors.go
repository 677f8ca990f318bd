package resourcequota

import (
	"context"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/quota"
)

// monitor is one wildcard metadata watch of a counted resource, across all
// logical clusters; it keeps no objects.
type monitor struct {
	resource schema.GroupVersionResource
}

// watch makes sure the objects of gr are watched, once the controller runs
// and some cluster serves gr.
func (c *Controller) watch(cluster logicalcluster.Name, gr schema.GroupResource) {
	if _, ignored := quota.IgnoredResources[gr]; ignored {
		return
	}
	gvr, _, ok := c.resourceIn(cluster, gr)
	if !ok {
		return // the CRD handler brings the quota back when it is served
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runCtx == nil || c.monitors[gr] != nil {
		return
	}
	m := &monitor{resource: gvr}
	c.monitors[gr] = m
	client := c.wildcardMetadata.Resource(gvr)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return client.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return client.Watch(ctx, opts)
		},
	}
	r := cache.NewReflectorWithOptions(listOnly{lw}, &metav1.PartialObjectMetadata{}, monitorStore{c: c, gr: gr},
		cache.ReflectorOptions{Name: "resourcequota-" + gr.String()})
	klog.FromContext(c.runCtx).V(2).Info("Watching resource for quota", "resource", gvr)
	go r.RunWithContext(c.runCtx)
}

// listOnly keeps a reflector from watch-list mode, whose initial store is
// keyed by namespace/name and would merge objects of different clusters.
type listOnly struct{ cache.ListerWatcher }

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

// monitorStore sends the quotas of an object's namespace to the queue when
// the object goes (replenishment, as upstream's quota monitor).
type monitorStore struct {
	c  *Controller
	gr schema.GroupResource
}

func (s monitorStore) changed(obj interface{}) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	if cluster, ok := logicalcluster.ObjectCluster(m.GetAnnotations()); ok {
		s.c.enqueueNamespace(cluster, m.GetNamespace())
	}
}

// Add does nothing: admission charged the create already, as upstream.
func (s monitorStore) Add(interface{}) error { return nil }

// Update does nothing: an update does not change object counts.
func (s monitorStore) Update(interface{}) error { return nil }

// Delete frees what the object used: its quotas are counted again.
func (s monitorStore) Delete(obj interface{}) error { s.changed(obj); return nil }
func (s monitorStore) Resync() error                { return nil }

// Replace is a (re)list: anything may have changed while the watch was
// down, so every quota that counts the resource is looked at again.
func (s monitorStore) Replace([]interface{}, string) error {
	for _, obj := range s.c.quotas.Indexer().List() {
		s.c.enqueueQuota(obj)
	}
	return nil
}

// crdHandler looks again at the quotas of a cluster whose CRDs change: a
// resource a quota counts may have become served.
type crdHandler struct{ c *Controller }

func (h crdHandler) OnAdd(obj interface{})       { h.changed(obj) }
func (h crdHandler) OnUpdate(_, obj interface{}) { h.changed(obj) }
func (h crdHandler) OnDelete(obj interface{})    { h.changed(obj) }

func (h crdHandler) changed(obj interface{}) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	if !ok {
		return
	}
	cluster, ok := logicalcluster.ObjectCluster(crd.Annotations)
	if !ok {
		return
	}
	objs, _ := h.c.quotas.List(cluster, "")
	for _, q := range objs {
		h.c.enqueueQuota(q)
	}
}
