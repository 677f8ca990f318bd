// Package workspace schedules Workspaces onto shards and mirrors their
// logical cluster's lifecycle. It runs on the shard of the parent workspace:
// it picks the least loaded shard that matches spec.location.selector
// (shardLoad), creates the child's LogicalCluster there (in-process on
// this shard, elsewhere as system:kcp:logical-cluster-admin through the
// shard's baseURL), records spec.cluster and spec.URL, copies phase and
// initializers back, and on deletion deletes the LogicalCluster (the same
// way) before releasing the Workspace.
package workspace

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	migrationcontroller "github.com/shardplane/shardplane/pkg/controllers/migration"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/shardlookup"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
	"github.com/shardplane/shardplane/pkg/workspacetypes"
)

// Controller reconciles Workspaces.
type Controller struct {
	loop            *loop.Loop
	workspaces      *wildcardinformer.Informer
	logicalClusters *wildcardinformer.Informer
	shards          shardlookup.Source
	types           workspacetypes.Resolver
	// local writes Workspaces on this shard.
	local *kcpclient.Client
	// shardClient returns a client for a shard's baseURL acting as
	// system:kcp:logical-cluster-admin.
	shardClient func(shard *corev1alpha1.Shard) (*kcpclient.Client, error)
	// createLocal creates objects in a logical cluster of this shard
	// in-process, leaving existing ones alone; nil: through shardClient.
	createLocal func(ctx context.Context, cluster logicalcluster.Name, objs ...runtime.Object) error
	// deleteLocalLogicalCluster deletes the LogicalCluster of a logical
	// cluster of this shard in-process; nil: through shardClient.
	deleteLocalLogicalCluster func(ctx context.Context, cluster logicalcluster.Name) error
	// shardName is this shard; its LogicalClusters are read from the informer.
	shardName string
	// deletion deletes the logical clusters of deleted workspaces.
	deletion *deletionReconciler
	// load counts the workspaces per shard for placing new ones.
	load *shardLoad
	// written skips reconciles of Workspaces whose informer copy predates
	// this controller's last write of them.
	written loop.Written
	// waiting are the keys of the Workspaces no shard took; any change of
	// a Shard (a limit raised, a heartbeat, an uncordon) retries them.
	waiting sync.Map
}

// Config holds the controller's dependencies.
type Config struct {
	Workspaces, LogicalClusters *wildcardinformer.Informer
	Shards                      shardlookup.Source
	// ShardEvents, when set, is the informer behind Shards: its changes
	// retry the workspaces that wait for a shard.
	ShardEvents *wildcardinformer.Informer
	Types       workspacetypes.Resolver
	Local       *kcpclient.Client
	ShardClient func(shard *corev1alpha1.Shard) (*kcpclient.Client, error)
	ShardName   string
	// Migrations, when set, are every shard's LogicalClusterMigrations:
	// a deleted workspace whose cluster is moving waits for the move.
	Migrations *wildcardinformer.Informer
	// InProcess, when set, creates the LogicalCluster of a new workspace
	// placed on this shard and deletes that of a deleted one, through the
	// shard's storages; without, both go through ShardClient.
	InProcess InProcess
}

// InProcess calls the shard's REST storages as the shard itself
// (loopback.Client): Create leaves existing objects alone, Delete returns
// NotFound when the object is gone.
type InProcess interface {
	Create(ctx context.Context, cluster logicalcluster.Name, objs ...runtime.Object) error
	Delete(ctx context.Context, cluster logicalcluster.Name, gvr schema.GroupVersionResource, namespace, name string) error
}

// New returns the controller.
func New(cfg Config) *Controller {
	c := &Controller{
		workspaces: cfg.Workspaces, logicalClusters: cfg.LogicalClusters, shards: cfg.Shards,
		types: cfg.Types, local: cfg.Local, shardClient: cfg.ShardClient, shardName: cfg.ShardName,
		load: newShardLoad(),
	}
	if cfg.InProcess != nil {
		c.createLocal = cfg.InProcess.Create
		c.deleteLocalLogicalCluster = func(ctx context.Context, cluster logicalcluster.Name) error {
			return cfg.InProcess.Delete(ctx, cluster, kcpclient.LogicalClusters, "", corev1alpha1.LogicalClusterName)
		}
	}
	c.deletion = &deletionReconciler{
		getLogicalCluster:    c.getLogicalCluster,
		deleteLogicalCluster: c.deleteLogicalCluster,
		updateStatus: func(ctx context.Context, parent logicalcluster.Name, ws *tenancyv1alpha1.Workspace) (*tenancyv1alpha1.Workspace, error) {
			return c.update(ctx, parent, ws, "status")
		},
		update: func(ctx context.Context, parent logicalcluster.Name, ws *tenancyv1alpha1.Workspace) error {
			_, err := c.update(ctx, parent, ws)
			return err
		},
		remote: func(ws *tenancyv1alpha1.Workspace) bool {
			shard := shardOf(ws)
			return shard != "" && shard != c.shardName
		},
	}
	if cfg.Migrations != nil {
		c.deletion.moving = func(ws *tenancyv1alpha1.Workspace, present bool) string {
			var ms []*migrationv1alpha1.LogicalClusterMigration
			for _, obj := range cfg.Migrations.Indexer().List() {
				if m, ok := obj.(*migrationv1alpha1.LogicalClusterMigration); ok {
					ms = append(ms, m)
				}
			}
			if m := migrationcontroller.Pending(ms, clusterOf(ws), shardOf(ws), present); m != nil {
				cluster, _ := logicalcluster.ObjectCluster(m.Annotations)
				return migrationcontroller.Claim(cluster, m.Name)
			}
			return ""
		}
	}
	c.loop = loop.New("workspace", c.reconcile)
	if cfg.ShardEvents != nil {
		cfg.ShardEvents.AddHandler(c.loop.Handler(func(obj interface{}) (string, bool) {
			if !shardlookup.InRoot(obj) {
				return "", false
			}
			c.waiting.Range(func(key, _ any) bool {
				c.loop.Enqueue(key.(string))
				return true
			})
			return "", false
		}))
	}
	c.workspaces.AddHandler(c.load)
	c.workspaces.AddHandler(c.loop.Handler(nil))
	// A LogicalCluster's changes go to the Workspace that owns it.
	c.logicalClusters.AddHandler(c.loop.Handler(func(obj interface{}) (string, bool) {
		lc, ok := obj.(*corev1alpha1.LogicalCluster)
		if !ok || lc.Spec.Owner == nil || lc.Spec.Owner.Resource != "workspaces" {
			return "", false
		}
		return wildcardinformer.Key(logicalcluster.Name(lc.Spec.Owner.Cluster), "", lc.Spec.Owner.Name), true
	}))
	return c
}

// Run runs the workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers) }

func (c *Controller) reconcile(ctx context.Context, key string) error {
	parent, _, name, ok := wildcardinformer.SplitKey(key)
	if !ok {
		return nil
	}
	obj, exists, err := c.workspaces.Get(parent, "", name)
	if err != nil {
		return err
	}
	if !exists {
		c.written.Forget(key)
		c.waiting.Delete(key)
		return nil
	}
	if c.written.Stale(key, obj.(*tenancyv1alpha1.Workspace).ResourceVersion) {
		return nil
	}
	ws := obj.(*tenancyv1alpha1.Workspace).DeepCopy()
	if ws.Spec.Mount != nil {
		// A mounted workspace has no logical cluster to schedule, mirror or
		// delete: pkg/controllers/workspacemount owns it.
		return nil
	}
	if ws.DeletionTimestamp != nil || ws.Spec.Cluster != "" {
		c.waiting.Delete(key)
	}
	switch {
	case ws.DeletionTimestamp != nil:
		return c.deletion.reconcile(ctx, parent, ws)
	case ws.Spec.Cluster == "":
		return c.reconcileScheduling(ctx, parent, ws)
	default:
		return c.reconcilePhase(ctx, parent, ws)
	}
}

// shard returns the Shard object a workspace is on, nil when unknown.
func (c *Controller) shard(name string) *corev1alpha1.Shard {
	s, err := c.shards.Get(name)
	if err != nil {
		return nil
	}
	return s
}

// shardOf returns the name of the shard a workspace was scheduled to, ""
// when unknown. Workspaces scheduled before core.kcp.io/shard was written
// carry the plain name in internal.tenancy.kcp.io/shard.
func shardOf(ws *tenancyv1alpha1.Workspace) string {
	if name := ws.Annotations[corev1alpha1.ShardAnnotationKey]; name != "" {
		return name
	}
	return ws.Annotations[tenancyv1alpha1.WorkspaceShardHashAnnotationKey]
}

// clusterOf returns the logical cluster of a workspace: spec.cluster once
// scheduled, before that the one its recorded placement names ("" for
// none).
func clusterOf(ws *tenancyv1alpha1.Workspace) logicalcluster.Name {
	if ws.Spec.Cluster != "" {
		return logicalcluster.Name(ws.Spec.Cluster)
	}
	return logicalcluster.Name(ws.Annotations[tenancyv1alpha1.WorkspaceClusterAnnotationKey])
}

// getLogicalCluster reads the LogicalCluster of a scheduled workspace, from
// the informer when it is on this shard and through its shard otherwise.
// Of a workspace without a recorded placement it reads the cluster this
// shard may have created for it before recording it (see
// reconcileScheduling), from etcd: the informer may not show it yet.
func (c *Controller) getLogicalCluster(ctx context.Context, ws *tenancyv1alpha1.Workspace) (*corev1alpha1.LogicalCluster, error) {
	shardName := shardOf(ws)
	cluster := clusterOf(ws)
	if cluster == "" {
		lc := &corev1alpha1.LogicalCluster{}
		if err := c.local.Get(ctx, ClusterName(string(ws.UID)), kcpclient.LogicalClusters, corev1alpha1.LogicalClusterName, lc); err != nil {
			return nil, err
		}
		if lc.Spec.Owner == nil || lc.Spec.Owner.UID != ws.UID {
			return nil, nil
		}
		return lc, nil
	}
	if shardName == "" || shardName == c.shardName {
		obj, exists, err := c.logicalClusters.Get(cluster, "", corev1alpha1.LogicalClusterName)
		if err != nil || !exists {
			return nil, err
		}
		return obj.(*corev1alpha1.LogicalCluster), nil
	}
	shard := c.shard(shardName)
	if shard == nil {
		return nil, loop.RequeueAfter(time.Second)
	}
	client, err := c.shardClient(shard)
	if err != nil {
		return nil, err
	}
	lc := &corev1alpha1.LogicalCluster{}
	if err := client.Get(ctx, cluster, kcpclient.LogicalClusters, corev1alpha1.LogicalClusterName, lc); err != nil {
		return nil, err
	}
	return lc, nil
}

// update writes ws (its status with subresource "status") and returns the
// stored Workspace; until the informer shows the write, reconciles of
// older copies are skipped.
func (c *Controller) update(ctx context.Context, parent logicalcluster.Name, ws *tenancyv1alpha1.Workspace, subresource ...string) (*tenancyv1alpha1.Workspace, error) {
	ws.APIVersion, ws.Kind = tenancyv1alpha1.SchemeGroupVersion.String(), "Workspace"
	updated := &tenancyv1alpha1.Workspace{}
	if err := c.local.Update(ctx, parent, kcpclient.Workspaces, ws.Name, ws, updated, subresource...); err != nil {
		return nil, err
	}
	c.written.RecordWrite(wildcardinformer.Key(parent, "", ws.Name), updated)
	return updated, nil
}
