package partitionset

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// partitionsReconciler keeps one Partition per combination of the set's
// dimensions over the selected shards' labels, and status.count and the
// conditions PartitionSetValid and PartitionsReady.
type partitionsReconciler struct {
	// listShards returns root's Shards that selector selects.
	listShards func(selector labels.Selector) ([]*corev1alpha1.Shard, error)
	// listPartitions returns the Partitions of a logical cluster, read from
	// the server: an informer lagging behind a create would make the next
	// pass create the Partition again.
	listPartitions  func(ctx context.Context, cluster logicalcluster.Name) ([]topologyv1alpha1.Partition, error)
	createPartition func(ctx context.Context, cluster logicalcluster.Name, p *topologyv1alpha1.Partition) error
	deletePartition func(ctx context.Context, cluster logicalcluster.Name, name string) error
}

func (r *partitionsReconciler) reconcile(ctx context.Context, cluster logicalcluster.Name, set *topologyv1alpha1.PartitionSet) error {
	selector := labels.Everything()
	var matchLabels map[string]string
	matchExpressions := []metav1.LabelSelectorRequirement{}
	if s := set.Spec.ShardSelector; s != nil {
		var err error
		if selector, err = metav1.LabelSelectorAsSelector(s); err != nil {
			// Validation refuses such selectors; one stored before stays
			// invalid, so there is nothing to retry.
			setFalse(set, topologyv1alpha1.PartitionSetValid, topologyv1alpha1.PartitionSetInvalidSelectorReason, err.Error())
			setFalse(set, topologyv1alpha1.PartitionsReady, topologyv1alpha1.ErrorGeneratingPartitionsReason, "")
			return nil
		}
		matchLabels = s.MatchLabels
		if s.MatchExpressions != nil {
			matchExpressions = s.MatchExpressions
		}
	}
	setTrue(set, topologyv1alpha1.PartitionSetValid)

	shards, err := r.listShards(selector)
	if err != nil {
		setFalse(set, topologyv1alpha1.PartitionsReady, topologyv1alpha1.ErrorGeneratingPartitionsReason, "error listing Shards")
		return err
	}
	all, err := r.listPartitions(ctx, cluster)
	if err != nil {
		setFalse(set, topologyv1alpha1.PartitionsReady, topologyv1alpha1.ErrorGeneratingPartitionsReason, err.Error())
		return err
	}
	dimensions := slices.Compact(slices.Sorted(slices.Values(set.Spec.Dimensions)))
	wanted := combinations(shards, dimensions, matchLabels)
	set.Status.Count = uint(len(wanted))

	logger := klog.FromContext(ctx)
	existing := map[string]bool{}
	for i := range all {
		p := &all[i]
		if !ownedBy(p, set) {
			continue
		}
		var oldLabels map[string]string
		oldExpressions := []metav1.LabelSelectorRequirement{}
		if p.Spec.Selector != nil {
			oldLabels = p.Spec.Selector.MatchLabels
			if p.Spec.Selector.MatchExpressions != nil {
				oldExpressions = p.Spec.Selector.MatchExpressions
			}
		}
		key := combinationKey(oldLabels)
		if _, ok := wanted[key]; ok && !existing[key] && apiequality.Semantic.DeepEqual(oldExpressions, matchExpressions) {
			existing[key] = true
			continue
		}
		logger.V(2).Info("Deleting Partition", "partition", p.Name)
		if err := r.deletePartition(ctx, cluster, p.Name); err != nil && !apierrors.IsNotFound(err) {
			setFalse(set, topologyv1alpha1.PartitionsReady, topologyv1alpha1.ErrorGeneratingPartitionsReason, "old partition could not get deleted")
			return err
		}
	}
	for _, key := range slices.Sorted(maps.Keys(wanted)) {
		if existing[key] {
			continue
		}
		p := newPartition(set, dimensions, wanted[key], matchExpressions)
		logger.V(2).Info("Creating Partition", "generateName", p.GenerateName)
		if err := r.createPartition(ctx, cluster, p); err != nil && !apierrors.IsAlreadyExists(err) {
			setFalse(set, topologyv1alpha1.PartitionsReady, topologyv1alpha1.ErrorGeneratingPartitionsReason, "partition could not get created")
			return err
		}
	}
	setTrue(set, topologyv1alpha1.PartitionsReady)
	return nil
}

// ownedBy tells whether the PartitionSet set generated p.
func ownedBy(p *topologyv1alpha1.Partition, set *topologyv1alpha1.PartitionSet) bool {
	for _, o := range p.OwnerReferences {
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err == nil && o.UID == set.UID && o.Kind == "PartitionSet" && gv.Group == topologyv1alpha1.GroupName {
			return true
		}
	}
	return false
}

func setTrue(s *topologyv1alpha1.PartitionSet, t conditionsv1alpha1.ConditionType) {
	conditionsv1alpha1.Set(s, conditionsv1alpha1.Condition{Type: t, Status: corev1.ConditionTrue})
}

func setFalse(s *topologyv1alpha1.PartitionSet, t conditionsv1alpha1.ConditionType, reason, message string) {
	conditionsv1alpha1.Set(s, conditionsv1alpha1.Condition{Type: t, Status: corev1.ConditionFalse, Severity: conditionsv1alpha1.ConditionSeverityError, Reason: reason, Message: message})
}
