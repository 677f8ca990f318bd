package partitionset

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func shard(name string, l map[string]string) *corev1alpha1.Shard {
	return &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

func TestCombinationsAreThoseOfShardsWithEveryKey(t *testing.T) {
	shards := []*corev1alpha1.Shard{
		shard("a", map[string]string{"region": "eu", "zone": "1"}),
		shard("b", map[string]string{"region": "eu", "zone": "2"}),
		shard("c", map[string]string{"region": "eu", "zone": "1", "extra": "x"}),
		shard("d", map[string]string{"region": "us"}),
		shard("e", nil),
	}
	for _, tc := range []struct {
		name        string
		dimensions  []string
		matchLabels map[string]string
		want        []string
	}{
		{"one dimension", []string{"region"}, nil, []string{"+region=eu", "+region=us"}},
		{"two dimensions skip shards lacking one", []string{"zone", "region"}, nil, []string{"+region=eu+zone=1", "+region=eu+zone=2"}},
		// The shards are selected before; the keys of matchLabels split them.
		{"matchLabels keys count as dimensions", nil, map[string]string{"region": "eu"}, []string{"+region=eu", "+region=us"}},
		{"a dimension that is also matched once", []string{"region", "region"}, map[string]string{"region": "us"}, []string{"+region=eu", "+region=us"}},
		{"no dimension, no partition", nil, nil, nil},
		{"a key no shard has", []string{"nope"}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := slices.Sorted(maps.Keys(combinations(shards, tc.dimensions, tc.matchLabels)))
			if !slices.Equal(got, tc.want) {
				t.Errorf("combinations %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPartitionNameIsCutAsKcps mirrors the name check of kcp's
// TestPartitionSetAdmission: the set's name and the dimension values,
// lower-cased, in the order of their keys.
func TestPartitionNameIsCutAsKcps(t *testing.T) {
	set := &topologyv1alpha1.PartitionSet{ObjectMeta: metav1.ObjectMeta{Name: "test-partitionset", UID: "u"}}
	p := newPartition(set, []string{"b", "a"}, map[string]string{"a": "EU", "b": "Zone-1"}, nil)
	if p.GenerateName != "test-partitionset-eu-zone-1-" {
		t.Errorf("generateName %q", p.GenerateName)
	}
	long := newPartition(set, []string{"a"}, map[string]string{"a": strings.Repeat("x", 300)}, nil)
	if len(long.GenerateName) != validation.DNS1123SubdomainMaxLength {
		t.Errorf("generateName of %d characters", len(long.GenerateName))
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != "u" || ref.Kind != "PartitionSet" {
		t.Errorf("owner %+v", ref)
	}
}

// fakePartitions is a logical cluster's Partitions.
type fakePartitions struct {
	items   map[string]topologyv1alpha1.Partition
	next    int
	created []string
	deleted []string
}

func (f *fakePartitions) reconciler(shards []*corev1alpha1.Shard) *partitionsReconciler {
	return &partitionsReconciler{
		listShards: func(s labels.Selector) ([]*corev1alpha1.Shard, error) {
			var out []*corev1alpha1.Shard
			for _, sh := range shards {
				if s.Matches(labels.Set(sh.Labels)) {
					out = append(out, sh)
				}
			}
			return out, nil
		},
		listPartitions: func(context.Context, logicalcluster.Name) ([]topologyv1alpha1.Partition, error) {
			return slices.Collect(maps.Values(f.items)), nil
		},
		createPartition: func(_ context.Context, _ logicalcluster.Name, p *topologyv1alpha1.Partition) error {
			f.next++
			p.Name = p.GenerateName + string(rune('a'+f.next))
			f.items[p.Name] = *p
			f.created = append(f.created, combinationKey(p.Spec.Selector.MatchLabels))
			return nil
		},
		deletePartition: func(_ context.Context, _ logicalcluster.Name, name string) error {
			if _, ok := f.items[name]; !ok {
				return apierrors.NewNotFound(schema.GroupResource{}, name)
			}
			f.deleted = append(f.deleted, combinationKey(f.items[name].Spec.Selector.MatchLabels))
			delete(f.items, name)
			return nil
		},
	}
}

// TestPartitionsFollowTheShards walks kcp's TestPartitionSet: shards come,
// move to another region and are excluded by the selector.
func TestPartitionsFollowTheShards(t *testing.T) {
	set := &topologyv1alpha1.PartitionSet{
		ObjectMeta: metav1.ObjectMeta{Name: "test-partitionset", UID: "set-uid"},
		Spec: topologyv1alpha1.PartitionSetSpec{
			Dimensions: []string{"region"},
			ShardSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "excluded", Operator: metav1.LabelSelectorOpDoesNotExist},
			}},
		},
	}
	other := topologyv1alpha1.Partition{ObjectMeta: metav1.ObjectMeta{Name: "by-hand"}, Spec: topologyv1alpha1.PartitionSpec{Selector: &metav1.LabelSelector{}}}
	f := &fakePartitions{items: map[string]topologyv1alpha1.Partition{"by-hand": other}}
	steps := []struct {
		name   string
		shards []*corev1alpha1.Shard
		count  uint
	}{
		{"no shard", nil, 0},
		{"one region", []*corev1alpha1.Shard{shard("1a", map[string]string{"region": "r1"})}, 1},
		{"two regions", []*corev1alpha1.Shard{shard("1a", map[string]string{"region": "r1"}), shard("2", map[string]string{"region": "r2"})}, 2},
		{"second moves to the first region", []*corev1alpha1.Shard{shard("1a", map[string]string{"region": "r1"}), shard("2", map[string]string{"region": "r1"})}, 1},
		{"third region", []*corev1alpha1.Shard{shard("1a", map[string]string{"region": "r1"}), shard("3", map[string]string{"region": "r3"})}, 2},
		{"third excluded", []*corev1alpha1.Shard{shard("1a", map[string]string{"region": "r1"}), shard("3", map[string]string{"region": "r3", "excluded": "true"})}, 1},
	}
	for _, step := range steps {
		if err := f.reconciler(step.shards).reconcile(context.Background(), "c", set); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if set.Status.Count != step.count {
			t.Errorf("%s: count %d, want %d", step.name, set.Status.Count, step.count)
		}
		if owned := len(f.items) - 1; owned != int(step.count) {
			t.Errorf("%s: %d partitions, want %d", step.name, owned, step.count)
		}
		if !set.Status.Conditions.IsTrue(topologyv1alpha1.PartitionSetValid) || !set.Status.Conditions.IsTrue(topologyv1alpha1.PartitionsReady) {
			t.Errorf("%s: conditions %+v", step.name, set.Status.Conditions)
		}
	}
	if _, ok := f.items["by-hand"]; !ok {
		t.Error("a Partition the set does not own was deleted")
	}
	if want := []string{"+region=r1", "+region=r2", "+region=r3"}; !slices.Equal(f.created, want) {
		t.Errorf("created %v, want %v", f.created, want)
	}
	if want := []string{"+region=r2", "+region=r3"}; !slices.Equal(f.deleted, want) {
		t.Errorf("deleted %v, want %v", f.deleted, want)
	}

	// A changed matchExpression replaces every Partition.
	f.created, f.deleted = nil, nil
	set.Spec.ShardSelector.MatchExpressions = append(set.Spec.ShardSelector.MatchExpressions, metav1.LabelSelectorRequirement{Key: "region", Operator: metav1.LabelSelectorOpExists})
	if err := f.reconciler(steps[len(steps)-1].shards).reconcile(context.Background(), "c", set); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.created, []string{"+region=r1"}) || !slices.Equal(f.deleted, []string{"+region=r1"}) {
		t.Errorf("new selector: created %v, deleted %v", f.created, f.deleted)
	}
}

func TestInvalidSelectorMarksTheSetInvalid(t *testing.T) {
	set := &topologyv1alpha1.PartitionSet{Spec: topologyv1alpha1.PartitionSetSpec{ShardSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Bogus"}},
	}}}
	f := &fakePartitions{items: map[string]topologyv1alpha1.Partition{}}
	if err := f.reconciler(nil).reconcile(context.Background(), "c", set); err != nil {
		t.Fatal(err)
	}
	c := set.Status.Conditions.Get(topologyv1alpha1.PartitionSetValid)
	if c == nil || c.Status != "False" || c.Reason != topologyv1alpha1.PartitionSetInvalidSelectorReason {
		t.Errorf("PartitionSetValid %+v", c)
	}
	if r := set.Status.Conditions.Get(topologyv1alpha1.PartitionsReady); r == nil || r.Reason != topologyv1alpha1.ErrorGeneratingPartitionsReason {
		t.Errorf("PartitionsReady %+v", r)
	}
}
