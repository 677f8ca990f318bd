// Package apiexportendpointslice fills the status of the
// APIExportEndpointSlices of the shard: status.endpoints[].url is the
// APIExport view (/services/apiexport/<export cluster>/<export>) on the
// virtual workspace server of each shard that serves the export's
// consumers, kept current as bindings and shards come and go.
//
// Which shards: APIBindings are not replicated, so a shard knows its own
// bindings only. The slice's own shard is listed when it has a binding of
// the export; every other shard is listed (its view of an export it has no
// bindings of serves empty lists). With one shard this is exactly the
// shards with bindings.
//
// Which shards at most: those the slice's Partition (spec.partition, in
// the slice's workspace) selects by their labels.
//
// Which URL for a shard: viewurl.ShardServerURL — its
// spec.virtualWorkspaceURL, which kcp's clients match endpoints against.
package apiexportendpointslice

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/shardlookup"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Config is what the controller reads and writes.
type Config struct {
	// Wildcard reaches all logical clusters of the shard (its host ends in
	// /clusters/*); the controller watches the slices with it.
	Wildcard *rest.Config
	// Client writes the slices' status.
	Client *kcpclient.Client
	// APIBindings are the shard's bindings; Shards is an informer of the
	// Shards in root (the shard's own or the cache server's replicas).
	APIBindings, Shards *wildcardinformer.Informer
	// Partitions are the shard's Partitions, which slices name to list
	// only the endpoints of the shards a Partition selects.
	Partitions *wildcardinformer.Informer
	// ResolvePath maps the workspace path of a slice's export to its
	// logical cluster.
	ResolvePath func(logicalcluster.Path) (logicalcluster.Name, bool)
	// ShardName is this shard.
	ShardName string
}

// Controller reconciles the endpoints of every APIExportEndpointSlice of
// the shard.
type Controller struct {
	loop      *loop.Loop
	slices    *wildcardinformer.Informer
	getSlice  func(cluster logicalcluster.Name, name string) (*apisv1alpha1.APIExportEndpointSlice, error)
	update    func(ctx context.Context, cluster logicalcluster.Name, slice *apisv1alpha1.APIExportEndpointSlice) error
	endpoints *endpointsReconciler
}

// New returns the controller; Run starts its informer of slices.
func New(c Config) (*Controller, error) {
	client, err := kcpclient.RESTClient(c.Wildcard, apisv1alpha1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	lw := cache.NewListWatchFromClient(client, "apiexportendpointslices", metav1.NamespaceAll, fields.Everything())
	slices := wildcardinformer.New(lw, &apisv1alpha1.APIExportEndpointSlice{}, "wildcard-apiexportendpointslices")
	shards := shardlookup.Root{Informer: c.Shards}
	ctrl := &Controller{
		slices: slices,
		getSlice: func(cluster logicalcluster.Name, name string) (*apisv1alpha1.APIExportEndpointSlice, error) {
			obj, exists, err := slices.Get(cluster, "", name)
			if err != nil || !exists {
				return nil, err
			}
			return obj.(*apisv1alpha1.APIExportEndpointSlice), nil
		},
		update: func(ctx context.Context, cluster logicalcluster.Name, slice *apisv1alpha1.APIExportEndpointSlice) error {
			slice.APIVersion, slice.Kind = apisv1alpha1.SchemeGroupVersion.String(), "APIExportEndpointSlice"
			return c.Client.Update(ctx, cluster, kcpclient.APIExportEndpointSlices, slice.Name, slice, &apisv1alpha1.APIExportEndpointSlice{}, "status")
		},
		endpoints: &endpointsReconciler{
			resolvePath: c.ResolvePath,
			listShards:  shards.List,
			getPartition: func(cluster logicalcluster.Name, name string) (*topologyv1alpha1.Partition, error) {
				obj, exists, err := c.Partitions.Get(cluster, "", name)
				if err != nil || !exists {
					return nil, err
				}
				return obj.(*topologyv1alpha1.Partition), nil
			},
			hasBindings: func(exportCluster logicalcluster.Name, export string) bool {
				for _, obj := range c.APIBindings.Indexer().List() {
					b, ok := obj.(*apisv1alpha2.APIBinding)
					if ok && b.Status.APIExportClusterName == string(exportCluster) && b.Spec.Reference.Export != nil && b.Spec.Reference.Export.Name == export {
						return true
					}
				}
				return false
			},
			shardName: c.ShardName,
		},
	}
	ctrl.loop = loop.New("apiexportendpointslice", ctrl.reconcile)
	slices.AddHandler(ctrl.loop.Handler(nil))
	// Bindings, shards and partitions change the endpoints of every slice;
	// slices are few.
	all := ctrl.loop.Handler(func(interface{}) (string, bool) {
		for _, key := range slices.Indexer().ListKeys() {
			ctrl.loop.Enqueue(key)
		}
		return "", false
	})
	c.APIBindings.AddHandler(all)
	c.Partitions.AddHandler(all)
	c.Shards.AddHandler(shardlookup.SkipStatusUpdates(all))
	return ctrl, nil
}

// Run runs the informer of slices and the workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	go c.slices.Run(ctx)
	if err := wildcardinformer.WaitForSync(ctx, c.slices); err != nil {
		return
	}
	c.loop.Run(ctx, workers)
}

// Informer is the informer of slices, for readiness checks.
func (c *Controller) Informer() *wildcardinformer.Informer { return c.slices }

func (c *Controller) reconcile(ctx context.Context, key string) error {
	cluster, _, name, ok := wildcardinformer.SplitKey(key)
	if !ok {
		return nil
	}
	slice, err := c.getSlice(cluster, name)
	if err != nil || slice == nil || slice.DeletionTimestamp != nil {
		return err
	}
	slice = slice.DeepCopy()
	old := slice.Status.DeepCopy()
	reconcileErr := c.endpoints.reconcile(cluster, slice)
	if !apiequality.Semantic.DeepEqual(*old, slice.Status) {
		if err := c.update(ctx, cluster, slice); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return reconcileErr
}
