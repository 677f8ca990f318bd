package apiexportendpointslice

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
)

// endpointsReconciler computes status.endpoints, status.shardSelector and
// the conditions APIExportValid, PartitionValid and EndpointURLsReady.
type endpointsReconciler struct {
	resolvePath func(logicalcluster.Path) (logicalcluster.Name, bool)
	listShards  func() ([]*corev1alpha1.Shard, error)
	// getPartition reads a Partition of the slice's logical cluster.
	getPartition func(cluster logicalcluster.Name, name string) (*topologyv1alpha1.Partition, error)
	// hasBindings tells whether this shard has bindings of an export.
	hasBindings func(exportCluster logicalcluster.Name, export string) bool
	shardName   string
}

func (r *endpointsReconciler) reconcile(cluster logicalcluster.Name, slice *apisv1alpha1.APIExportEndpointSlice) error {
	ref := slice.Spec.APIExport
	exportCluster, ok := r.exportCluster(cluster, ref.Path)
	if !ok {
		slice.Status.APIExportEndpoints = nil
		setFalse(slice, apisv1alpha1.APIExportValid, apisv1alpha1.APIExportNotFoundReason,
			fmt.Sprintf("workspace %q of APIExport %s is not known", ref.Path, ref.Name))
		return nil
	}
	setTrue(slice, apisv1alpha1.APIExportValid)
	selector, err := r.partitionSelector(cluster, slice)
	if selector == nil {
		return err
	}
	shards, err := r.listShards()
	if err != nil {
		return err
	}
	sort.Slice(shards, func(i, j int) bool { return shards[i].Name < shards[j].Name })
	var endpoints []apisv1alpha1.APIExportEndpoint
	for _, s := range shards {
		if !selector.Matches(labels.Set(s.Labels)) {
			continue
		}
		if s.Name == r.shardName && !r.hasBindings(exportCluster, ref.Name) {
			continue
		}
		endpoints = append(endpoints, apisv1alpha1.APIExportEndpoint{URL: viewurl.APIExportURL(viewurl.ShardServerURL(s), exportCluster, ref.Name)})
	}
	slice.Status.APIExportEndpoints = endpoints
	setTrue(slice, apisv1alpha1.APIExportEndpointSliceURLsReady)
	return nil
}

// partitionSelector returns the shard selector of the slice's Partition,
// or every shard without one, and records it in status.shardSelector and
// PartitionValid, as kcp does. Without a selector (the Partition is
// missing or unreadable) the endpoints are cleared; the error is one to
// retry.
func (r *endpointsReconciler) partitionSelector(cluster logicalcluster.Name, slice *apisv1alpha1.APIExportEndpointSlice) (labels.Selector, error) {
	selector := labels.Everything()
	if name := slice.Spec.Partition; name != "" {
		p, err := r.getPartition(cluster, name)
		if err == nil && p == nil {
			err = apierrors.NewNotFound(topologyv1alpha1.Resource("partitions"), name)
		}
		if err != nil {
			slice.Status.APIExportEndpoints = nil
			if apierrors.IsNotFound(err) {
				setFalse(slice, apisv1alpha1.PartitionValid, apisv1alpha1.PartitionInvalidReferenceReason, err.Error())
				return nil, nil
			}
			setFalse(slice, apisv1alpha1.PartitionValid, apisv1alpha2.InternalErrorReason, err.Error())
			return nil, err
		}
		if p.Spec.Selector != nil {
			if selector, err = metav1.LabelSelectorAsSelector(p.Spec.Selector); err != nil {
				// Validation refuses such selectors: nothing to retry.
				slice.Status.APIExportEndpoints = nil
				setFalse(slice, apisv1alpha1.PartitionValid, apisv1alpha1.PartitionInvalidReferenceReason, err.Error())
				return nil, nil
			}
		}
	}
	setTrue(slice, apisv1alpha1.PartitionValid)
	slice.Status.ShardSelector = selector.String()
	return selector, nil
}

// exportCluster resolves the export's workspace: the slice's own when the
// path is empty.
func (r *endpointsReconciler) exportCluster(sliceCluster logicalcluster.Name, path string) (logicalcluster.Name, bool) {
	if path == "" {
		return sliceCluster, true
	}
	p, err := logicalcluster.ParsePath(path)
	if err != nil {
		return "", false
	}
	if c, ok := r.resolvePath(p); ok {
		return c, true
	}
	// A logical cluster name stands for itself.
	return p.Name()
}

func setTrue(s *apisv1alpha1.APIExportEndpointSlice, t conditionsv1alpha1.ConditionType) {
	conditionsv1alpha1.Set(s, conditionsv1alpha1.Condition{Type: t, Status: corev1.ConditionTrue})
}

func setFalse(s *apisv1alpha1.APIExportEndpointSlice, t conditionsv1alpha1.ConditionType, reason, message string) {
	conditionsv1alpha1.Set(s, conditionsv1alpha1.Condition{Type: t, Status: corev1.ConditionFalse, Severity: conditionsv1alpha1.ConditionSeverityError, Reason: reason, Message: message})
}
