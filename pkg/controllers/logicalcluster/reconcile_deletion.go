package logicalcluster

import (
	"context"
	"slices"
	"time"

	"k8s.io/klog/v2"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	corev1alpha1 "github.com/kplane-dev/kplane/pkg/apis/core/v1alpha1"
	"github.com/kplane-dev/kplane/pkg/kcpclient"
	"github.com/kplane-dev/kplane/pkg/logicalcluster"
)

// reconcileDeletion deletes all content of the cluster (RBAC last), then
// releases the LogicalCluster.
func (c *Controller) reconcileDeletion(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
	if _, done := c.released.Load(cluster); done || !slices.Contains(lc.Finalizers, corev1alpha1.LogicalClusterDeletionFinalizer) {
		return nil
	}
	if lc.Status.Phase != corev1alpha1.LogicalClusterPhaseDeleting {
		lc.Status.Phase = corev1alpha1.LogicalClusterPhaseDeleting
		updated := &corev1alpha1.LogicalCluster{}
		lc.APIVersion, lc.Kind = corev1alpha1.SchemeGroupVersion.String(), "LogicalCluster"
		if err := c.kcp.Update(ctx, cluster, kcpclient.LogicalClusters, lc.Name, lc, updated, "status"); err != nil {
			return err
		}
		lc = updated
	}
	start := time.Now()
	remaining, err := c.deleteContent(ctx, cluster, lc.ResourceVersion)
	klog.FromContext(ctx).V(4).Info("Deleted logical cluster content", "cluster", cluster, "remaining", remaining, "duration", time.Since(start))
	if err != nil {
		return err
	}
	if remaining {
		// Finalizers hold objects; their removal brings events, this is the
		// fallback.
		return requeueSoon
	}
	lc.Finalizers = slices.DeleteFunc(lc.Finalizers, func(f string) bool { return f == corev1alpha1.LogicalClusterDeletionFinalizer })
	lc.APIVersion, lc.Kind = corev1alpha1.SchemeGroupVersion.String(), "LogicalCluster"
	err = c.kcp.Update(ctx, cluster, kcpclient.LogicalClusters, lc.Name, lc, &corev1alpha1.LogicalCluster{})
	if err == nil || apierrors.IsNotFound(err) {
		c.released.Store(cluster, struct{}{})
		return nil
	}
	return err
}
