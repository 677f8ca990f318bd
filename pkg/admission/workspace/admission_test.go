package workspace

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/workspacetypes"
)

var (
	tenant  = &user.DefaultInfo{Name: "alice", Groups: []string{"team-1", "system:authenticated"}}
	masters = &user.DefaultInfo{Name: "shard-admin", Groups: []string{"system:masters"}}
)

func parentWith(annotations map[string]string) *corev1alpha1.LogicalCluster {
	a := map[string]string{logicalcluster.PathAnnotationKey: "root:org"}
	for k, v := range annotations {
		a[k] = v
	}
	return &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName, Annotations: a}}
}

func plugin(parent *corev1alpha1.LogicalCluster) *Plugin {
	types := workspacetypes.Resolver{
		ResolvePath: func(logicalcluster.Path) (logicalcluster.Name, bool) { return "", false },
		Get:         func(logicalcluster.Name, string) *tenancyv1alpha1.WorkspaceType { return nil },
	}
	return New(types, func(logicalcluster.Name) *corev1alpha1.LogicalCluster { return parent }, nil)
}

func createAttributes(ws *tenancyv1alpha1.Workspace, u user.Info) admission.Attributes {
	return admission.NewAttributesRecord(ws, nil, tenancyv1alpha1.SchemeGroupVersion.WithKind("Workspace"), "", ws.Name,
		tenancyv1alpha1.SchemeGroupVersion.WithResource("workspaces"), "", admission.Create, nil, false, u)
}

func newWorkspaceWith(annotations map[string]string) *tenancyv1alpha1.Workspace {
	return &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: "child", Annotations: annotations},
		Spec:       tenancyv1alpha1.WorkspaceSpec{Type: &tenancyv1alpha1.WorkspaceTypeReference{Name: "universal", Path: "root"}},
	}
}

func TestNewWorkspaceGetsItsParentsRequiredGroups(t *testing.T) {
	const key = corev1alpha1.RequiredGroupsAnnotationKey
	tests := []struct {
		name      string
		parent    map[string]string
		sent      map[string]string
		user      user.Info
		want      string
		wantUnset bool
	}{
		{"tenant forges a value under a guarded parent", map[string]string{key: "team-1"}, map[string]string{key: "system:authenticated"}, tenant, "team-1", false},
		{"tenant forges a value under an open parent", nil, map[string]string{key: "team-1"}, tenant, "", true},
		{"tenant sends nothing under a guarded parent", map[string]string{key: "team-1;team-2"}, nil, tenant, "team-1;team-2", false},
		{"system:masters chooses a value", map[string]string{key: "team-1"}, map[string]string{key: "team-9"}, masters, "team-9", false},
		{"system:masters sends nothing: inherited", map[string]string{key: "team-1"}, nil, masters, "team-1", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := newWorkspaceWith(tc.sent)
			if err := plugin(parentWith(tc.parent)).Admit(logicalcluster.WithCluster(context.Background(), "parent"), createAttributes(ws, tc.user), nil); err != nil {
				t.Fatalf("Admit: %v", err)
			}
			got, set := ws.Annotations[key]
			if tc.wantUnset && set {
				t.Errorf("%s = %q, want unset", key, got)
			}
			if !tc.wantUnset && got != tc.want {
				t.Errorf("%s = %q, want %q", key, got, tc.want)
			}
		})
	}
}

func TestTenantCannotForgeSchedulingAnnotations(t *testing.T) {
	ws := newWorkspaceWith(map[string]string{
		corev1alpha1.ShardAnnotationKey:                 "elsewhere",
		tenancyv1alpha1.WorkspaceShardHashAnnotationKey: "abcdefgh",
		tenancyv1alpha1.WorkspaceClusterAnnotationKey:   "chosenbyattacker",
	})
	if err := plugin(parentWith(nil)).Admit(logicalcluster.WithCluster(context.Background(), "parent"), createAttributes(ws, tenant), nil); err != nil {
		t.Fatalf("Admit: %v", err)
	}
	for _, k := range schedulingAnnotations {
		if v, ok := ws.Annotations[k]; ok {
			t.Errorf("annotation %s = %q survived admission", k, v)
		}
	}
}

func TestOnlySystemMastersChangesSystemAnnotationsOfAWorkspace(t *testing.T) {
	old := newWorkspaceWith(map[string]string{
		corev1alpha1.RequiredGroupsAnnotationKey: "team-1",
		corev1alpha1.ShardAnnotationKey:          "root",
	})
	tests := []struct {
		name       string
		mutate     func(*tenancyv1alpha1.Workspace)
		user       user.Info
		wantDenied bool
	}{
		{"tenant removes required-groups", func(ws *tenancyv1alpha1.Workspace) {
			delete(ws.Annotations, corev1alpha1.RequiredGroupsAnnotationKey)
		}, tenant, true},
		{"tenant widens required-groups", func(ws *tenancyv1alpha1.Workspace) {
			ws.Annotations[corev1alpha1.RequiredGroupsAnnotationKey] = "system:authenticated"
		}, tenant, true},
		{"tenant moves the shard annotation", func(ws *tenancyv1alpha1.Workspace) {
			ws.Annotations[corev1alpha1.ShardAnnotationKey] = "other"
		}, tenant, true},
		{"tenant adds a label", func(ws *tenancyv1alpha1.Workspace) { ws.Labels = map[string]string{"a": "b"} }, tenant, false},
		{"system:masters changes required-groups", func(ws *tenancyv1alpha1.Workspace) {
			ws.Annotations[corev1alpha1.RequiredGroupsAnnotationKey] = "team-2"
		}, masters, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := old.DeepCopy()
			tc.mutate(ws)
			a := admission.NewAttributesRecord(ws, old, tenancyv1alpha1.SchemeGroupVersion.WithKind("Workspace"), "", ws.Name,
				tenancyv1alpha1.SchemeGroupVersion.WithResource("workspaces"), "", admission.Update, nil, false, tc.user)
			err := plugin(parentWith(nil)).Validate(context.Background(), a, nil)
			if tc.wantDenied && !apierrors.IsForbidden(err) {
				t.Errorf("got %v, want 403", err)
			}
			if !tc.wantDenied && err != nil {
				t.Errorf("got %v, want allowed", err)
			}
		})
	}
}
