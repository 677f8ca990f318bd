// Package content deletes everything inside a logical cluster, in-process
// through the REST storages of the shard: no HTTP round trips, no discovery.
// A workspace being deleted takes a handful of calls into the watch cache
// and etcd instead of dozens of requests.
//
// Order: custom resource definitions first (their controller deletes their
// instances), then the content of every namespace, then the namespaces, then
// other cluster-scoped objects, RBAC last so that the deleting user keeps
// their permissions until nothing else is left. Objects with finalizers are
// marked and waited for; Delete reports what remains and which finalizers
// hold it. APIBindings of resources the shard serves itself (a workspace's
// default binding) are let go by the deleter, so that an ordinary workspace
// is emptied in one pass (bindings.go).
package content

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/loopback"
)

// collection is a storage whose objects can be listed and deleted.
type collection interface {
	rest.Lister
	rest.CollectionDeleter
	rest.Scoper
}

type entry struct {
	resource schema.GroupResource
	// version is the served version of the storage.
	version string
	storage collection
}

func (e entry) gvr() schema.GroupVersionResource { return e.resource.WithVersion(e.version) }

// as returns ctx for an in-process call of verb on gvr in ctx's cluster and
// namespace, as the shard itself.
func as(ctx context.Context, verb string, gvr schema.GroupVersionResource, name string) context.Context {
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	return loopback.WithRequest(ctx, cluster, verb, gvr, genericapirequest.NamespaceValue(ctx), name, loopback.ShardUser)
}

// Deleter deletes the content of logical clusters.
type Deleter struct {
	first, namespaced, clusterScoped, last []entry
	namespaces                             rest.Lister
	namespaceGetter                        rest.Getter
	namespaceDeleter                       rest.GracefulDeleter
	finalize                               rest.Updater
	// bindings updates APIBindings; native holds every resource the
	// shard serves itself (see releaseBindings).
	bindings rest.Updater
	native   map[schema.GroupResource]bool
}

var (
	namespacesResource = schema.GroupResource{Resource: "namespaces"}
	namespacesVersion  = namespacesResource.WithVersion("v1")
	// kept are resources whose objects go with the cluster itself.
	kept = map[schema.GroupResource]bool{
		{Group: "core.kcp.io", Resource: "logicalclusters"}: true,
	}
	first = map[schema.GroupResource]bool{
		{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: true,
	}
)

// New collects the storages of the installed API groups (each group's
// preferred version of every resource).
func New(groups []*genericapiserver.APIGroupInfo) (*Deleter, error) {
	d := &Deleter{native: map[schema.GroupResource]bool{}}
	seen := map[schema.GroupResource]bool{}
	for _, g := range groups {
		for _, gv := range g.PrioritizedVersions {
			storages := g.VersionedResourcesStorageMap[gv.Version]
			names := make([]string, 0, len(storages))
			for name := range storages {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				gr := schema.GroupResource{Group: gv.Group, Resource: name}
				if !strings.Contains(name, "/") {
					d.native[gr] = true
				}
				if gr == apiBindingsResource {
					d.bindings, _ = storages[name].(rest.Updater)
				}
				if name == "namespaces/finalize" && gv.Group == "" {
					if u, ok := storages[name].(rest.Updater); ok {
						d.finalize = u
					}
					continue
				}
				if strings.Contains(name, "/") || seen[gr] || kept[gr] {
					continue
				}
				if gr == namespacesResource {
					// Namespaces have no delete-collection; each is
					// deleted and finalized on its own.
					d.namespaces, _ = storages[name].(rest.Lister)
					d.namespaceGetter, _ = storages[name].(rest.Getter)
					d.namespaceDeleter, _ = storages[name].(rest.GracefulDeleter)
					seen[gr] = true
					continue
				}
				c, ok := storages[name].(collection)
				if !ok {
					continue // create-only reviews and the like
				}
				seen[gr] = true
				e := entry{resource: gr, version: gv.Version, storage: c}
				switch {
				case first[gr]:
					d.first = append(d.first, e)
				case gr.Group == "rbac.authorization.k8s.io":
					d.last = append(d.last, e)
				case c.NamespaceScoped():
					d.namespaced = append(d.namespaced, e)
				default:
					d.clusterScoped = append(d.clusterScoped, e)
				}
			}
		}
	}
	if d.namespaces == nil || d.namespaceGetter == nil || d.namespaceDeleter == nil || d.finalize == nil {
		return nil, fmt.Errorf("namespaces storage with finalize subresource not found")
	}
	return d, nil
}

var background = metav1.DeletePropagationBackground

// listOptions read the watch cache once it has seen resourceVersion: no
// round trip to etcd per list, yet every object written before the cluster's
// deletion began is seen (creation in a cluster being deleted is refused by
// admission from then on).
func listOptions(resourceVersion string) *metainternalversion.ListOptions {
	if resourceVersion == "" {
		return &metainternalversion.ListOptions{}
	}
	return &metainternalversion.ListOptions{ResourceVersion: resourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}
}

// deleteAll deletes the collection in ctx's cluster and namespace and adds
// the objects that finalizers hold to remaining. DeleteCollection reports
// the objects as it listed them: own holds, by name, the finalizers of
// those the deleter itself wrote since (see releaseBindings).
func deleteAll(ctx context.Context, e entry, resourceVersion string, own map[string][]string, remaining *Remaining) error {
	deleted, err := e.storage.DeleteCollection(as(ctx, "deletecollection", e.gvr(), ""), rest.ValidateAllObjectFunc, &metav1.DeleteOptions{PropagationPolicy: &background}, listOptions(resourceVersion))
	if err != nil {
		return fmt.Errorf("delete %s: %w", e.resource, err)
	}
	_ = meta.EachListItem(deleted, func(o runtime.Object) error {
		m, err := meta.Accessor(o)
		if err != nil {
			return nil
		}
		finalizers := m.GetFinalizers()
		if f, ok := own[m.GetName()]; ok {
			finalizers = f
		}
		if len(finalizers) > 0 {
			remaining.add(e.resource, finalizers)
		}
		return nil
	})
	return nil
}

// ownWrites holds, by resource and name, the finalizers of objects that
// the deleter wrote in the current pass.
type ownWrites map[schema.GroupResource]map[string][]string

// contents is what one scan found in a cluster: its namespaces, and the
// resources that have objects there, namespaced ones by namespace.
type contents struct {
	namespaces []metav1.Object
	// present holds the cluster-scoped resources with objects.
	present map[schema.GroupResource]bool
	// inNamespace holds, by namespace, the namespaced resources with
	// objects in it.
	inNamespace map[string][]entry
	// bindings are the cluster's APIBindings.
	bindings []*apisv1alpha2.APIBinding
}

// of returns the entries of group that have objects in the cluster.
func (c *contents) of(group []entry) []entry {
	var found []entry
	for _, e := range group {
		if c.present[e.resource] {
			found = append(found, e)
		}
	}
	return found
}

// scan lists every resource of ctx's cluster at once, namespaced ones
// across all namespaces. Each list waits for its watch cache to reach
// resourceVersion; made together, those waits overlap, and the steps that
// follow touch only the resources that have objects: most of a cluster's
// resources have none, and creation in a cluster being deleted is refused.
func (d *Deleter) scan(ctx context.Context, resourceVersion string) (*contents, error) {
	c := &contents{present: map[schema.GroupResource]bool{}, inNamespace: map[string][]entry{}}
	var mu sync.Mutex
	all := append(append(append(append([]entry{{resource: namespacesResource, version: namespacesVersion.Version}}, d.first...), d.namespaced...), d.clusterScoped...), d.last...)
	_, err := atOnce(ctx, all, -1, func(ctx context.Context, e entry) (Remaining, error) {
		var lister rest.Lister = e.storage
		if e.storage == nil {
			lister = d.namespaces
		}
		list, err := lister.List(as(ctx, "list", e.gvr(), ""), listOptions(resourceVersion))
		if err != nil {
			return Remaining{}, fmt.Errorf("list %s: %w", e.resource, err)
		}
		var objects []metav1.Object
		var bindings []*apisv1alpha2.APIBinding
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			if m, err := meta.Accessor(o); err == nil {
				objects = append(objects, m)
			}
			if b, ok := o.(*apisv1alpha2.APIBinding); ok {
				bindings = append(bindings, b)
			}
			return nil
		})
		mu.Lock()
		defer mu.Unlock()
		if e.resource == apiBindingsResource {
			c.bindings = bindings
		}
		switch {
		case e.storage == nil:
			c.namespaces = objects
		case e.storage.NamespaceScoped():
			namespaces := map[string]bool{}
			for _, o := range objects {
				if ns := o.GetNamespace(); !namespaces[ns] {
					namespaces[ns] = true
					c.inNamespace[ns] = append(c.inNamespace[ns], e)
				}
			}
		default:
			c.present[e.resource] = len(objects) > 0
		}
		return Remaining{}, nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Delete deletes all content of cluster except its LogicalCluster. Reads
// are served from the watch caches once they are at least at
// resourceVersion (the LogicalCluster's deletion; "" reads consistently). It
// returns what remains because finalizers hold it; nothing remains once the
// cluster is empty.
func (d *Deleter) Delete(ctx context.Context, cluster logicalcluster.Name, resourceVersion string) (Remaining, error) {
	ctx = logicalcluster.WithCluster(genericapirequest.WithNamespace(ctx, ""), cluster)
	c, err := d.scan(ctx, resourceVersion)
	if err != nil {
		return Remaining{}, err
	}
	remaining, err := deleteGroup(ctx, c.of(d.first), resourceVersion, nil)
	if err != nil || !remaining.Empty() {
		return remaining, err
	}
	// Namespaces are independent of each other: they are emptied at once.
	// Objects left in a namespace that is gone are deleted as well.
	type namespace struct {
		name        string
		terminating bool
		exists      bool
	}
	var namespaces []namespace
	listed := map[string]bool{}
	for _, ns := range c.namespaces {
		listed[ns.GetName()] = true
		namespaces = append(namespaces, namespace{name: ns.GetName(), terminating: ns.GetDeletionTimestamp() != nil, exists: true})
	}
	for name := range c.inNamespace {
		if !listed[name] {
			namespaces = append(namespaces, namespace{name: name})
		}
	}
	remaining, err = atOnce(ctx, namespaces, -1, func(ctx context.Context, ns namespace) (Remaining, error) {
		if !ns.exists {
			return deleteGroup(genericapirequest.WithNamespace(ctx, ns.name), c.inNamespace[ns.name], resourceVersion, nil)
		}
		return d.deleteNamespace(ctx, ns.name, ns.terminating, c.inNamespace[ns.name], resourceVersion)
	})
	if err != nil {
		return Remaining{}, err
	}
	if !remaining.Empty() {
		return remaining, nil
	}
	// Bindings without instances of their own go in this pass, with the
	// rest of the cluster-scoped objects.
	released, err := d.releaseBindings(ctx, c.bindings)
	if err != nil {
		return Remaining{}, err
	}
	for _, group := range [][]entry{d.clusterScoped, d.last} {
		if remaining, err = deleteGroup(ctx, c.of(group), resourceVersion, ownWrites{apiBindingsResource: released}); err != nil || !remaining.Empty() {
			return remaining, err
		}
	}
	return remaining, nil
}

// deleteNamespace deletes a namespace of ctx's cluster with its content (the
// collections of present, those with objects in it) and returns what
// finalizers hold of it; terminating tells whether the namespace is known
// to be terminating already (an earlier pass deleted it).
func (d *Deleter) deleteNamespace(ctx context.Context, ns string, terminating bool, present []entry, resourceVersion string) (Remaining, error) {
	// Terminating first: nothing new can be created in it meanwhile.
	if !terminating {
		if _, _, err := d.namespaceDeleter.Delete(as(ctx, "delete", namespacesVersion, ns), ns, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{PropagationPolicy: &background}); err != nil && !isNotFound(err) {
			return Remaining{}, err
		}
	}
	remaining, err := deleteGroup(genericapirequest.WithNamespace(ctx, ns), present, resourceVersion, nil)
	if err != nil {
		return Remaining{}, err
	}
	if !remaining.Empty() {
		// The namespace waits for its content.
		remaining.add(namespacesResource, nil)
		return remaining, nil
	}
	gone, finalizers, err := d.finalizeNamespace(ctx, ns)
	if err != nil {
		return Remaining{}, err
	}
	if !gone {
		remaining.add(namespacesResource, finalizers)
	}
	return remaining, nil
}

// groupParallelism bounds the resources of one group deleted at once in one
// cluster or namespace. Most lists are empty and answered by the watch
// cache; what a pass waits for is each cache catching up with the
// deletion's resource version, and those waits overlap.
const groupParallelism = 8

// deleteGroup deletes the collections of a group in ctx's cluster and
// namespace at once and returns what finalizers hold; own is what the
// deleter wrote of them in this pass.
func deleteGroup(ctx context.Context, group []entry, resourceVersion string, own ownWrites) (Remaining, error) {
	return atOnce(ctx, group, groupParallelism, func(ctx context.Context, e entry) (Remaining, error) {
		var left Remaining
		err := deleteAll(ctx, e, resourceVersion, own[e.resource], &left)
		return left, err
	})
}

// atOnce runs f for every item, at most limit at a time (no limit if
// negative), and adds up what they leave; the first error cancels the
// others and is returned.
func atOnce[T any](ctx context.Context, items []T, limit int, f func(context.Context, T) (Remaining, error)) (Remaining, error) {
	var (
		mu        sync.Mutex
		remaining Remaining
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for _, item := range items {
		g.Go(func() error {
			left, err := f(gctx, item)
			if err != nil {
				return err
			}
			if !left.Empty() {
				mu.Lock()
				remaining.merge(left)
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return Remaining{}, err
	}
	return remaining, nil
}

// finalizeNamespace empties spec.finalizers of a terminating, empty
// namespace, which deletes it unless finalizers in its metadata hold it; it
// reports whether the namespace is gone and, if not, those finalizers. The
// update starts from the stored namespace, so it needs no read before it,
// and the deletion it makes needs no delete after it.
func (d *Deleter) finalizeNamespace(ctx context.Context, name string) (bool, []string, error) {
	// Update validation reads what is being updated from the request info.
	ctx = as(ctx, "update", schema.GroupVersionResource{Version: namespacesVersion.Version, Resource: "namespaces/finalize"}, name)
	obj, _, err := d.finalize.Update(ctx, name, rest.DefaultUpdatedObjectInfo(nil, finalized), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if isNotFound(err) {
		return true, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("finalize namespace %s: %w", name, err)
	}
	// The update deleted the terminating namespace unless finalizers in its
	// metadata hold it; the next pass looks again if it did not.
	m, err := meta.Accessor(obj)
	if err != nil {
		return false, nil, err
	}
	return len(m.GetFinalizers()) == 0, m.GetFinalizers(), nil
}

// finalized is the stored namespace with spec.finalizers emptied.
func finalized(_ context.Context, _, stored runtime.Object) (runtime.Object, error) {
	ns := stored.DeepCopyObject()
	if err := clearFinalizers(ns); err != nil {
		return nil, err
	}
	return ns, nil
}
