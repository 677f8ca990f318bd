package systemstatus

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
)

func TestOnlyTheSystemWritesStatusOfKCPKinds(t *testing.T) {
	var (
		workspaceAdmin = &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
		kcpAdmin       = &user.DefaultInfo{Name: "kcp-admin", Groups: []string{"system:kcp:admin", "system:authenticated"}}
		loopback       = &user.DefaultInfo{Name: "system:apiserver", Groups: []string{"system:masters"}}
		scheduler      = &user.DefaultInfo{Name: "system:kcp:logical-cluster-admin", Groups: []string{"system:kcp:logical-cluster-admin"}}
	)
	tests := []struct {
		name        string
		resource    schema.GroupResource
		subresource string
		user        user.Info
		wantDenied  bool
	}{
		{"workspace admin writes LogicalCluster status", corev1alpha1.Resource("logicalclusters"), "status", workspaceAdmin, true},
		{"workspace admin writes Workspace status", tenancyv1alpha1.Resource("workspaces"), "status", workspaceAdmin, true},
		{"workspace admin writes WorkspaceType status", tenancyv1alpha1.Resource("workspacetypes"), "status", workspaceAdmin, true},
		{"workspace admin writes Shard status", corev1alpha1.Resource("shards"), "status", workspaceAdmin, true},
		{"kcp-admin writes LogicalCluster status, as kcp lets it", corev1alpha1.Resource("logicalclusters"), "status", kcpAdmin, false},
		{"kcp-admin writes WorkspaceType status, as kcp lets it", tenancyv1alpha1.Resource("workspacetypes"), "status", kcpAdmin, false},
		{"kcp-admin is not the system for Workspaces", tenancyv1alpha1.Resource("workspaces"), "status", kcpAdmin, true},
		{"kcp-admin is not the system for Shards", corev1alpha1.Resource("shards"), "status", kcpAdmin, true},
		{"loopback controllers", tenancyv1alpha1.Resource("workspaces"), "status", loopback, false},
		{"scheduler of another shard", corev1alpha1.Resource("logicalclusters"), "status", scheduler, false},
		{"main resource is left to RBAC and other plugins", tenancyv1alpha1.Resource("workspaces"), "", workspaceAdmin, false},
		{"status of other kinds is left alone", schema.GroupResource{Resource: "namespaces"}, "status", workspaceAdmin, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := admission.NewAttributesRecord(nil, nil, schema.GroupVersionKind{}, "", "x", tc.resource.WithVersion("v1alpha1"),
				tc.subresource, admission.Update, nil, false, tc.user)
			err := New().Validate(context.Background(), a, nil)
			if tc.wantDenied && !apierrors.IsForbidden(err) {
				t.Errorf("got %v, want 403", err)
			}
			if !tc.wantDenied && err != nil {
				t.Errorf("got %v, want allowed", err)
			}
		})
	}
}
