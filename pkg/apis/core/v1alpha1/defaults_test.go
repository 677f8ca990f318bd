package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := Install(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

func TestDefaultLogicalClusterPhase(t *testing.T) {
	scheme := newScheme(t)
	tests := []struct {
		name  string
		phase LogicalClusterPhaseType
		want  LogicalClusterPhaseType
	}{
		{name: "empty becomes Scheduling", want: LogicalClusterPhaseScheduling},
		{name: "set phase is kept", phase: LogicalClusterPhaseReady, want: LogicalClusterPhaseReady},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lc := &LogicalCluster{Status: LogicalClusterStatus{Phase: tt.phase}}
			scheme.Default(lc)
			if lc.Status.Phase != tt.want {
				t.Errorf("phase = %q, want %q", lc.Status.Phase, tt.want)
			}
		})
	}
}

func TestDefaultShardURLs(t *testing.T) {
	scheme := newScheme(t)
	tests := []struct {
		name                          string
		spec                          ShardSpec
		wantExternal, wantVirtualWork string
	}{
		{
			name:            "both default to baseURL",
			spec:            ShardSpec{BaseURL: "https://shard:6443"},
			wantExternal:    "https://shard:6443",
			wantVirtualWork: "https://shard:6443",
		},
		{
			name:            "set URLs are kept",
			spec:            ShardSpec{BaseURL: "https://shard:6443", ExternalURL: "https://proxy", VirtualWorkspaceURL: "https://vw"},
			wantExternal:    "https://proxy",
			wantVirtualWork: "https://vw",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := &ShardList{Items: []Shard{{Spec: tt.spec}}}
			scheme.Default(list)
			got := list.Items[0].Spec
			if got.ExternalURL != tt.wantExternal || got.VirtualWorkspaceURL != tt.wantVirtualWork {
				t.Errorf("got externalURL %q, virtualWorkspaceURL %q; want %q, %q", got.ExternalURL, got.VirtualWorkspaceURL, tt.wantExternal, tt.wantVirtualWork)
			}
		})
	}
}
