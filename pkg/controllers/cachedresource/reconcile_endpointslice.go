package cachedresource

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// reconcileSlice publishes the URL of the view of the copies of the
// slice's ClusterCachedResource, in the slice's workspace.
func (c *Controller) reconcileSlice(ctx context.Context, key string) error {
	cluster, _, name, ok := wildcardinformer.SplitKey(key)
	if !ok {
		return nil
	}
	obj, exists, err := c.cfg.EndpointSlices.Get(cluster, "", name)
	if err != nil || !exists {
		return err
	}
	slice := obj.(*cachev1alpha1.ClusterCachedResourceEndpointSlice).DeepCopy()
	if slice.DeletionTimestamp != nil {
		return nil
	}
	old := slice.Status.DeepCopy()
	ref := slice.Spec.ClusterCachedResource
	switch {
	case ref.Path != "" && ref.Path != cluster.String():
		// Only a ClusterCachedResource of the slice's own workspace is
		// looked up.
		setSliceCondition(slice, cachev1alpha1.ClusterCachedResourceValid, corev1.ConditionFalse, cachev1alpha1.ClusterCachedResourceInvalidReferenceReason,
			fmt.Sprintf("The ClusterCachedResource must be in the slice's workspace %s, not %s", cluster, ref.Path))
		slice.Status.ClusterCachedResourceEndpoints = nil
	default:
		r, err := c.get(cluster, ref.Name)
		if err != nil {
			return err
		}
		if r == nil {
			setSliceCondition(slice, cachev1alpha1.ClusterCachedResourceValid, corev1.ConditionFalse, cachev1alpha1.ClusterCachedResourceNotFoundReason,
				fmt.Sprintf("ClusterCachedResource %s not found", ref.Name))
			slice.Status.ClusterCachedResourceEndpoints = nil
			break
		}
		setSliceCondition(slice, cachev1alpha1.ClusterCachedResourceValid, corev1.ConditionTrue, "", "")
		slice.Status.ClusterCachedResourceEndpoints = []cachev1alpha1.ClusterCachedResourceEndpoint{{URL: c.cfg.ViewURL(cluster, slice.Name)}}
	}
	if len(c.cfg.APIExports) > 0 {
		if ok, msg := c.exportReferences(cluster, slice); ok {
			setSliceCondition(slice, cachev1alpha1.APIExportValid, corev1.ConditionTrue, "", "")
		} else {
			setSliceCondition(slice, cachev1alpha1.APIExportValid, corev1.ConditionFalse, cachev1alpha1.APIExportInvalidReferenceReason, msg)
		}
	}
	if apiequality.Semantic.DeepEqual(*old, slice.Status) {
		return nil
	}
	slice.APIVersion, slice.Kind = cachev1alpha1.SchemeGroupVersion.String(), "ClusterCachedResourceEndpointSlice"
	return ignoreNotFound(c.cfg.KCP.Update(ctx, cluster, kcpclient.ClusterCachedResourceEndpointSlices, slice.Name, slice, &cachev1alpha1.ClusterCachedResourceEndpointSlice{}, "status"))
}

// enqueueSlicesOf looks again at every slice of a cluster.
func (c *Controller) enqueueSlicesOf(cluster logicalcluster.Name) {
	objs, err := c.cfg.EndpointSlices.List(cluster, "")
	if err != nil {
		return
	}
	for _, obj := range objs {
		if s, ok := obj.(*cachev1alpha1.ClusterCachedResourceEndpointSlice); ok {
			c.slices.Enqueue(wildcardinformer.Key(cluster, "", s.Name))
		}
	}
}

func setSliceCondition(s *cachev1alpha1.ClusterCachedResourceEndpointSlice, t conditionsv1alpha1.ConditionType, status corev1.ConditionStatus, reason, message string) {
	c := conditionsv1alpha1.Condition{Type: t, Status: status, Reason: reason, Message: message}
	if status == corev1.ConditionFalse {
		c.Severity = conditionsv1alpha1.ConditionSeverityError
	}
	conditionsv1alpha1.Set(s, c)
}

// exportReferences tells whether the slice's APIExport exists and serves a
// virtual resource from the slice, as kcp's APIExportValid requires.
func (c *Controller) exportReferences(cluster logicalcluster.Name, slice *cachev1alpha1.ClusterCachedResourceEndpointSlice) (bool, string) {
	ref := slice.Spec.APIExport
	exportCluster := cluster
	if ref.Path != "" {
		name, ok := logicalcluster.Path(ref.Path).Name()
		if !ok {
			return false, fmt.Sprintf("APIExport path %q is not a logical cluster name", ref.Path)
		}
		exportCluster = name
	}
	obj, exists, err := wildcardinformer.First(exportCluster, "", ref.Name, c.cfg.APIExports...)
	export, ok := obj.(*apisv1alpha2.APIExport)
	if err != nil || !exists || !ok {
		return false, fmt.Sprintf("APIExport %s not found", exportCluster.Path().Join(ref.Name))
	}
	for _, r := range export.Spec.Resources {
		v := r.Storage.Virtual
		if v != nil && v.Reference.APIGroup != nil && *v.Reference.APIGroup == cachev1alpha1.GroupName &&
			v.Reference.Kind == "ClusterCachedResourceEndpointSlice" && v.Reference.Name == slice.Name && exportCluster == cluster {
			return true, ""
		}
	}
	return false, fmt.Sprintf("APIExport %s does not reference ClusterCachedResourceEndpointSlice %s", exportCluster.Path().Join(ref.Name), slice.Name)
}
