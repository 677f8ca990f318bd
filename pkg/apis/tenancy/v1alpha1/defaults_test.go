package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := Install(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

func TestDefaultWorkspacePhase(t *testing.T) {
	scheme := newScheme(t)
	tests := []struct {
		name  string
		phase corev1alpha1.LogicalClusterPhaseType
		want  corev1alpha1.LogicalClusterPhaseType
	}{
		{name: "empty becomes Scheduling", want: corev1alpha1.LogicalClusterPhaseScheduling},
		{name: "set phase is kept", phase: corev1alpha1.LogicalClusterPhaseReady, want: corev1alpha1.LogicalClusterPhaseReady},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list := &WorkspaceList{Items: []Workspace{{Status: WorkspaceStatus{Phase: tt.phase}}}}
			scheme.Default(list)
			if got := list.Items[0].Status.Phase; got != tt.want {
				t.Errorf("phase = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestInstallRegistersExternalAndInternalVersions(t *testing.T) {
	scheme := newScheme(t)
	for _, kind := range []string{"Workspace", "WorkspaceList", "WorkspaceType", "WorkspaceTypeList"} {
		if !scheme.Recognizes(SchemeGroupVersion.WithKind(kind)) {
			t.Errorf("%s not registered as %s", kind, SchemeGroupVersion)
		}
		if !scheme.Recognizes(InternalGroupVersion.WithKind(kind)) {
			t.Errorf("%s not registered as %s", kind, InternalGroupVersion)
		}
	}
	if got := Resource("workspaces").String(); got != "workspaces.tenancy.kcp.io" {
		t.Errorf("Resource = %s", got)
	}
	if got := Kind("WorkspaceType").String(); got != "WorkspaceType.tenancy.kcp.io" {
		t.Errorf("Kind = %s", got)
	}
}
