package apibinding

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/permissionclaim"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// ClaimedObjects relabels single objects whose claim labels are stale, as
// kcp's permissionclaimlabel resource controller does. Relabelling all
// objects of a resource when a binding's claims change (Relabeler.Relabel)
// misses an object admitted against the old claims and stored after that
// relabelling listed its resource: its watch event, seen here, brings it
// back, and it is written unchanged for admission to set its labels.
type ClaimedObjects struct {
	loop *loop.Loop
	// bindings returns the APIBindings of a cluster, as admission sees them.
	bindings func(logicalcluster.Name) []*apisv1alpha2.APIBinding
	// relabel writes an object unchanged (Relabeler.RelabelObject).
	relabel func(ctx context.Context, cluster logicalcluster.Name, gr schema.GroupResource, namespace, name string) error
}

// ClaimedObjectsConfig is what ClaimedObjects needs.
type ClaimedObjectsConfig struct {
	// Bindings returns the APIBindings of a cluster from the informer the
	// permission claims admission plugin reads.
	Bindings func(logicalcluster.Name) []*apisv1alpha2.APIBinding
	// Relabel writes one object unchanged, so that admission sets its
	// claim labels (Relabeler.RelabelObject).
	Relabel func(ctx context.Context, cluster logicalcluster.Name, gr schema.GroupResource, namespace, name string) error
}

// NewClaimedObjects returns the controller; feed it with Observe.
func NewClaimedObjects(c ClaimedObjectsConfig) *ClaimedObjects {
	co := &ClaimedObjects{bindings: c.Bindings, relabel: c.Relabel}
	co.loop = loop.New("permissionclaim-objects", co.reconcile)
	return co
}

// Observe looks at an object of resource as its watch saw it created or
// updated, and queues it when its claim labels are stale. It runs on the
// watch's goroutine: the decision reads only the bindings informer, and
// the write waits for a worker.
func (c *ClaimedObjects) Observe(resource schema.GroupVersionResource, obj metav1.Object) {
	cluster, ok := logicalcluster.ObjectCluster(obj.GetAnnotations())
	if !ok {
		return
	}
	gr := resource.GroupResource()
	if !permissionclaim.Stale(c.bindings(cluster), gr, obj.GetLabels()) {
		return
	}
	c.loop.Enqueue(objectKey(gr, cluster, obj.GetNamespace(), obj.GetName()))
}

// Run relabels queued objects with the given number of workers until ctx
// is done.
func (c *ClaimedObjects) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers) }

// reconcile writes a queued object unchanged. It does not look again: the
// object's labels are not kept here, and a write of labels that are right
// by now changes nothing.
func (c *ClaimedObjects) reconcile(ctx context.Context, key string) error {
	gr, cluster, namespace, name, ok := splitObjectKey(key)
	if !ok {
		return nil
	}
	return c.relabel(ctx, cluster, gr, namespace, name)
}

// objectKey is "<resource>.<group>::<cluster>|<namespace>/<name>": neither
// a group resource nor a cluster name contains "::".
func objectKey(gr schema.GroupResource, cluster logicalcluster.Name, namespace, name string) string {
	return gr.String() + "::" + wildcardinformer.Key(cluster, namespace, name)
}

func splitObjectKey(key string) (gr schema.GroupResource, cluster logicalcluster.Name, namespace, name string, ok bool) {
	resource, object, found := strings.Cut(key, "::")
	if !found {
		return gr, "", "", "", false
	}
	cluster, namespace, name, ok = wildcardinformer.SplitKey(object)
	return schema.ParseGroupResource(resource), cluster, namespace, name, ok
}
