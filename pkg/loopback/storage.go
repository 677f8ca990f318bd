package loopback

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// ShardUser is who a server's in-process calls come from: the server
// itself, in system:masters.
var ShardUser user.Info = &user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup}}

// WithRequest returns ctx for an in-process call of verb on gvr (whose
// resource may name a subresource, "logicalclusters/status") in a namespace
// of cluster, by who. It is the one way the server builds the context of a
// call into its own storages: the cluster scopes the storage keys,
// validation reads what is written from the request info, and RBAC's
// escalation check reads who writes it.
func WithRequest(ctx context.Context, cluster logicalcluster.Name, verb string, gvr schema.GroupVersionResource, namespace, name string, who user.Info) context.Context {
	resource, subresource, _ := strings.Cut(gvr.Resource, "/")
	ctx = logicalcluster.WithCluster(genericapirequest.WithNamespace(ctx, namespace), cluster)
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: verb, APIGroup: gvr.Group, APIVersion: gvr.Version,
		Resource: resource, Subresource: subresource, Namespace: namespace, Name: name,
	})
	return genericapirequest.WithUser(ctx, who)
}

// Client calls a server's REST storages in-process as ShardUser: no HTTP
// round trip, TLS, encoding, audit, authorization or admission. It is for
// the writes only the system makes (a new cluster's bootstrap, the
// finalizers and deletion of a LogicalCluster) and the reads that back
// them; everything else goes through the handler chain.
type Client struct {
	scheme *runtime.Scheme
	groups []*genericapiserver.APIGroupInfo
	// resources are the top-level resources by the kind they store.
	resources map[schema.GroupVersionKind]schema.GroupVersionResource
}

// NewClient returns a client of the storages of the installed API groups;
// scheme defaults and converts what Create is given.
func NewClient(scheme *runtime.Scheme, groups []*genericapiserver.APIGroupInfo) *Client {
	c := &Client{scheme: scheme, groups: groups, resources: map[schema.GroupVersionKind]schema.GroupVersionResource{}}
	for _, g := range groups {
		for version, storages := range g.VersionedResourcesStorageMap {
			group := g.PrioritizedVersions[0].Group
			names := make([]string, 0, len(storages))
			for name := range storages {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				if strings.Contains(name, "/") {
					continue
				}
				kinds, _, err := scheme.ObjectKinds(storages[name].New())
				if err != nil {
					continue
				}
				gvk := schema.GroupVersionKind{Group: group, Version: version, Kind: kinds[0].Kind}
				if _, seen := c.resources[gvk]; !seen {
					c.resources[gvk] = schema.GroupVersionResource{Group: group, Version: version, Resource: name}
				}
			}
		}
	}
	return c
}

// Storage returns the REST storage of gvr, whose resource may name a
// subresource, or nil.
func (c *Client) Storage(gvr schema.GroupVersionResource) rest.Storage {
	for _, g := range c.groups {
		if g.PrioritizedVersions[0].Group != gvr.Group {
			continue
		}
		if s, ok := g.VersionedResourcesStorageMap[gvr.Version][gvr.Resource]; ok {
			return s
		}
	}
	return nil
}

// Create creates objs in cluster, all at once, and leaves those that exist
// alone. Each is defaulted as a decoded request body would be.
func (c *Client) Create(ctx context.Context, cluster logicalcluster.Name, objs ...runtime.Object) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, obj := range objs {
		g.Go(func() error { return c.createOne(ctx, cluster, obj) })
	}
	return g.Wait()
}

func (c *Client) createOne(ctx context.Context, cluster logicalcluster.Name, obj runtime.Object) error {
	gvks, _, err := c.scheme.ObjectKinds(obj)
	if err != nil {
		return err
	}
	gvr, ok := c.resources[gvks[0]]
	if !ok {
		return fmt.Errorf("no storage of %s to create in-process", gvks[0])
	}
	creater, ok := c.Storage(gvr).(rest.Creater)
	if !ok {
		return fmt.Errorf("no storage of %s to create in-process", gvr)
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	external := obj.DeepCopyObject()
	c.scheme.Default(external)
	internal := creater.New()
	if reflect.TypeOf(internal) == reflect.TypeOf(external) {
		internal = external // kcp's kinds are stored as served
	} else if err := c.scheme.Convert(external, internal, nil); err != nil {
		return fmt.Errorf("convert %s: %w", gvks[0].Kind, err)
	}
	ns, name := accessor.GetNamespace(), accessor.GetName()
	ctx = WithRequest(ctx, cluster, "create", gvr, ns, name, ShardUser)
	if _, err := creater.Create(ctx, internal, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %s %s/%s in %s: %w", gvks[0].Kind, ns, name, cluster, err)
	}
	return nil
}

// Get reads namespace/name of gvr in cluster from its storage.
func (c *Client) Get(ctx context.Context, cluster logicalcluster.Name, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	getter, ok := c.Storage(gvr).(rest.Getter)
	if !ok {
		return nil, fmt.Errorf("no storage of %s to read in-process", gvr)
	}
	return getter.Get(WithRequest(ctx, cluster, "get", gvr, namespace, name, ShardUser), name, &metav1.GetOptions{})
}

// Exists tells whether namespace/name of gvr exists in cluster.
func (c *Client) Exists(ctx context.Context, cluster logicalcluster.Name, gvr schema.GroupVersionResource, namespace, name string) (bool, error) {
	_, err := c.Get(ctx, cluster, gvr, namespace, name)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, err
	}
}

// Update writes obj to gvr (whose resource may name a subresource) in
// cluster, conditional on obj's resourceVersion as a PUT is, and returns
// what was stored; an update that removes the last finalizer of a deleted
// object deletes it and returns it as it was last.
func (c *Client) Update(ctx context.Context, cluster logicalcluster.Name, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	updater, ok := c.Storage(gvr).(rest.Updater)
	if !ok {
		return nil, fmt.Errorf("no storage of %s to write in-process", gvr)
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	ns, name := accessor.GetNamespace(), accessor.GetName()
	ctx = WithRequest(ctx, cluster, "update", gvr, ns, name, ShardUser)
	updated, _, err := updater.Update(ctx, name, rest.DefaultUpdatedObjectInfo(obj.DeepCopyObject()), nil, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	return updated, err
}

// Delete deletes namespace/name of gvr in cluster, without options, as a
// DELETE without a body does; finalizers may keep it.
func (c *Client) Delete(ctx context.Context, cluster logicalcluster.Name, gvr schema.GroupVersionResource, namespace, name string) error {
	deleter, ok := c.Storage(gvr).(rest.GracefulDeleter)
	if !ok {
		return fmt.Errorf("no storage of %s to delete in-process", gvr)
	}
	ctx = WithRequest(ctx, cluster, "delete", gvr, namespace, name, ShardUser)
	_, _, err := deleter.Delete(ctx, name, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{})
	return err
}
