package apiexportendpointslice

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func shard(name, base, external, vw string) *corev1alpha1.Shard {
	return &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1alpha1.ShardSpec{BaseURL: base, ExternalURL: external, VirtualWorkspaceURL: vw}}
}

func TestEndpointsNameTheShardsThatServeTheExportsConsumers(t *testing.T) {
	shards := []*corev1alpha1.Shard{
		shard("shard-1", "https://s:2", "https://proxy", "https://proxy/shards/shard-1"),
		shard("root", "https://s:1", "https://proxy", "https://proxy/shards/root"),
	}
	for _, tc := range []struct {
		name        string
		path        string
		hasBindings bool
		want        []string
		valid       bool
	}{
		{"this shard with bindings and the other", "", true, []string{
			"https://proxy/shards/root/services/apiexport/provider/e",
			"https://proxy/shards/shard-1/services/apiexport/provider/e"}, true},
		{"this shard without bindings is left out", "", false, []string{"https://proxy/shards/shard-1/services/apiexport/provider/e"}, true},
		{"export by path", "root:org", true, []string{
			"https://proxy/shards/root/services/apiexport/org-cluster/e",
			"https://proxy/shards/shard-1/services/apiexport/org-cluster/e"}, true},
		{"unknown path", "root:nope", true, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &endpointsReconciler{
				resolvePath: func(p logicalcluster.Path) (logicalcluster.Name, bool) {
					if p == "root:org" {
						return "org-cluster", true
					}
					return "", false
				},
				listShards:  func() ([]*corev1alpha1.Shard, error) { return append([]*corev1alpha1.Shard(nil), shards...), nil },
				hasBindings: func(logicalcluster.Name, string) bool { return tc.hasBindings },
				shardName:   "root",
			}
			slice := &apisv1alpha1.APIExportEndpointSlice{Spec: apisv1alpha1.APIExportEndpointSliceSpec{APIExport: apisv1alpha1.ExportBindingReference{Path: tc.path, Name: "e"}}}
			if err := r.reconcile("provider", slice); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range slice.Status.APIExportEndpoints {
				got = append(got, e.URL)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("endpoints %v, want %v", got, tc.want)
			}
			if valid := slice.Status.Conditions.IsTrue(apisv1alpha1.APIExportValid); valid != tc.valid {
				t.Errorf("APIExportValid %v, want %v", valid, tc.valid)
			}
		})
	}
}

// TestPartitionKeepsTheEndpointsOfTheShardsItSelects mirrors kcp's
// TestAPIExportEndpointSliceWithPartition: a missing Partition is
// PartitionInvalidReference without endpoints; an existing one keeps the
// endpoints of the shards it selects and records its selector.
func TestPartitionKeepsTheEndpointsOfTheShardsItSelects(t *testing.T) {
	eu := shard("shard-1", "https://s:2", "https://proxy", "https://proxy/shards/shard-1")
	eu.Labels = map[string]string{"region": "eu"}
	shards := []*corev1alpha1.Shard{eu, shard("root", "https://s:1", "https://proxy", "https://proxy/shards/root")}
	partitions := map[string]*topologyv1alpha1.Partition{
		"eu":      {Spec: topologyv1alpha1.PartitionSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}}},
		"nowhere": {Spec: topologyv1alpha1.PartitionSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "apiexportendpointslice-test-region"}}}},
	}
	for _, tc := range []struct {
		partition, selector, reason string
		valid                       bool
		want                        []string
	}{
		{"", "", "", true, []string{"https://proxy/shards/root/services/apiexport/provider/e", "https://proxy/shards/shard-1/services/apiexport/provider/e"}},
		{"missing", "", apisv1alpha1.PartitionInvalidReferenceReason, false, nil},
		{"eu", "region=eu", "", true, []string{"https://proxy/shards/shard-1/services/apiexport/provider/e"}},
		{"nowhere", "region=apiexportendpointslice-test-region", "", true, nil},
	} {
		t.Run(tc.partition, func(t *testing.T) {
			r := &endpointsReconciler{
				resolvePath: func(logicalcluster.Path) (logicalcluster.Name, bool) { return "", false },
				listShards:  func() ([]*corev1alpha1.Shard, error) { return append([]*corev1alpha1.Shard(nil), shards...), nil },
				getPartition: func(cluster logicalcluster.Name, name string) (*topologyv1alpha1.Partition, error) {
					if cluster != "provider" {
						t.Errorf("Partition read in %s, want the slice's cluster", cluster)
					}
					return partitions[name], nil
				},
				hasBindings: func(logicalcluster.Name, string) bool { return true },
				shardName:   "root",
			}
			slice := &apisv1alpha1.APIExportEndpointSlice{Spec: apisv1alpha1.APIExportEndpointSliceSpec{APIExport: apisv1alpha1.ExportBindingReference{Name: "e"}, Partition: tc.partition}}
			slice.Status.APIExportEndpoints = []apisv1alpha1.APIExportEndpoint{{URL: "https://stale"}}
			if err := r.reconcile("provider", slice); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range slice.Status.APIExportEndpoints {
				got = append(got, e.URL)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("endpoints %v, want %v", got, tc.want)
			}
			c := slice.Status.Conditions.Get(apisv1alpha1.PartitionValid)
			if c == nil || (c.Status == "True") != tc.valid || c.Reason != tc.reason {
				t.Errorf("PartitionValid %+v, want valid %v reason %q", c, tc.valid, tc.reason)
			}
			if tc.valid && slice.Status.ShardSelector != tc.selector {
				t.Errorf("shardSelector %q, want %q", slice.Status.ShardSelector, tc.selector)
			}
		})
	}
}
