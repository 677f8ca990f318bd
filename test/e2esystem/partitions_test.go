package e2esystem

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/system"
	"github.com/shardplane/shardplane/test/framework"
)

// TestPartitionsSplitTheEndpointsOfRealShards is the partition part of
// kcp's TestAPIBindingEndpointSlicesSharded on two real shards, every
// request through the front-proxy: a PartitionSet on the second shard
// (which reads root's Shards from the cache server) splits the shards by
// their name label into one Partition each, and an APIExportEndpointSlice
// naming one of them lists that shard's endpoint only, while one without a
// partition lists both. kcp's test selects shards by a label of its
// harness ("shared"); the name label every Shard carries serves here.
func TestPartitionsSplitTheEndpointsOfRealShards(t *testing.T) {
	if shards < 2 {
		t.Skip("needs two shards")
	}
	t.Parallel()
	ctx := testContext(t)
	second := system.ShardName(1)
	providerWS := readyWorkspace(ctx, t, "root", uniqueName("partitions-provider"), "organization", second)
	consumerWS := readyWorkspace(ctx, t, "root", uniqueName("partitions-consumer"), "organization", second)
	provider, consumer := logicalcluster.Name(providerWS.Spec.Cluster), logicalcluster.Name(consumerWS.Spec.Cluster)
	group := uniqueName("partitions") + ".dev"
	publishCowboysOn(ctx, t, provider, group)
	// A binding on the second shard puts its view among the endpoints.
	bindCowboysOn(ctx, t, consumer, provider, group)
	admin := kcp(t, sys.AdminConfig(t, ""))

	set := &topologyv1alpha1.PartitionSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: topologyv1alpha1.SchemeGroupVersion.String(), Kind: "PartitionSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "by-shard"},
		Spec:       topologyv1alpha1.PartitionSetSpec{Dimensions: []string{corev1alpha1.ShardNameLabel}},
	}
	if err := admin.Create(ctx, provider, kcpclient.PartitionSets, set, &topologyv1alpha1.PartitionSet{}); err != nil {
		t.Fatalf("create PartitionSet: %v", err)
	}
	partitionOf := map[string]string{}
	framework.Eventually(t, func(ctx context.Context) error {
		got := &topologyv1alpha1.PartitionSet{}
		if err := admin.Get(ctx, provider, kcpclient.PartitionSets, set.Name, got); err != nil {
			return err
		}
		if !got.Status.Conditions.IsTrue(topologyv1alpha1.PartitionsReady) || got.Status.Count != uint(shards) {
			return fmt.Errorf("count %d, conditions %+v", got.Status.Count, got.Status.Conditions)
		}
		list := &topologyv1alpha1.PartitionList{}
		if err := admin.List(ctx, provider, kcpclient.Partitions, list); err != nil {
			return err
		}
		clear(partitionOf)
		for _, p := range list.Items {
			partitionOf[p.Spec.Selector.MatchLabels[corev1alpha1.ShardNameLabel]] = p.Name
		}
		if len(partitionOf) != shards {
			return fmt.Errorf("partitions by shard %v", partitionOf)
		}
		return nil
	}, "a Partition per shard in %s", provider)

	// The endpoint of a shard is its virtual workspace URL.
	endpointOf := map[string]string{}
	for _, name := range []string{corev1alpha1.RootShard, second} {
		shard, err := shardGet(ctx, t, name)
		if err != nil {
			t.Fatal(err)
		}
		endpointOf[name] = strings.TrimSuffix(shard.Spec.VirtualWorkspaceURL, "/") + "/services/apiexport/" + string(provider) + "/today-cowboys"
	}
	for _, tc := range []struct {
		name, partition string
		want            []string
	}{
		{"all", "", []string{endpointOf[corev1alpha1.RootShard], endpointOf[second]}},
		{"root", partitionOf[corev1alpha1.RootShard], []string{endpointOf[corev1alpha1.RootShard]}},
		{"second", partitionOf[second], []string{endpointOf[second]}},
	} {
		slice := &apisv1alpha1.APIExportEndpointSlice{
			TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIExportEndpointSlice"},
			ObjectMeta: metav1.ObjectMeta{Name: "cowboys-" + tc.name},
			Spec:       apisv1alpha1.APIExportEndpointSliceSpec{APIExport: apisv1alpha1.ExportBindingReference{Path: string(provider), Name: "today-cowboys"}, Partition: tc.partition},
		}
		if err := admin.Create(ctx, provider, kcpclient.APIExportEndpointSlices, slice, &apisv1alpha1.APIExportEndpointSlice{}); err != nil {
			t.Fatalf("create APIExportEndpointSlice %s: %v", slice.Name, err)
		}
		framework.Eventually(t, func(ctx context.Context) error {
			got := &apisv1alpha1.APIExportEndpointSlice{}
			if err := admin.Get(ctx, provider, kcpclient.APIExportEndpointSlices, slice.Name, got); err != nil {
				return err
			}
			var urls []string
			for _, e := range got.Status.APIExportEndpoints {
				urls = append(urls, e.URL)
			}
			slices.Sort(urls)
			want := slices.Sorted(slices.Values(tc.want))
			if !got.Status.Conditions.IsTrue(apisv1alpha1.PartitionValid) || !slices.Equal(urls, want) {
				return fmt.Errorf("endpoints %v, want %v; conditions %+v", urls, want, got.Status.Conditions)
			}
			return nil
		}, "the endpoints of APIExportEndpointSlice %s", slice.Name)
	}
}
