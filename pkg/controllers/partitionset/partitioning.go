package partitionset

import (
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
)

// combinations returns the distinct combinations of the values that the
// shards have for the label keys (the dimensions and the keys of the
// selector's matchLabels), keyed by combinationKey: a shard lacking one of
// the keys adds none, so no combination selects no shard. Without any key
// there is no combination, as in kcp.
func combinations(shards []*corev1alpha1.Shard, dimensions []string, matchLabels map[string]string) map[string]map[string]string {
	keys := slices.Clone(dimensions)
	for k := range matchLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	out := map[string]map[string]string{}
	if len(keys) == 0 {
		return out
	}
	for _, s := range shards {
		values := make(map[string]string, len(keys))
		for _, k := range keys {
			v, ok := s.Labels[k]
			if !ok {
				values = nil
				break
			}
			values[k] = v
		}
		if values != nil {
			out[combinationKey(values)] = values
		}
	}
	return out
}

// combinationKey names a combination of label values: its labels in key
// order.
func combinationKey(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString("+" + k + "=" + labels[k])
	}
	return b.String()
}

// newPartition is the Partition of one combination: it selects the
// combination's labels and the set's matchExpressions, and is named after
// the set and the values of the dimensions (sorted by key), lower-cased
// and cut to what generateName allows, with a random suffix, as in kcp.
func newPartition(set *topologyv1alpha1.PartitionSet, dimensions []string, matchLabels map[string]string, matchExpressions []metav1.LabelSelectorRequirement) *topologyv1alpha1.Partition {
	name := set.Name
	for _, d := range slices.Sorted(slices.Values(dimensions)) {
		name += "-" + strings.ToLower(matchLabels[d])
	}
	name = name[:min(validation.DNS1123SubdomainMaxLength-1, len(name))]
	return &topologyv1alpha1.Partition{
		TypeMeta: metav1.TypeMeta{APIVersion: topologyv1alpha1.SchemeGroupVersion.String(), Kind: "Partition"},
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    name + "-",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, topologyv1alpha1.SchemeGroupVersion.WithKind("PartitionSet"))},
		},
		Spec: topologyv1alpha1.PartitionSpec{Selector: &metav1.LabelSelector{MatchLabels: matchLabels, MatchExpressions: matchExpressions}},
	}
}
