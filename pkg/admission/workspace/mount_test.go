package workspace

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/features"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func setMounts(t *testing.T, on bool) {
	t.Helper()
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.WorkspaceMounts): on}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.WorkspaceMounts): false})
	})
}

func mountedWorkspace(typ *tenancyv1alpha1.WorkspaceTypeReference) *tenancyv1alpha1.Workspace {
	return &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "mount"}, Spec: tenancyv1alpha1.WorkspaceSpec{
		Type:  typ,
		Mount: &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "proxy-cluster"}},
	}}
}

// kcp's workspace admission: a mount has no type unless system:masters
// gives it one, and its owner is recorded as for any workspace. Without
// the WorkspaceMounts gate we refuse spec.mount (kcp stores it and
// nothing serves it).
func TestMountedWorkspaceAdmission(t *testing.T) {
	ctx := logicalcluster.WithCluster(context.Background(), "parent")
	universal := &tenancyv1alpha1.WorkspaceTypeReference{Name: "universal", Path: "root"}
	for _, tc := range []struct {
		name    string
		gate    bool
		typ     *tenancyv1alpha1.WorkspaceTypeReference
		user    user.Info
		wantErr string
	}{
		{"gate off", false, nil, tenant, "workspace mounts are not enabled"},
		{"no type", true, nil, tenant, ""},
		{"tenant sets a type", true, universal, tenant, "spec.type cannot be set for mounted workspaces"},
		{"system:masters sets a type", true, universal, masters, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setMounts(t, tc.gate)
			ws := mountedWorkspace(tc.typ)
			p := plugin(parentWith(nil))
			if err := p.Admit(ctx, createAttributes(ws, tc.user), nil); err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if tc.typ == nil && ws.Spec.Type != nil {
				t.Errorf("a mount got type %v", ws.Spec.Type)
			}
			if ws.Annotations["experimental.tenancy.kcp.io/owner"] == "" {
				t.Error("no owner recorded")
			}
			err := p.Validate(ctx, createAttributes(ws, tc.user), nil)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Validate: %v, want %q", err, tc.wantErr)
			case tc.wantErr != "" && !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err):
				t.Fatalf("Validate: %v is not a 4xx", err)
			}
		})
	}
}
