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
// hold it. The same storages create the namespaces of the shard's own
// system clusters before it serves (CreateNamespaces).
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

	"github.com/kplane-dev/kplane/pkg/logicalcluster"
)

// collection is a storage whose objects can be listed and deleted.
type collection interface {
	rest.Lister
	rest.CollectionDeleter
	rest.Scoper
}

type entry struct {
	resource schema.GroupResource
	storage  collection
}

// Deleter deletes the content of logical clusters.
type Deleter struct {
	first, namespaced, clusterScoped, last []entry
	namespaces                             rest.Lister
	namespaceGetter                        rest.Getter
	namespaceDeleter                       rest.GracefulDeleter
	namespaceCreater                       rest.Creater
	finalize                               rest.Updater
}

var (
	namespacesResource = schema.GroupResource{Resource: "namespaces"}
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
	d := &Deleter{}
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
					d.namespaceCreater, _ = storages[name].(rest.Creater)
					seen[gr] = true
					continue
				}
				c, ok := storages[name].(collection)
				if !ok {
					continue // create-only reviews and the like
				}
				seen[gr] = true
				e := entry{resource: gr, storage: c}
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
	if d.namespaces == nil || d.namespaceGetter == nil || d.namespaceDeleter == nil || d.namespaceCreater == nil || d.finalize == nil {
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
// the objects that finalizers hold to remaining.
func deleteAll(ctx context.Context, e entry, resourceVersion string, remaining *Remaining) error {
	opts := listOptions(resourceVersion)
	list, err := e.storage.List(ctx, opts)
	if err != nil {
		return fmt.Errorf("list %s: %w", e.resource, err)
	}
	if meta.LenList(list) == 0 {
		return nil
	}
	deleted, err := e.storage.DeleteCollection(ctx, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{PropagationPolicy: &background}, opts)
	if err != nil {
		return fmt.Errorf("delete %s: %w", e.resource, err)
	}
	_ = meta.EachListItem(deleted, func(o runtime.Object) error {
		if m, err := meta.Accessor(o); err == nil && len(m.GetFinalizers()) > 0 {
			remaining.add(e.resource, m.GetFinalizers())
		}
		return nil
	})
	return nil
}

// Delete deletes all content of cluster except its LogicalCluster. Reads
// are served from the watch caches once they are at least at
// resourceVersion (the LogicalCluster's deletion; "" reads consistently). It
// returns what remains because finalizers hold it; nothing remains once the
// cluster is empty.
func (d *Deleter) Delete(ctx context.Context, cluster logicalcluster.Name, resourceVersion string) (Remaining, error) {
	ctx = logicalcluster.WithCluster(genericapirequest.WithNamespace(ctx, ""), cluster)
	remaining, err := deleteGroup(ctx, d.first, resourceVersion)
	if err != nil || !remaining.Empty() {
		return remaining, err
	}
	list, err := d.namespaces.List(ctx, listOptions(resourceVersion))
	if err != nil {
		return Remaining{}, err
	}
	var names []string
	_ = meta.EachListItem(list, func(o runtime.Object) error {
		if m, err := meta.Accessor(o); err == nil {
			names = append(names, m.GetName())
		}
		return nil
	})
	// Namespaces are independent of each other: they are emptied at once.
	remaining, err = atOnce(ctx, names, -1, func(ctx context.Context, ns string) (Remaining, error) {
		return d.deleteNamespace(ctx, ns, resourceVersion)
	})
	if err != nil {
		return Remaining{}, err
	}
	if !remaining.Empty() {
		return remaining, nil
	}
	for _, group := range [][]entry{d.clusterScoped, d.last} {
		if remaining, err = deleteGroup(ctx, group, resourceVersion); err != nil || !remaining.Empty() {
			return remaining, err
		}
	}
	return remaining, nil
}

// deleteNamespace deletes a namespace of ctx's cluster with its content and
// returns what finalizers hold of it.
func (d *Deleter) deleteNamespace(ctx context.Context, ns, resourceVersion string) (Remaining, error) {
	// Terminating first: nothing new can be created in it meanwhile.
	if _, _, err := d.namespaceDeleter.Delete(ctx, ns, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{PropagationPolicy: &background}); err != nil && !isNotFound(err) {
		return Remaining{}, err
	}
	remaining, err := deleteGroup(genericapirequest.WithNamespace(ctx, ns), d.namespaced, resourceVersion)
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
// namespace at once and returns what finalizers hold.
func deleteGroup(ctx context.Context, group []entry, resourceVersion string) (Remaining, error) {
	return atOnce(ctx, group, groupParallelism, func(ctx context.Context, e entry) (Remaining, error) {
		var left Remaining
		err := deleteAll(ctx, e, resourceVersion, &left)
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
// namespace and deletes it; it reports whether the namespace is gone and,
// if not, the finalizers in its metadata that hold it.
func (d *Deleter) finalizeNamespace(ctx context.Context, name string) (bool, []string, error) {
	obj, err := d.namespaceGetter.Get(ctx, name, &metav1.GetOptions{})
	if isNotFound(err) {
		return true, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	var finalizers []string
	if m, err := meta.Accessor(obj); err == nil {
		finalizers = m.GetFinalizers()
	}
	ns := obj.DeepCopyObject()
	if err := clearFinalizers(ns); err != nil {
		return false, nil, err
	}
	// Update validation reads what is being updated from the request info.
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "update", APIVersion: "v1", Resource: "namespaces", Subresource: "finalize", Name: name,
	})
	_, _, err = d.finalize.Update(ctx, name, rest.DefaultUpdatedObjectInfo(ns), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	if isNotFound(err) {
		return true, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("finalize namespace %s: %w", name, err)
	}
	_, deleted, err := d.namespaceDeleter.Delete(ctx, name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{PropagationPolicy: &background})
	if isNotFound(err) {
		return true, nil, nil
	}
	return deleted, finalizers, err
}
