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
	"github.com/shardplane/shardplane/pkg/logicalcluster"
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
	p := New(resolve, bindAllowed)
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
	p := New(resolve, bindAllowed)
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
