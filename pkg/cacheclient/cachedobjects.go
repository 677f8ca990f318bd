package cacheclient

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// CachedObjectClient reads and writes the CachedObjects of any shard and
// logical cluster, over one connection pool.
type CachedObjectClient struct {
	config     *rest.Config
	httpClient *http.Client
}

// NewCachedObjectClient returns a client of the cache server whose base URL
// and credentials are config's.
func NewCachedObjectClient(config *rest.Config) (*CachedObjectClient, error) {
	c := dynamic.ConfigFor(config)
	httpClient, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("cache server client: %w", err)
	}
	return &CachedObjectClient{config: c, httpClient: httpClient}, nil
}

// In addresses the CachedObjects of one shard (or all: list only) and one
// logical cluster.
func (c *CachedObjectClient) In(shard Shard, cluster logicalcluster.Name) (dynamic.ResourceInterface, error) {
	cfg := rest.CopyConfig(c.config)
	cfg.Host = URL(c.config.Host, shard, cluster)
	d, err := dynamic.NewForConfigAndClient(cfg, c.httpClient)
	if err != nil {
		return nil, err
	}
	return d.Resource(CachedObjects.Resource), nil
}

// List returns the copies the ClusterCachedResource cachedResource of
// cluster published from shard (or all shards).
func (c *CachedObjectClient) List(ctx context.Context, shard Shard, cluster logicalcluster.Name, cachedResource string) ([]unstructured.Unstructured, error) {
	copies, err := c.In(shard, cluster)
	if err != nil {
		return nil, err
	}
	list, err := copies.List(ctx, metav1.ListOptions{LabelSelector: labels.Set{CachedResourceLabel: cachedResource}.String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Replica returns the replica of object name of kind in cluster, from
// whichever shard replicated it; a NotFound error when none did.
func (c *CachedObjectClient) Replica(ctx context.Context, kind Kind, cluster logicalcluster.Name, name string) (*unstructured.Unstructured, error) {
	cfg := rest.CopyConfig(c.config)
	cfg.Host = URL(c.config.Host, WildcardShard, cluster)
	d, err := dynamic.NewForConfigAndClient(cfg, c.httpClient)
	if err != nil {
		return nil, err
	}
	// The wildcard shard is list-only.
	list, err := d.Resource(kind.Resource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		if list.Items[i].GetName() == name {
			return &list.Items[i], nil
		}
	}
	return nil, apierrors.NewNotFound(kind.Resource.GroupResource(), name)
}
