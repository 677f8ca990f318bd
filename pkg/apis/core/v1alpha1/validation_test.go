package v1alpha1

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// errorFields returns the field paths of errs, in order.
func errorFields(errs field.ErrorList) []string {
	fields := []string{}
	for _, err := range errs {
		fields = append(fields, err.Field)
	}
	return fields
}

func checkErrorFields(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if got := errorFields(errs); !reflect.DeepEqual(got, want) {
		t.Errorf("want errors on %v, got %v", want, errs)
	}
}

func validLogicalCluster() *LogicalCluster {
	return &LogicalCluster{
		ObjectMeta: metav1.ObjectMeta{Name: LogicalClusterName, ResourceVersion: "1"},
		Spec: LogicalClusterSpec{
			Owner: &LogicalClusterOwner{
				APIVersion: "tenancy.kcp.io/v1alpha1",
				Resource:   "workspaces",
				Name:       "team",
				Cluster:    "root",
				UID:        "3f2d",
			},
			Initializers: []LogicalClusterInitializer{"root:organization", "system:apibindings"},
			Terminators:  []LogicalClusterTerminator{"1x2y3z:cleanup"},
		},
		Status: LogicalClusterStatus{
			URL:   "https://front-proxy.example:6443/clusters/root:org",
			Phase: LogicalClusterPhaseInitializing,
		},
	}
}

func TestValidateLogicalClusterCreate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*LogicalCluster)
		want   []string
	}{
		{name: "valid", mutate: func(*LogicalCluster) {}},
		{name: "without owner", mutate: func(lc *LogicalCluster) { lc.Spec.Owner = nil }},
		{
			name:   "name other than cluster",
			mutate: func(lc *LogicalCluster) { lc.Name = "foo" },
			want:   []string{"metadata.name"},
		},
		{
			name:   "generateName",
			mutate: func(lc *LogicalCluster) { lc.Name, lc.GenerateName = "", "cluster-" },
			want:   []string{"metadata.generateName", "metadata.name"},
		},
		{
			name:   "namespaced",
			mutate: func(lc *LogicalCluster) { lc.Namespace = "default" },
			want:   []string{"metadata.namespace"},
		},
		{
			name: "incomplete owner",
			mutate: func(lc *LogicalCluster) {
				lc.Spec.Owner = &LogicalClusterOwner{APIVersion: "a/b/c", Cluster: "Not_A_Name"}
			},
			want: []string{
				"spec.owner.apiVersion", "spec.owner.resource", "spec.owner.name",
				"spec.owner.cluster", "spec.owner.uid",
			},
		},
		{
			name: "bad initializers and terminators",
			mutate: func(lc *LogicalCluster) {
				lc.Spec.Initializers = []LogicalClusterInitializer{"noseparator", "root:org", "root:org", ""}
				lc.Status.Terminators = []LogicalClusterTerminator{"system:", "Root:Upper"}
			},
			want: []string{
				"spec.initializers[0]", "spec.initializers[2]", "spec.initializers[3]",
				"status.terminators[0]", "status.terminators[1]",
			},
		},
		{
			name:   "unknown phase",
			mutate: func(lc *LogicalCluster) { lc.Status.Phase = "Sleeping" },
			want:   []string{"status.phase"},
		},
		{
			name:   "relative URL",
			mutate: func(lc *LogicalCluster) { lc.Status.URL = "/clusters/root" },
			want:   []string{"status.URL"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lc := validLogicalCluster()
			tt.mutate(lc)
			checkErrorFields(t, ValidateLogicalClusterCreate(lc), tt.want)
		})
	}
}

func TestValidateLogicalClusterUpdate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*LogicalCluster)
		want   []string
	}{
		{name: "status and owner may change", mutate: func(lc *LogicalCluster) {
			lc.Spec.DirectlyDeletable = true
			lc.Spec.Owner.Name = "other"
			lc.Status.Phase = LogicalClusterPhaseReady
		}},
		{
			name:   "spec initializers are immutable",
			mutate: func(lc *LogicalCluster) { lc.Spec.Initializers = nil },
			want:   []string{"spec.initializers"},
		},
		{
			name:   "spec terminators are immutable",
			mutate: func(lc *LogicalCluster) { lc.Spec.Terminators = append(lc.Spec.Terminators, "root:more") },
			want:   []string{"spec.terminators"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldLC := validLogicalCluster()
			newLC := oldLC.DeepCopy()
			tt.mutate(newLC)
			checkErrorFields(t, ValidateLogicalClusterUpdate(newLC, oldLC), tt.want)
		})
	}
}

func TestValidateLogicalClusterStatusUpdateChecksOnlyStatus(t *testing.T) {
	oldLC := validLogicalCluster()
	newLC := oldLC.DeepCopy()
	newLC.Spec.Initializers = nil // the status strategy resets spec; validation must not care
	newLC.Status.Initializers = []LogicalClusterInitializer{"bad"}
	checkErrorFields(t, ValidateLogicalClusterStatusUpdate(newLC, oldLC), []string{"status.initializers[0]"})
}

func validShard() *Shard {
	return &Shard{
		ObjectMeta: metav1.ObjectMeta{Name: "root", ResourceVersion: "1"},
		Spec: ShardSpec{
			BaseURL:             "https://10.0.0.1:6443",
			ExternalURL:         "https://kcp.example.com",
			VirtualWorkspaceURL: "https://10.0.0.1:6444",
		},
	}
}

func TestValidateShardCreate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Shard)
		want   []string
	}{
		{name: "valid", mutate: func(*Shard) {}},
		{name: "only baseURL", mutate: func(s *Shard) { s.Spec.ExternalURL, s.Spec.VirtualWorkspaceURL = "", "" }},
		{name: "http is fine", mutate: func(s *Shard) { s.Spec.BaseURL = "http://localhost:6443" }},
		{
			name:   "baseURL missing",
			mutate: func(s *Shard) { s.Spec.BaseURL = "" },
			want:   []string{"spec.baseURL"},
		},
		{
			name: "URLs not absolute http(s)",
			mutate: func(s *Shard) {
				s.Spec.BaseURL = "10.0.0.1:6443"
				s.Spec.ExternalURL = "ftp://kcp.example.com"
				s.Spec.VirtualWorkspaceURL = "https://"
			},
			want: []string{"spec.baseURL", "spec.externalURL", "spec.virtualWorkspaceURL"},
		},
		{
			name: "workspace limits",
			mutate: func(s *Shard) {
				s.Spec.ResourceLimits = &ShardResourceLimits{
					Soft: corev1.ResourceList{ResourceWorkspaces: resource.MustParse("0")},
					Hard: corev1.ResourceList{ResourceWorkspaces: resource.MustParse("500")},
				}
			},
		},
		{
			name: "negative, fractional and unknown limits",
			mutate: func(s *Shard) {
				s.Spec.ResourceLimits = &ShardResourceLimits{
					Soft: corev1.ResourceList{ResourceWorkspaces: resource.MustParse("-1"), "cpu": resource.MustParse("1")},
					Hard: corev1.ResourceList{ResourceWorkspaces: resource.MustParse("1500m")},
				}
			},
			want: []string{"spec.resourceLimits.soft[cpu]", "spec.resourceLimits.soft[workspaces]", "spec.resourceLimits.hard[workspaces]"},
		},
		{
			name:   "name not a DNS label",
			mutate: func(s *Shard) { s.Name = "shard.one" },
			want:   []string{"metadata.name"},
		},
		{
			name: "negative capacity",
			mutate: func(s *Shard) {
				s.Status.Capacity = corev1.ResourceList{"logicalclusters": resource.MustParse("-1")}
			},
			want: []string{"status.capacity[logicalclusters]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validShard()
			tt.mutate(s)
			checkErrorFields(t, ValidateShardCreate(s), tt.want)
		})
	}
}

func TestValidateShardUpdate(t *testing.T) {
	oldShard := validShard()
	newShard := oldShard.DeepCopy()
	newShard.Spec.ExternalURL = "https://new-proxy.example.com"
	checkErrorFields(t, ValidateShardUpdate(newShard, oldShard), nil)

	newShard.Spec.BaseURL = ""
	checkErrorFields(t, ValidateShardUpdate(newShard, oldShard), []string{"spec.baseURL"})
	checkErrorFields(t, ValidateShardStatusUpdate(newShard, oldShard), nil)
}
