// Package builtin assembles the project's virtual workspaces — the
// APIExport view, the APIResourceSchema view, the initializing and
// terminating workspaces views and, given the cache server, the
// replication view of ClusterCachedResources' copies —
// for the standalone virtual-workspaces server and for a shard that
// serves them in-process.
package builtin

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/virtual/apiexport"
	"github.com/shardplane/shardplane/pkg/virtual/apiresourceschema"
	"github.com/shardplane/shardplane/pkg/virtual/framework"
	"github.com/shardplane/shardplane/pkg/virtual/initializingworkspaces"
	"github.com/shardplane/shardplane/pkg/virtual/replication"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Config is what the views need of the shard.
type Config struct {
	// Shard reaches the shard with a privileged credential.
	Shard *rest.Config
	// Authorizer decides in the logical cluster of the context.
	Authorizer authorizer.Authorizer
	// AuthorizationConfig is the server the initializing and terminating
	// views post SubjectAccessReviews to (a standalone server's); nil: they
	// ask Authorizer, with ResolvePath (a shard serving them in-process).
	AuthorizationConfig *rest.Config
	// APIBindings are the shard's APIBindings; nil: an informer of the
	// shard's, which the returned Mounted runs.
	APIBindings *wildcardinformer.Informer
	// ResolvePath maps a workspace path to its logical cluster; nil: only
	// paths that are logical cluster names resolve.
	ResolvePath func(logicalcluster.Path) (logicalcluster.Name, bool)
	// APIResourceSchemas hold the shard's schemas and the cache server's
	// replicas of other shards', read in that order; nil: the
	// APIResourceSchema view reads them from the server of
	// AuthorizationConfig, or of Shard when that is nil.
	APIResourceSchemas []*wildcardinformer.Informer
	// Cache reaches the cache server as a reader; nil: the replication
	// view of ClusterCachedResources' copies is not served.
	Cache *rest.Config
}

// New builds the views.
func New(c Config) (*framework.Mounted, error) {
	m := &framework.Mounted{Views: framework.Views{}}
	bindings := c.APIBindings
	if bindings == nil {
		wildcard := rest.CopyConfig(c.Shard)
		wildcard.Host = logicalcluster.Wildcard.Path().URL(wildcard.Host)
		client, err := kcpclient.RESTClient(wildcard, apisv1alpha2.SchemeGroupVersion)
		if err != nil {
			return nil, err
		}
		lw := cache.NewListWatchFromClient(client, "apibindings", metav1.NamespaceAll, fields.Everything())
		bindings = wildcardinformer.NewRemote(lw, &apisv1alpha2.APIBinding{}, "virtual-apibindings")
		m.Informers = append(m.Informers, bindings)
	}
	view, err := apiexport.New(apiexport.Config{Shard: c.Shard, APIBindings: bindings, Authorizer: c.Authorizer})
	if err != nil {
		return nil, err
	}
	m.Views[apiexport.Name] = view
	schemas, err := newSchemaView(c, bindings)
	if err != nil {
		return nil, err
	}
	m.Views[apiresourceschema.Name] = schemas
	if c.Cache != nil {
		view, err := newReplicationView(c, bindings)
		if err != nil {
			return nil, err
		}
		m.Views[replication.Name] = view
	}
	for _, lifecycle := range []initializingworkspaces.Lifecycle{initializingworkspaces.Initializing, initializingworkspaces.Terminating} {
		lc := initializingworkspaces.Config{ShardConfig: c.Shard, Lifecycle: lifecycle, AuthorizationConfig: c.AuthorizationConfig}
		if c.AuthorizationConfig == nil {
			lc.Authorize = typeAuthorizer(c.Authorizer, c.ResolvePath)
		}
		h, err := initializingworkspaces.New(lc)
		if err != nil {
			return nil, fmt.Errorf("%s view: %w", lifecycle.ServiceName(), err)
		}
		m.Views[lifecycle.ServiceName()] = h
	}
	return m, nil
}

// newReplicationView builds the view of the copies ClusterCachedResources
// published, read from the cache server. Slices and ClusterCachedResources
// are the shard's own or, of workspaces on other shards, their replicas in
// the cache server.
func newReplicationView(c Config, bindings *wildcardinformer.Informer) (*replication.View, error) {
	client, err := kcpclient.New(c.Shard)
	if err != nil {
		return nil, fmt.Errorf("%s view: %w", replication.Name, err)
	}
	cached, err := cacheclient.NewCachedObjectClient(c.Cache)
	if err != nil {
		return nil, fmt.Errorf("%s view: %w", replication.Name, err)
	}
	// get reads an object of the shard, else its replica.
	get := func(ctx context.Context, cluster logicalcluster.Name, gvr schema.GroupVersionResource, name string, out runtime.Object) error {
		err := client.Get(ctx, cluster, gvr, name, out)
		if !apierrors.IsNotFound(err) {
			return err
		}
		kind, ok := cacheclient.KindOf(gvr)
		if !ok {
			return err
		}
		replica, rerr := cached.Replica(ctx, kind, cluster, name)
		if rerr != nil {
			return rerr
		}
		return runtime.DefaultUnstructuredConverter.FromUnstructured(replica.Object, out)
	}
	return replication.New(replication.Config{
		EndpointSlice: func(ctx context.Context, cluster logicalcluster.Name, name string) (*cachev1alpha1.ClusterCachedResourceEndpointSlice, error) {
			out := &cachev1alpha1.ClusterCachedResourceEndpointSlice{}
			return out, get(ctx, cluster, kcpclient.ClusterCachedResourceEndpointSlices, name, out)
		},
		CachedResource: func(ctx context.Context, cluster logicalcluster.Name, name string) (*cachev1alpha1.ClusterCachedResource, error) {
			out := &cachev1alpha1.ClusterCachedResource{}
			return out, get(ctx, cluster, kcpclient.ClusterCachedResources, name, out)
		},
		Copies: func(ctx context.Context, cluster logicalcluster.Name, name string) (*unstructured.UnstructuredList, error) {
			copies, err := cached.In(cacheclient.WildcardShard, cluster)
			if err != nil {
				return nil, err
			}
			return copies.List(ctx, metav1.ListOptions{LabelSelector: labels.Set{cacheclient.CachedResourceLabel: name}.String()})
		},
		WatchCopies: func(ctx context.Context, cluster logicalcluster.Name, name, resourceVersion string) (watch.Interface, error) {
			copies, err := cached.In(cacheclient.WildcardShard, cluster)
			if err != nil {
				return nil, err
			}
			return copies.Watch(ctx, metav1.ListOptions{LabelSelector: labels.Set{cacheclient.CachedResourceLabel: name}.String(), ResourceVersion: resourceVersion})
		},
		APIBindings: func(cluster logicalcluster.Name) ([]*apisv1alpha2.APIBinding, error) {
			return bindingsOf(bindings, cluster)
		},
		ResolvePath: c.ResolvePath,
		Authorizer:  c.Authorizer,
	})
}

// bindingsOf returns the APIBindings of a logical cluster.
func bindingsOf(bindings *wildcardinformer.Informer, cluster logicalcluster.Name) ([]*apisv1alpha2.APIBinding, error) {
	objs, err := bindings.List(cluster, "")
	if err != nil {
		return nil, err
	}
	out := make([]*apisv1alpha2.APIBinding, 0, len(objs))
	for _, o := range objs {
		if b, ok := o.(*apisv1alpha2.APIBinding); ok {
			out = append(out, b)
		}
	}
	return out, nil
}

// newSchemaView builds the APIResourceSchema view over the shard's
// APIBindings. Its callers are authorized by ordinary SubjectAccessReviews,
// not deep ones (kcp's delegated authorizer): access to the consumer
// workspace is part of the permission. They are posted, and schemas of
// other shards read, where every workspace is reached: AuthorizationConfig
// (a front-proxy) when given, else the shard.
func newSchemaView(c Config, bindings *wildcardinformer.Informer) (*apiresourceschema.View, error) {
	reach := c.AuthorizationConfig
	if reach == nil {
		reach = c.Shard
	}
	reviews, err := framework.NewSubjectAccessReviews(reach)
	if err != nil {
		return nil, fmt.Errorf("%s view: %w", apiresourceschema.Name, err)
	}
	client, err := kcpclient.New(reach)
	if err != nil {
		return nil, fmt.Errorf("%s view: %w", apiresourceschema.Name, err)
	}
	schemaOf := func(ctx context.Context, cluster logicalcluster.Name, name string) (*apisv1alpha1.APIResourceSchema, error) {
		out := &apisv1alpha1.APIResourceSchema{}
		if err := client.Get(ctx, cluster, kcpclient.APIResourceSchemas, name, out); err != nil {
			return nil, err
		}
		return out, nil
	}
	if len(c.APIResourceSchemas) > 0 {
		schemaOf = func(_ context.Context, cluster logicalcluster.Name, name string) (*apisv1alpha1.APIResourceSchema, error) {
			obj, ok, err := wildcardinformer.First(cluster, "", name, c.APIResourceSchemas...)
			if err != nil {
				return nil, err
			}
			s, isSchema := obj.(*apisv1alpha1.APIResourceSchema)
			if !ok || !isSchema {
				return nil, apierrors.NewNotFound(apiresourceschema.Resource.GroupResource(), name)
			}
			return s, nil
		}
	}
	list := func(cluster logicalcluster.Name) ([]*apisv1alpha2.APIBinding, error) {
		return bindingsOf(bindings, cluster)
	}
	return apiresourceschema.New(apiresourceschema.Config{Bindings: list, Schema: schemaOf, Authorizer: reviews})
}

// typeAuthorizer authorizes a verb on a WorkspaceType with authz when its
// workspace path resolves to a logical cluster; otherwise it says no.
func typeAuthorizer(authz authorizer.Authorizer, resolve func(logicalcluster.Path) (logicalcluster.Name, bool)) func(ctx context.Context, u user.Info, verb string, typeCluster logicalcluster.Path, typeName string) (bool, string, error) {
	return func(ctx context.Context, u user.Info, verb string, typeCluster logicalcluster.Path, typeName string) (bool, string, error) {
		cluster, ok := typeCluster.Name()
		if !ok && resolve != nil {
			cluster, ok = resolve(typeCluster)
		}
		if !ok {
			return false, "workspace " + string(typeCluster) + " is not known to this shard", nil
		}
		attrs := authorizer.AttributesRecord{
			User: u, Verb: verb, APIGroup: tenancyv1alpha1.SchemeGroupVersion.Group, APIVersion: tenancyv1alpha1.SchemeGroupVersion.Version,
			Resource: "workspacetypes", Name: typeName, ResourceRequest: true,
		}
		d, reason, err := authz.Authorize(logicalcluster.WithCluster(ctx, cluster), attrs)
		return d == authorizer.DecisionAllow, reason, err
	}
}
