// Package workspacetype keeps the status of WorkspaceTypes: a type is Ready
// as soon as it is stored, since nothing else has to happen before
// workspaces of it can be created. Listing the virtual workspace URLs of its
// initializer and terminator (status.virtualWorkspaces) waits for the
// virtual workspaces.
package workspacetype

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	tenancyv1alpha1 "github.com/kplane-dev/kplane/pkg/apis/tenancy/v1alpha1"
	"github.com/kplane-dev/kplane/pkg/controllers/loop"
	"github.com/kplane-dev/kplane/pkg/kcpclient"
	"github.com/kplane-dev/kplane/pkg/logicalcluster"
	"github.com/kplane-dev/kplane/pkg/wildcardinformer"
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

// New returns the controller; kcp writes the status (it must be the
// system: the shard's loopback identity).
func New(workspaceTypes *wildcardinformer.Informer, kcp *kcpclient.Client) *Controller {
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
