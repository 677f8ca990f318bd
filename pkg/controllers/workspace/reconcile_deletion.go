package workspace

import (
	"context"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	corev1alpha1 "github.com/kplane-dev/kplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/kplane-dev/kplane/pkg/apis/tenancy/v1alpha1"
	"github.com/kplane-dev/kplane/pkg/controllers/loop"
	"github.com/kplane-dev/kplane/pkg/kcpclient"
	"github.com/kplane-dev/kplane/pkg/logicalcluster"
)

// reconcileDeletion deletes the workspace's LogicalCluster and releases the
// workspace once it is gone.
func (c *Controller) reconcileDeletion(ctx context.Context, parent logicalcluster.Name, ws *tenancyv1alpha1.Workspace) error {
	if !slices.Contains(ws.Finalizers, tenancyv1alpha1.LogicalClusterFinalizer) {
		return nil
	}
	if ws.Spec.Cluster != "" {
		lc, err := c.getLogicalCluster(ctx, ws)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if lc != nil {
			if lc.DeletionTimestamp == nil {
				if err := c.deleteLogicalCluster(ctx, ws); err != nil {
					return err
				}
			}
			if ws.Status.Phase != corev1alpha1.LogicalClusterPhaseDeleting {
				ws.Status.Phase = corev1alpha1.LogicalClusterPhaseDeleting
				return c.update(ctx, parent, ws, "status")
			}
			return loop.RequeueAfter(time.Second)
		}
	}
	ws.Finalizers = slices.DeleteFunc(ws.Finalizers, func(f string) bool { return f == tenancyv1alpha1.LogicalClusterFinalizer })
	err := c.update(ctx, parent, ws)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (c *Controller) deleteLogicalCluster(ctx context.Context, ws *tenancyv1alpha1.Workspace) error {
	shardName := ws.Annotations[ShardAnnotationKey]
	if shardName == "" {
		shardName = c.shardName
	}
	shard := c.shard(shardName)
	if shard == nil {
		return loop.RequeueAfter(time.Second)
	}
	client, err := c.shardClient(shard)
	if err != nil {
		return err
	}
	err = client.Delete(ctx, logicalcluster.Name(ws.Spec.Cluster), kcpclient.LogicalClusters, corev1alpha1.LogicalClusterName, nil)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
