// Package kcpclient reads and writes kcp's own objects (LogicalClusters,
// Workspaces, WorkspaceTypes, Shards) in any logical cluster of a shard.
package kcpclient

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	_ "github.com/shardplane/shardplane/pkg/apis/install" // decode kcp's types
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Resources of kcp's groups.
var (
	LogicalClusters = corev1alpha1.SchemeGroupVersion.WithResource("logicalclusters")
	Shards          = corev1alpha1.SchemeGroupVersion.WithResource("shards")
	Workspaces      = tenancyv1alpha1.SchemeGroupVersion.WithResource("workspaces")
	WorkspaceTypes  = tenancyv1alpha1.SchemeGroupVersion.WithResource("workspacetypes")
	// WorkspaceAuthenticationConfigurations are the JWT issuers of
	// WorkspaceTypes.
	WorkspaceAuthenticationConfigurations = tenancyv1alpha1.SchemeGroupVersion.WithResource("workspaceauthenticationconfigurations")
	// LogicalClusterMigrations move a logical cluster to another shard.
	LogicalClusterMigrations = migrationv1alpha1.SchemeGroupVersion.WithResource("logicalclustermigrations")
	// LogicalClusterDumps are pages of a moving cluster's storage.
	LogicalClusterDumps = migrationv1alpha1.SchemeGroupVersion.WithResource("logicalclusterdumps")
	// APIExportEndpointSlices are served in apis.kcp.io/v1alpha1 only.
	APIExportEndpointSlices = apisv1alpha1.SchemeGroupVersion.WithResource("apiexportendpointslices")
	// Partitions select shards; PartitionSets generate them.
	Partitions    = topologyv1alpha1.SchemeGroupVersion.WithResource("partitions")
	PartitionSets = topologyv1alpha1.SchemeGroupVersion.WithResource("partitionsets")
	// ClusterCachedResources publish a resource's objects to the cache
	// server; their endpoint slices publish the view of the copies.
	ClusterCachedResources              = cachev1alpha1.SchemeGroupVersion.WithResource("clustercachedresources")
	ClusterCachedResourceEndpointSlices = cachev1alpha1.SchemeGroupVersion.WithResource("clustercachedresourceendpointslices")
	// APIResourceSchemas are served in apis.kcp.io/v1alpha1 only.
	APIResourceSchemas = apisv1alpha1.SchemeGroupVersion.WithResource("apiresourceschemas")
)

// Client addresses objects by logical cluster, resource and name.
type Client struct {
	rest *rest.RESTClient
}

// New returns a client for the server in config (a shard's base URL, no
// /clusters/ suffix).
func New(config *rest.Config) (*Client, error) {
	r, err := RESTClient(config, corev1alpha1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return &Client{rest: r}, nil
}

// RESTClient returns a REST client for one of kcp's group versions at the
// host of config. kcp's types have no protobuf encoding: it speaks JSON.
func RESTClient(config *rest.Config, gv schema.GroupVersion) (*rest.RESTClient, error) {
	c := rest.CopyConfig(config)
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
	c.NegotiatedSerializer = legacyscheme.Codecs.WithoutConversion()
	return rest.RESTClientFor(c)
}

func path(cluster logicalcluster.Name, gvr schema.GroupVersionResource, name string, subresource ...string) []string {
	p := []string{cluster.RequestPath(), "apis", gvr.Group, gvr.Version, gvr.Resource}
	if name != "" {
		p = append(p, name)
	}
	return append(p, subresource...)
}

// Get reads one object into out.
func (c *Client) Get(ctx context.Context, cluster logicalcluster.Name, gvr schema.GroupVersionResource, name string, out runtime.Object) error {
	return c.rest.Get().AbsPath(path(cluster, gvr, name)...).Do(ctx).Into(out)
}

// Create creates obj and stores the result in out.
func (c *Client) Create(ctx context.Context, cluster logicalcluster.Name, gvr schema.GroupVersionResource, obj, out runtime.Object) error {
	return c.rest.Post().AbsPath(path(cluster, gvr, "")...).Body(obj).Do(ctx).Into(out)
}

// Update replaces obj (or its status, with subresource "status").
func (c *Client) Update(ctx context.Context, cluster logicalcluster.Name, gvr schema.GroupVersionResource, name string, obj, out runtime.Object, subresource ...string) error {
	return c.rest.Put().AbsPath(path(cluster, gvr, name, subresource...)...).Body(obj).Do(ctx).Into(out)
}

// Patch patches one object (or its status, with subresource "status") and
// stores the result in out, if out is not nil.
func (c *Client) Patch(ctx context.Context, cluster logicalcluster.Name, gvr schema.GroupVersionResource, name string, pt types.PatchType, data []byte, out runtime.Object, subresource ...string) error {
	result := c.rest.Patch(pt).AbsPath(path(cluster, gvr, name, subresource...)...).Body(data).Do(ctx)
	if out == nil {
		return result.Error()
	}
	return result.Into(out)
}

// List lists the objects of a resource in a cluster (or "*") into out.
func (c *Client) List(ctx context.Context, cluster logicalcluster.Name, gvr schema.GroupVersionResource, out runtime.Object) error {
	return c.rest.Get().AbsPath(path(cluster, gvr, "")...).Do(ctx).Into(out)
}

// Watch watches a resource in a cluster (or "*") from resourceVersion.
func (c *Client) Watch(ctx context.Context, cluster logicalcluster.Name, gvr schema.GroupVersionResource, resourceVersion string) (watch.Interface, error) {
	return c.rest.Get().AbsPath(path(cluster, gvr, "")...).Param("watch", "true").Param("resourceVersion", resourceVersion).
		Param("allowWatchBookmarks", "true").Watch(ctx)
}

// Delete deletes one object.
func (c *Client) Delete(ctx context.Context, cluster logicalcluster.Name, gvr schema.GroupVersionResource, name string, opts *metav1.DeleteOptions) error {
	req := c.rest.Delete().AbsPath(path(cluster, gvr, name)...)
	if opts != nil {
		req = req.Body(opts)
	}
	return req.Do(ctx).Error()
}

// ClusterConfig returns a copy of base addressing one logical cluster. It
// speaks JSON: objects of kcp's groups and custom resources have no protobuf
// encoding.
func ClusterConfig(base *rest.Config, cluster logicalcluster.Name) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.Host = cluster.Path().URL(cfg.Host)
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	return cfg
}
