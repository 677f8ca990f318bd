package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/test/framework"
)

// partitionTestShard creates a Shard in root that no workspace is
// scheduled to, as kcp's partition tests do, and deletes it when the test
// ends.
func partitionTestShard(ctx context.Context, t *testing.T, kcp *kcpREST, name string, labels map[string]string) *corev1alpha1.Shard {
	t.Helper()
	shard := &corev1alpha1.Shard{
		TypeMeta: metav1.TypeMeta{APIVersion: corev1alpha1.SchemeGroupVersion.String(), Kind: "Shard"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{
			corev1alpha1.ShardUnschedulableAnnotationKey: "true",
		}},
		Spec: corev1alpha1.ShardSpec{BaseURL: "https://base.kcp.test.dev"},
	}
	created := &corev1alpha1.Shard{}
	if err := kcp.create(ctx, "root", kcpclient.Shards, shard, created); err != nil {
		t.Fatalf("create shard %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := kcp.delete(context.Background(), "root", kcpclient.Shards, name); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete shard %s: %v", name, err)
		}
	})
	return created
}

// relabelShard replaces the labels of a Shard in root.
func relabelShard(ctx context.Context, t *testing.T, kcp *kcpREST, name string, labels map[string]string) {
	t.Helper()
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		shard := &corev1alpha1.Shard{}
		if err := kcp.get(ctx, "root", kcpclient.Shards, name, shard); err != nil {
			return err
		}
		shard.Labels = labels
		shard.APIVersion, shard.Kind = corev1alpha1.SchemeGroupVersion.String(), "Shard"
		return kcp.update(ctx, "root", kcpclient.Shards, name, shard, &corev1alpha1.Shard{})
	}, "relabel shard %s", name)
}

// waitForPartitionSet polls the PartitionSet until PartitionsReady is True
// and status.count is count.
func waitForPartitionSet(t *testing.T, kcp *kcpREST, cluster, name string, count uint) *topologyv1alpha1.PartitionSet {
	t.Helper()
	var set *topologyv1alpha1.PartitionSet
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		// A fresh object each time: decoding leaves fields the answer omits.
		set = &topologyv1alpha1.PartitionSet{}
		if err := kcp.get(ctx, cluster, kcpclient.PartitionSets, name, set); err != nil {
			return err
		}
		if !set.Status.Conditions.IsTrue(topologyv1alpha1.PartitionSetValid) || !set.Status.Conditions.IsTrue(topologyv1alpha1.PartitionsReady) || set.Status.Count != count {
			return fmt.Errorf("count %d, conditions %+v", set.Status.Count, set.Status.Conditions)
		}
		return nil
	}, "PartitionSet %s|%s valid and ready with count %d", cluster, name, count)
	return set
}

// waitForPartitions polls the Partitions of a workspace until there are n.
func waitForPartitions(t *testing.T, kcp *kcpREST, cluster string, n int) []topologyv1alpha1.Partition {
	t.Helper()
	var list *topologyv1alpha1.PartitionList
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		list = &topologyv1alpha1.PartitionList{}
		if err := kcp.list(ctx, cluster, kcpclient.Partitions, list); err != nil {
			return err
		}
		if len(list.Items) != n {
			return fmt.Errorf("%d partitions: %+v", len(list.Items), list.Items)
		}
		return nil
	}, "%d partitions in %s", n, cluster)
	return list.Items
}

func partitionSelectors(items []topologyv1alpha1.Partition) []string {
	var out []string
	for _, p := range items {
		var pairs []string
		for _, k := range slices.Sorted(maps.Keys(p.Spec.Selector.MatchLabels)) {
			pairs = append(pairs, k+"="+p.Spec.Selector.MatchLabels[k])
		}
		out = append(out, strings.Join(pairs, ","))
	}
	slices.Sort(out)
	return out
}

// TestPartitionSet performs kcp's TestPartitionSet
// (test/e2e/reconciler/partitionset): a PartitionSet in a workspace of an
// organization has one Partition per region of root's Shards that its
// selector selects, following shards as they come, move and are excluded.
func TestPartitionSet(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaces(t)
	ctx := testContext(t)
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "partitionset")
	ws := readyWorkspace(ctx, t, kcp, org.path(), "partitionset", nil).path()

	t.Logf("Creating a partitionSet not matching any shard")
	set := &topologyv1alpha1.PartitionSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: topologyv1alpha1.SchemeGroupVersion.String(), Kind: "PartitionSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "test-partitionset"},
		Spec: topologyv1alpha1.PartitionSetSpec{
			Dimensions: []string{"partition-test-region"},
			ShardSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "excluded", Operator: metav1.LabelSelectorOpDoesNotExist},
			}},
		},
	}
	if err := kcp.create(ctx, ws, kcpclient.PartitionSets, set, &topologyv1alpha1.PartitionSet{}); err != nil {
		t.Fatalf("create partitionSet: %v", err)
	}
	waitForPartitionSet(t, kcp, ws, set.Name, 0)
	waitForPartitions(t, kcp, ws, 0)

	t.Logf("Creating a shard matching the partitionSet")
	partitionTestShard(ctx, t, kcp, "partition-shard-1a", map[string]string{"partition-test-region": "partition-test-region-1"})
	waitForPartitionSet(t, kcp, ws, set.Name, 1)
	items := waitForPartitions(t, kcp, ws, 1)
	if got := partitionSelectors(items); !slices.Equal(got, []string{"partition-test-region=partition-test-region-1"}) {
		t.Errorf("selector not as expected: %v", got)
	}

	t.Logf("Creating a shard in a second region")
	partitionTestShard(ctx, t, kcp, "partition-shard-2", map[string]string{"partition-test-region": "partition-test-region-2"})
	waitForPartitionSet(t, kcp, ws, set.Name, 2)
	items = waitForPartitions(t, kcp, ws, 2)
	if got := partitionSelectors(items); !slices.Equal(got, []string{"partition-test-region=partition-test-region-1", "partition-test-region=partition-test-region-2"}) {
		t.Errorf("selectors not as expected: %v", got)
	}

	t.Logf("Moving the second shard to the same region as the first one")
	relabelShard(ctx, t, kcp, "partition-shard-2", map[string]string{"partition-test-region": "partition-test-region-1"})
	waitForPartitionSet(t, kcp, ws, set.Name, 1)
	waitForPartitions(t, kcp, ws, 1)

	t.Logf("Creating a shard part of a third region")
	partitionTestShard(ctx, t, kcp, "partition-shard-3", map[string]string{"partition-test-region": "partition-test-region-3"})
	waitForPartitionSet(t, kcp, ws, set.Name, 2)
	waitForPartitions(t, kcp, ws, 2)

	t.Logf("Excluding the shard of the third region")
	relabelShard(ctx, t, kcp, "partition-shard-3", map[string]string{"partition-test-region": "partition-test-region-3", "excluded": "true"})
	waitForPartitionSet(t, kcp, ws, set.Name, 1)
	items = waitForPartitions(t, kcp, ws, 1)
	if ref := metav1.GetControllerOf(&items[0]); ref == nil || ref.Kind != "PartitionSet" || ref.Name != set.Name {
		t.Errorf("partition %s is owned by %+v, want the PartitionSet", items[0].Name, ref)
	}

	// Beyond kcp's test: the garbage collector deletes the Partitions of a
	// deleted set, which owns them.
	if err := kcp.delete(ctx, ws, kcpclient.PartitionSets, set.Name); err != nil {
		t.Fatalf("delete partitionSet: %v", err)
	}
	waitForPartitions(t, kcp, ws, 0)
}

// TestPartitionSetAdmission performs kcp's TestPartitionSetAdmission:
// invalid shard selectors are refused, and a Partition's name is the
// set's and the dimension values', cut to what generated names allow.
func TestPartitionSetAdmission(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaces(t)
	ctx := testContext(t)
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "partitionset-adm")
	ws := readyWorkspace(ctx, t, kcp, org.path(), "partitionset-admission", nil).path()

	for what, selector := range map[string]*metav1.LabelSelector{
		"Key too long in matchExpressions": {MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "region/1234567890123456789012345678901234567890123456789012345678901234567890", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"antartica", "greenland"},
		}}},
		"Character not allowed at first place in matchExpressions values": {MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "region", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"antartica", "_A.123456789012345678901234567890123456789012345678901234567890"},
		}}},
		"Invalid value in matchExpressions operator": {MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: "region", Operator: "DoesNotExist", Values: []string{"antartica", "greenland"},
		}}},
		"Invalid key in matchLabels":   {MatchLabels: map[string]string{"1234567890123456789_01234567890123456789/aaa": "keynotvalid"}},
		"Invalid value in matchLabels": {MatchLabels: map[string]string{"valuenotvalid": "1234567890123456789%%%01234567890123456789"}},
	} {
		set := &topologyv1alpha1.PartitionSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: topologyv1alpha1.SchemeGroupVersion.String(), Kind: "PartitionSet"},
			ObjectMeta: metav1.ObjectMeta{Name: "admission-partitionset"},
			Spec:       topologyv1alpha1.PartitionSetSpec{Dimensions: []string{"region"}, ShardSelector: selector},
		}
		err := kcp.create(ctx, ws, kcpclient.PartitionSets, set, &topologyv1alpha1.PartitionSet{})
		requireAPIError(t, err, 422, what, "spec.shardSelector")
	}

	t.Logf("Partition name cut when the label values sum up")
	set := &topologyv1alpha1.PartitionSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: topologyv1alpha1.SchemeGroupVersion.String(), Kind: "PartitionSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "test-partitionset"},
		Spec: topologyv1alpha1.PartitionSetSpec{
			Dimensions: []string{"partition-test-label1", "partition-test-label2", "partition-test-label3", "partition-test-label4", "partition-test-label5"},
		},
	}
	if err := kcp.create(ctx, ws, kcpclient.PartitionSets, set, &topologyv1alpha1.PartitionSet{}); err != nil {
		t.Fatalf("create partitionSet: %v", err)
	}
	labelValues := []string{
		"label1-12345678901234567890123456789012345678901234567890",
		"label2-12345678901234567890123456789012345678901234567890",
		"label3-12345678901234567890123456789012345678901234567890",
		"label4-12345678901234567890123456789012345678901234567890",
		"label5-12345678901234567890123456789012345678901234567890",
	}
	labels := map[string]string{}
	for i, v := range labelValues {
		labels[fmt.Sprintf("partition-test-label%d", i+1)] = v
	}
	partitionTestShard(ctx, t, kcp, "partition-shard-adm", labels)
	items := waitForPartitions(t, kcp, ws, 1)
	expected := set.Name + "-" + strings.Join(labelValues, "-")
	expected = expected[:validation.DNS1123LabelMaxLength-5]
	if got := items[0].Name; got[:len(got)-5] != expected {
		t.Errorf("partition name not as expected, got: %s", got)
	}
}

// TestAPIExportEndpointSliceWithPartition performs kcp's test of that
// name (test/e2e/reconciler/apiexportendpointslice): a slice may not name
// a missing export; naming a missing Partition makes PartitionValid False
// with reason PartitionInvalidReference and no endpoints; once the
// Partition exists it is valid, and as it selects no shard there is still
// no endpoint.
func TestAPIExportEndpointSliceWithPartition(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaces(t)
	ctx := testContext(t)
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "slice-partition")
	exportWS := readyWorkspace(ctx, t, kcp, org.path(), "export", nil).path()
	partitionWS := readyWorkspace(ctx, t, kcp, org.path(), "partition", nil).path()

	slice := &apisv1alpha1.APIExportEndpointSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIExportEndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: "my-slice"},
		Spec:       apisv1alpha1.APIExportEndpointSliceSpec{APIExport: apisv1alpha1.ExportBindingReference{Path: exportWS, Name: "my-export"}},
	}
	partition := &topologyv1alpha1.Partition{
		TypeMeta:   metav1.TypeMeta{APIVersion: topologyv1alpha1.SchemeGroupVersion.String(), Kind: "Partition"},
		ObjectMeta: metav1.ObjectMeta{Name: "my-partition"},
		Spec: topologyv1alpha1.PartitionSpec{Selector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"region": "apiexportendpointslice-test-region"},
		}},
	}

	t.Logf("Creating an APIExportEndpointSlice with reference to a nonexistent APIExport")
	err := kcp.create(ctx, partitionWS, kcpclient.APIExportEndpointSlices, slice, &apisv1alpha1.APIExportEndpointSlice{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("creating an APIExportEndpointSlice of a missing export: %v, want Forbidden", err)
	}
	slices := &apisv1alpha1.APIExportEndpointSliceList{}
	if err := kcp.list(ctx, partitionWS, kcpclient.APIExportEndpointSlices, slices); err != nil || len(slices.Items) != 0 {
		t.Fatalf("APIExportEndpointSlices after the refusal: %v, %v", slices.Items, err)
	}

	t.Logf("Creating the missing APIExport")
	export := &apisv1alpha2.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: "my-export"},
	}
	if err := kcp.create(ctx, exportWS, apiExportsGVR, export, &apisv1alpha2.APIExport{}); err != nil {
		t.Fatalf("create APIExport: %v", err)
	}
	created := &apisv1alpha1.APIExportEndpointSlice{}
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		return kcp.create(ctx, partitionWS, kcpclient.APIExportEndpointSlices, slice, created)
	}, "APIExportEndpointSlice creation to succeed")
	waitForSlice := func(what string, ok func(*apisv1alpha1.APIExportEndpointSlice) bool) *apisv1alpha1.APIExportEndpointSlice {
		t.Helper()
		var got *apisv1alpha1.APIExportEndpointSlice
		framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
			// A fresh object each time: decoding leaves fields the answer omits.
			got = &apisv1alpha1.APIExportEndpointSlice{}
			if err := kcp.get(ctx, partitionWS, kcpclient.APIExportEndpointSlices, created.Name, got); err != nil {
				return err
			}
			if !ok(got) {
				return fmt.Errorf("conditions %+v", got.Status.Conditions)
			}
			return nil
		}, "%s", what)
		return got
	}
	waitForSlice("expected valid APIExport", func(s *apisv1alpha1.APIExportEndpointSlice) bool {
		return s.Status.Conditions.IsTrue(apisv1alpha1.APIExportValid)
	})

	t.Logf("Adding a Partition to the APIExportEndpointSlice")
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		latest := &apisv1alpha1.APIExportEndpointSlice{}
		if err := kcp.get(ctx, partitionWS, kcpclient.APIExportEndpointSlices, created.Name, latest); err != nil {
			return err
		}
		latest.Spec.Partition = partition.Name
		latest.APIVersion, latest.Kind = apisv1alpha1.SchemeGroupVersion.String(), "APIExportEndpointSlice"
		return kcp.update(ctx, partitionWS, kcpclient.APIExportEndpointSlices, created.Name, latest, &apisv1alpha1.APIExportEndpointSlice{})
	}, "add the partition to the APIExportEndpointSlice")
	got := waitForSlice("expected missing Partition", func(s *apisv1alpha1.APIExportEndpointSlice) bool {
		c := s.Status.Conditions.Get(apisv1alpha1.PartitionValid)
		return c != nil && c.Status == "False" && c.Reason == apisv1alpha1.PartitionInvalidReferenceReason
	})
	if len(got.Status.APIExportEndpoints) != 0 {
		t.Errorf("not expecting any endpoint: %v", got.Status.APIExportEndpoints)
	}

	t.Logf("Creating the missing Partition")
	if err := kcp.create(ctx, partitionWS, kcpclient.Partitions, partition, &topologyv1alpha1.Partition{}); err != nil {
		t.Fatalf("create Partition: %v", err)
	}
	got = waitForSlice("expected valid Partition", func(s *apisv1alpha1.APIExportEndpointSlice) bool {
		return s.Status.Conditions.IsTrue(apisv1alpha1.PartitionValid)
	})
	t.Logf("Checking that no endpoint has been populated")
	if len(got.Status.APIExportEndpoints) != 0 {
		t.Errorf("not expecting any endpoint: %v", got.Status.APIExportEndpoints)
	}
	if got.Status.ShardSelector != "region=apiexportendpointslice-test-region" {
		t.Errorf("status.shardSelector %q, want the Partition's selector", got.Status.ShardSelector)
	}

	// Beyond kcp's test: a shard of the region is the one endpoint.
	partitionTestShard(ctx, t, kcp, "partition-shard-slice", map[string]string{"region": "apiexportendpointslice-test-region"})
	got = waitForSlice("the endpoint of the selected shard", func(s *apisv1alpha1.APIExportEndpointSlice) bool {
		return len(s.Status.APIExportEndpoints) == 1
	})
	if url := got.Status.APIExportEndpoints[0].URL; !strings.HasPrefix(url, "https://base.kcp.test.dev/") {
		t.Errorf("endpoint %s is not the selected shard's", url)
	}
}
