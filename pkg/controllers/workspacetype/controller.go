// Package workspacetype keeps the status of WorkspaceTypes: a type is Ready
// as soon as it is stored, since nothing else has to happen before
// workspaces of it can be created. Given the shards (Config.Shards), its
// status.virtualWorkspaces lists the URLs of the views of its initializer
// and terminator on every shard's virtual workspace server.
package workspacetype

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/shardlookup"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Controller reconciles the status of WorkspaceTypes in all logical
// clusters of the shard.
type Controller struct {
	loop *loop.Loop
	// getWorkspaceType reads a WorkspaceType; nil when it is gone.
	getWorkspaceType func(cluster logicalcluster.Name, name string) (*tenancyv1alpha1.WorkspaceType, error)
	// updateStatus writes a WorkspaceType's status.
	updateStatus func(ctx context.Context, cluster logicalcluster.Name, wt *tenancyv1alpha1.WorkspaceType) error
	// steps change the status of a copy of the type, in order.
	steps []step
}

// step is one concern of the status.
type step interface {
	reconcile(wt *tenancyv1alpha1.WorkspaceType)
}

// Config is what the controller needs.
type Config struct {
	// WorkspaceTypes is the shard's wildcard WorkspaceType informer.
	WorkspaceTypes *wildcardinformer.Informer
	// KCP writes the status (it must be the system: the shard's loopback
	// identity).
	KCP *kcpclient.Client
	// Shards, when set (an informer of root's Shards), has the virtual
	// workspace URLs of every shard it knows listed in
	// status.virtualWorkspaces, kept current as shards come, go and change.
	Shards *wildcardinformer.Informer
}

// requeueAll enqueues every WorkspaceType when a shard changes.
type requeueAll struct {
	c              *Controller
	workspaceTypes *wildcardinformer.Informer
}

func (r requeueAll) OnAdd(interface{})                 { r.enqueue() }
func (r requeueAll) OnUpdate(interface{}, interface{}) { r.enqueue() }
func (r requeueAll) OnDelete(interface{})              { r.enqueue() }
func (r requeueAll) enqueue() {
	for _, key := range r.workspaceTypes.Indexer().ListKeys() {
		r.c.loop.Enqueue(key)
	}
}

// New returns the controller and registers its handlers; call before the
// informers run.
func New(cfg Config) *Controller {
	workspaceTypes, kcp := cfg.WorkspaceTypes, cfg.KCP
	c := &Controller{
		getWorkspaceType: func(cluster logicalcluster.Name, name string) (*tenancyv1alpha1.WorkspaceType, error) {
			obj, exists, err := workspaceTypes.Get(cluster, "", name)
			if err != nil || !exists {
				return nil, err
			}
			return obj.(*tenancyv1alpha1.WorkspaceType), nil
		},
		updateStatus: func(ctx context.Context, cluster logicalcluster.Name, wt *tenancyv1alpha1.WorkspaceType) error {
			wt.APIVersion, wt.Kind = tenancyv1alpha1.SchemeGroupVersion.String(), "WorkspaceType"
			return kcp.Update(ctx, cluster, kcpclient.WorkspaceTypes, wt.Name, wt, &tenancyv1alpha1.WorkspaceType{}, "status")
		},
		steps: []step{readyReconciler{}},
	}
	c.loop = loop.New("workspacetype", c.reconcile)
	workspaceTypes.AddHandler(c.loop.Handler(nil))
	if cfg.Shards != nil {
		lookup := shardlookup.Root{Informer: cfg.Shards}
		c.steps = append(c.steps, virtualWorkspacesReconciler{listShards: lookup.List})
		cfg.Shards.AddHandler(shardlookup.SkipStatusUpdates(requeueAll{c: c, workspaceTypes: workspaceTypes}))
	}
	return c
}

// Run runs the workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers) }

func (c *Controller) reconcile(ctx context.Context, key string) error {
	cluster, _, name, ok := wildcardinformer.SplitKey(key)
	if !ok {
		return nil
	}
	wt, err := c.getWorkspaceType(cluster, name)
	if err != nil || wt == nil || wt.DeletionTimestamp != nil {
		return err
	}
	wt = wt.DeepCopy()
	old := wt.Status.DeepCopy()
	for _, s := range c.steps {
		s.reconcile(wt)
	}
	if apiequality.Semantic.DeepEqual(*old, wt.Status) {
		return nil
	}
	err = c.updateStatus(ctx, cluster, wt)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
