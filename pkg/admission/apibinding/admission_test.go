package apibinding

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/permissionclaim"
)

// bindAllowed allows alice to bind export "widgets" in cluster "provider".
var bindAllowed = authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	if cluster == "provider" && a.GetUser().GetName() == "alice" && a.GetVerb() == "bind" &&
		a.GetAPIGroup() == apisv1alpha1.GroupName && a.GetResource() == "apiexports" && a.GetName() == "widgets" {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
})

func resolve(p logicalcluster.Path) (logicalcluster.Name, bool) {
	if p == "root:provider" {
		return "provider", true
	}
	return "", false
}

func TestValidateBindPermission(t *testing.T) {
	p := New(Config{ResolvePath: resolve, Authorizer: bindAllowed})
	ctx := logicalcluster.WithCluster(context.Background(), "consumer")
	v2 := func(path, name string) *apisv1alpha2.APIBinding {
		return &apisv1alpha2.APIBinding{Spec: apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: path, Name: name}}}}
	}
	v1 := &apisv1alpha1.APIBinding{Spec: apisv1alpha1.APIBindingSpec{Reference: apisv1alpha1.BindingReference{Export: &apisv1alpha1.ExportBindingReference{Path: "root:provider", Name: "widgets"}}}}
	tests := []struct {
		name    string
		obj     runtime.Object
		op      admission.Operation
		user    string
		wantErr string
	}{
		{name: "allowed by path", obj: v2("root:provider", "widgets"), op: admission.Create, user: "alice"},
		{name: "allowed by cluster name", obj: v2("provider", "widgets"), op: admission.Create, user: "alice"},
		{name: "allowed in v1alpha1", obj: v1, op: admission.Update, user: "alice"},
		{name: "other user", obj: v2("root:provider", "widgets"), op: admission.Create, user: "bob", wantErr: "unable to create APIBinding: no permission to bind to export root:provider:widgets"},
		{name: "other export", obj: v2("root:provider", "gadgets"), op: admission.Update, user: "alice", wantErr: "unable to update APIBinding: no permission to bind to export root:provider:gadgets"},
		{name: "empty path is the binding's workspace", obj: v2("", "widgets"), op: admission.Create, user: "alice", wantErr: "no permission to bind to export consumer:widgets"},
		{name: "unknown workspace", obj: v2("root:nowhere", "widgets"), op: admission.Create, user: "alice", wantErr: "no permission to bind to export root:nowhere:widgets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := admission.NewAttributesRecord(tt.obj, nil, apisv1alpha2.SchemeGroupVersion.WithKind("APIBinding"), "", "b",
				apisv1alpha2.SchemeGroupVersion.WithResource("apibindings"), "", tt.op, nil, false, &user.DefaultInfo{Name: tt.user})
			err := p.Validate(ctx, a, nil)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want 403 with %q", err, tt.wantErr)
			}
		})
	}
}

func TestValidateSkipsStatusAndPrivilegedUnknownWorkspace(t *testing.T) {
	p := New(Config{ResolvePath: resolve, Authorizer: bindAllowed})
	ctx := logicalcluster.WithCluster(context.Background(), "consumer")
	b := &apisv1alpha2.APIBinding{Spec: apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: "root:nowhere", Name: "x"}}}}
	status := admission.NewAttributesRecord(b, nil, apisv1alpha2.SchemeGroupVersion.WithKind("APIBinding"), "", "b",
		apisv1alpha2.SchemeGroupVersion.WithResource("apibindings"), "status", admission.Update, nil, false, &user.DefaultInfo{Name: "bob"})
	if err := p.Validate(ctx, status, nil); err != nil {
		t.Errorf("status update: %v", err)
	}
	masters := admission.NewAttributesRecord(b, nil, apisv1alpha2.SchemeGroupVersion.WithKind("APIBinding"), "", "b",
		apisv1alpha2.SchemeGroupVersion.WithResource("apibindings"), "", admission.Create, nil, false, &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup}})
	if err := p.Validate(ctx, masters, nil); err != nil {
		t.Errorf("system:masters: %v", err)
	}
}

func exportExists(cluster logicalcluster.Name, name string) bool {
	return cluster == "provider" && (name == "widgets" || name == "gadgets")
}

// TestEndpointSliceNeedsAnExistingExportItMayBind mirrors kcp's
// APIExportEndpointSlice admission: the export must exist and the writer
// may bind it; the answer does not tell which of the two failed.
func TestEndpointSliceNeedsAnExistingExportItMayBind(t *testing.T) {
	p := New(Config{ResolvePath: resolve, Authorizer: bindAllowed, ExportExists: exportExists})
	ctx := logicalcluster.WithCluster(context.Background(), "consumer")
	slice := func(path, name string) *apisv1alpha1.APIExportEndpointSlice {
		return &apisv1alpha1.APIExportEndpointSlice{Spec: apisv1alpha1.APIExportEndpointSliceSpec{APIExport: apisv1alpha1.ExportBindingReference{Path: path, Name: name}}}
	}
	for _, tt := range []struct {
		name     string
		obj, old *apisv1alpha1.APIExportEndpointSlice
		user     string
		groups   []string
		wantErr  string
	}{
		{name: "may bind", obj: slice("root:provider", "widgets"), user: "alice"},
		{name: "may not bind", obj: slice("root:provider", "gadgets"), user: "alice", wantErr: "unable to create APIExportEndpointSlice: no permission to bind to export root:provider:gadgets"},
		{name: "other user", obj: slice("root:provider", "widgets"), user: "bob", wantErr: "no permission to bind to export root:provider:widgets"},
		{name: "export does not exist", obj: slice("root:provider", "nothing"), user: "alice", wantErr: "no permission to bind to export root:provider:nothing"},
		{name: "unknown workspace", obj: slice("root:nowhere", "widgets"), user: "alice", wantErr: "no permission to bind to export root:nowhere:widgets"},
		{name: "local export that does not exist", obj: slice("", "widgets"), user: "alice", wantErr: "no permission to bind to export widgets"},
		{name: "update keeping the export", obj: slice("root:provider", "gadgets"), old: slice("root:provider", "gadgets"), user: "bob"},
		{name: "system:masters", obj: slice("root:nowhere", "x"), user: "m", groups: []string{user.SystemPrivilegedGroup}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			op := admission.Create
			var old runtime.Object
			if tt.old != nil {
				op, old = admission.Update, tt.old
			}
			a := admission.NewAttributesRecord(tt.obj, old, apisv1alpha1.SchemeGroupVersion.WithKind("APIExportEndpointSlice"), "", "s",
				apisv1alpha1.SchemeGroupVersion.WithResource("apiexportendpointslices"), "", op, nil, false, &user.DefaultInfo{Name: tt.user, Groups: tt.groups})
			checkForbidden(t, p.Validate(ctx, a, nil), tt.wantErr)
		})
	}
}

// TestWorkspaceTypeDefaultBindingsNeedBind mirrors kcp's
// TestDefaultAPIBindingsBindPermission: the default bindings a type adds
// are created by the system, so their writer must hold bind on each.
func TestWorkspaceTypeDefaultBindingsNeedBind(t *testing.T) {
	p := New(Config{ResolvePath: resolve, Authorizer: bindAllowed, ExportExists: exportExists})
	ctx := logicalcluster.WithCluster(context.Background(), "tenant")
	wt := func(refs ...tenancyv1alpha1.APIExportReference) *tenancyv1alpha1.WorkspaceType {
		return &tenancyv1alpha1.WorkspaceType{Spec: tenancyv1alpha1.WorkspaceTypeSpec{DefaultAPIBindings: refs}}
	}
	widgets := tenancyv1alpha1.APIExportReference{Path: "root:provider", Export: "widgets"}
	gadgets := tenancyv1alpha1.APIExportReference{Path: "root:provider", Export: "gadgets"}
	for _, tt := range []struct {
		name     string
		obj, old *tenancyv1alpha1.WorkspaceType
		user     string
		wantErr  string
	}{
		{name: "create with bind", obj: wt(widgets), user: "alice"},
		{name: "create without bind", obj: wt(widgets), user: "bob", wantErr: "no permission to bind to export root:provider:widgets"},
		{name: "create naming one export without bind", obj: wt(widgets, gadgets), user: "alice", wantErr: "no permission to bind to export root:provider:gadgets"},
		{name: "update adding an export without bind", obj: wt(gadgets), old: wt(), user: "alice", wantErr: "no permission to bind to export root:provider:gadgets"},
		{name: "update keeping the exports", obj: wt(gadgets), old: wt(gadgets), user: "alice"},
		{name: "no default bindings", obj: wt(), user: "bob"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			op := admission.Create
			var old runtime.Object
			if tt.old != nil {
				op, old = admission.Update, tt.old
			}
			a := admission.NewAttributesRecord(tt.obj, old, tenancyv1alpha1.SchemeGroupVersion.WithKind("WorkspaceType"), "", "t",
				tenancyv1alpha1.SchemeGroupVersion.WithResource("workspacetypes"), "", op, nil, false, &user.DefaultInfo{Name: tt.user})
			checkForbidden(t, p.Validate(ctx, a, nil), tt.wantErr)
		})
	}
}

func checkForbidden(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want 403 with %q", err, want)
	}
}

// TestAdmitSetsExportLabel mirrors kcp's apibinding admission, which sets
// internal.apis.kcp.io/export to the hash of the export's cluster and
// name over whatever the client sent.
func TestAdmitSetsExportLabel(t *testing.T) {
	p := New(Config{ResolvePath: resolve, Authorizer: bindAllowed})
	ctx := logicalcluster.WithCluster(context.Background(), "consumer")
	binding := func(path string, lbls map[string]string) *apisv1alpha2.APIBinding {
		b := &apisv1alpha2.APIBinding{Spec: apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: path, Name: "widgets"}}}}
		b.Labels = lbls
		return b
	}
	forged := map[string]string{permissionclaim.ExportLabelKey: "forged", "keep": "me"}
	tests := []struct {
		name string
		obj  *apisv1alpha2.APIBinding
		want string
	}{
		{name: "by path", obj: binding("root:provider", nil), want: permissionclaim.ExportLabelValue("provider", "widgets")},
		{name: "own workspace", obj: binding("", nil), want: permissionclaim.ExportLabelValue("consumer", "widgets")},
		{name: "forged value overwritten", obj: binding("root:provider", forged), want: permissionclaim.ExportLabelValue("provider", "widgets")},
		{name: "unknown workspace gets none", obj: binding("root:nowhere", map[string]string{permissionclaim.ExportLabelKey: "forged"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := admission.NewAttributesRecord(tt.obj, nil, apisv1alpha2.SchemeGroupVersion.WithKind("APIBinding"), "", "b",
				apisv1alpha2.SchemeGroupVersion.WithResource("apibindings"), "", admission.Create, nil, false, &user.DefaultInfo{Name: "alice"})
			if err := p.Admit(ctx, a, nil); err != nil {
				t.Fatal(err)
			}
			got, ok := tt.obj.Labels[permissionclaim.ExportLabelKey]
			if got != tt.want || ok != (tt.want != "") {
				t.Fatalf("export label = %q (set %v), want %q", got, ok, tt.want)
			}
		})
	}
	// kcp's value: base62 SHA-224 of "<cluster>:<name>", the claim label key's hash.
	if k, _ := permissionclaim.LabelKeyAndValue("provider", "widgets", apisv1alpha2.PermissionClaim{}); k != permissionclaim.LabelPrefix+permissionclaim.ExportLabelValue("provider", "widgets") {
		t.Fatalf("export label value differs from the claim label's export hash")
	}
}
