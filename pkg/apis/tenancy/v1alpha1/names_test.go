package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestInitializerAndTerminatorForType(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        string
	}{
		{
			name:        "type in root",
			annotations: map[string]string{"kcp.io/cluster": "root", "kcp.io/path": "root"},
			want:        "root:organization",
		},
		{
			name:        "type in a nested workspace is named by its cluster",
			annotations: map[string]string{"kcp.io/cluster": "2x8j4k1m9q0w3e5r", "kcp.io/path": "root:org"},
			want:        "2x8j4k1m9q0w3e5r:organization",
		},
		{
			name:        "not stored yet: the path is used",
			annotations: map[string]string{"kcp.io/path": "root:org"},
			want:        "root:org:organization",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wt := &WorkspaceType{ObjectMeta: metav1.ObjectMeta{Name: "organization", Annotations: tt.annotations}}
			if got := InitializerForType(wt); string(got) != tt.want {
				t.Errorf("InitializerForType = %q, want %q", got, tt.want)
			}
			if got := TerminatorForType(wt); string(got) != tt.want {
				t.Errorf("TerminatorForType = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWorkspaceTypeReferenceString(t *testing.T) {
	tests := []struct {
		ref  WorkspaceTypeReference
		want string
	}{
		{WorkspaceTypeReference{Name: "universal"}, "universal"},
		{WorkspaceTypeReference{Name: "team", Path: "root:org"}, "root:org:team"},
	}
	for _, tt := range tests {
		if got := tt.ref.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

func TestTypeNameAndObjectNameAreInverse(t *testing.T) {
	if got := ObjectName(TypeName("team")); got != "team" {
		t.Errorf("ObjectName(TypeName(team)) = %q", got)
	}
	if TypeName("home") != HomeWorkspaceTypeName {
		t.Errorf("TypeName(home) != HomeWorkspaceTypeName")
	}
}

func TestShardHashIsKCPsInternalShardAnnotation(t *testing.T) {
	for shard, want := range map[string]string{
		"root":    "1pfxsevk", // what kcp writes for its root shard
		"shard-1": "2e1tfbst",
		"alpha":   "221wvpxe",
	} {
		if got := ShardHash(shard); got != want {
			t.Errorf("ShardHash(%q) = %q, want %q", shard, got, want)
		}
	}
}
