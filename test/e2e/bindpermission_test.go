package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/test/framework"
)

// TestExportsAreTheSystemsAndTheirUseNeedsBind mirrors kcp's
// TestDefaultAPIBindingsBindPermission (test/e2e/apibinding/
// default_apibinding_admission_test.go) and the APIExportEndpointSlice and
// system CRD checks it sits beside: user-1 is cluster-admin of a tenant
// workspace and has no permission in the provider's. It may not name the
// provider's export in a WorkspaceType's defaultAPIBindings (create, or an
// update that adds one) nor in an APIExportEndpointSlice until it is given
// "bind" on the export; the slice's export must also exist. Nobody but the
// system writes an export's status, its workspace's admin and kcp-admin
// included.
func TestExportsAreTheSystemsAndTheirUseNeedsBind(t *testing.T) {
	t.Parallel()
	e := startWorkspaceShard(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "bindperm")
	provider := readyWorkspace(ctx, t, kcp, org.path(), "provider", nil)
	tenant := readyWorkspace(ctx, t, kcp, org.path(), "tenant", nil)

	schemaName := "v1.widgets." + crdGroup
	schema := widgetSchema(schemaName)
	schema.Spec.Group = crdGroup
	if err := kcp.create(ctx, provider.path(), apiResourceSchemasGVR, schema, &apisv1alpha1.APIResourceSchema{}); err != nil {
		t.Fatalf("create APIResourceSchema: %v", err)
	}
	for _, name := range []string{"today-cowboys", "no-bind-export"} {
		export := &apisv1alpha2.APIExport{
			TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{Name: "widgets", Group: crdGroup, Schema: schemaName}}},
		}
		if err := kcp.create(ctx, provider.path(), apiExportsGVR, export, &apisv1alpha2.APIExport{}); err != nil {
			t.Fatalf("create APIExport %s: %v", name, err)
		}
	}

	// user-1 is cluster-admin in the tenant workspace, as in kcp's test;
	// user-2 is cluster-admin in the provider's.
	bindClusterRole(ctx, t, e.kube(t, kcpAdmin, tenant.path()), "user-1-admin", "cluster-admin", userSubject("user-1"))
	bindClusterRole(ctx, t, e.kube(t, kcpAdmin, provider.path()), "user-2-admin", "cluster-admin", userSubject("user-2"))
	user1 := e.kcp(t, "user-1")
	user2 := e.kcp(t, "user-2")
	cowboys := provider.path() + ":today-cowboys"

	workspaceType := func(name string, refs ...tenancyv1alpha1.APIExportReference) *tenancyv1alpha1.WorkspaceType {
		return &tenancyv1alpha1.WorkspaceType{
			TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "WorkspaceType"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: tenancyv1alpha1.WorkspaceTypeSpec{
				Extend:             tenancyv1alpha1.WorkspaceTypeExtension{With: []tenancyv1alpha1.WorkspaceTypeReference{{Name: "universal", Path: "root"}}},
				DefaultAPIBindings: refs,
			},
		}
	}
	slice := func(name, export string) *apisv1alpha1.APIExportEndpointSlice {
		return &apisv1alpha1.APIExportEndpointSlice{
			TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIExportEndpointSlice"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       apisv1alpha1.APIExportEndpointSliceSpec{APIExport: apisv1alpha1.ExportBindingReference{Path: provider.path(), Name: export}},
		}
	}
	// eventuallyRefused polls until create answers 403 with want: until
	// user-1's RBAC in the tenant is seen, the 403 is a different one.
	eventuallyRefused := func(t *testing.T, what, want string, create func(context.Context) error) {
		t.Helper()
		var last error
		err := wait.PollUntilContextTimeout(ctx, wsPoll, wsTimeout, true, func(ctx context.Context) (bool, error) {
			last = create(ctx)
			if last == nil {
				t.Fatalf("%s succeeded: user-1 has no bind permission", what)
			}
			return apierrors.IsForbidden(last) && strings.Contains(last.Error(), want), nil
		})
		if err != nil {
			t.Fatalf("%s: want 403 with %q, got %v", what, want, last)
		}
	}

	t.Run("ExportStatusIsNotTheWorkspaceAdminsToWrite", func(t *testing.T) {
		framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
			err := user2.patchStatus(ctx, provider.path(), apiExportsGVR, "today-cowboys", `{"status":{"identityHash":"`+hexSHA256([]byte("claimed"))+`"}}`)
			if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "status update not permitted") {
				return nil
			}
			return fmt.Errorf("the provider's admin writes the export's status: %v", err)
		}, "the export's status refused to its workspace's admin")
		err := kcp.patchStatus(ctx, provider.path(), apiExportsGVR, "today-cowboys", `{"status":{"identityHash":"`+hexSHA256([]byte("claimed"))+`"}}`)
		requireAPIError(t, err, 403, "kcp-admin writes the export's status", "status update not permitted")
	})

	t.Run("DefaultAPIBindingsCreateDeniedWithoutBind", func(t *testing.T) {
		eventuallyRefused(t, "WorkspaceType naming "+cowboys, "no permission to bind to export "+cowboys, func(ctx context.Context) error {
			return user1.create(ctx, tenant.path(), workspaceTypesGVR, workspaceType("bad", tenancyv1alpha1.APIExportReference{Path: provider.path(), Export: "today-cowboys"}), &tenancyv1alpha1.WorkspaceType{})
		})
	})

	t.Run("EndpointSliceDeniedWithoutBindOrExport", func(t *testing.T) {
		eventuallyRefused(t, "APIExportEndpointSlice of "+cowboys, "unable to create APIExportEndpointSlice: no permission to bind to export "+cowboys, func(ctx context.Context) error {
			return user1.create(ctx, tenant.path(), apiExportEndpointSlicesGVR, slice("cowboys", "today-cowboys"), &apisv1alpha1.APIExportEndpointSlice{})
		})
		// kcp-admin may bind anything, but not an export that is not there.
		err := kcp.create(ctx, tenant.path(), apiExportEndpointSlicesGVR, slice("nothing", "nothing"), &apisv1alpha1.APIExportEndpointSlice{})
		requireAPIError(t, err, 403, "slice of a missing export", "unable to create APIExportEndpointSlice: no permission to bind to export "+provider.path()+":nothing")
	})

	t.Run("CreateAllowedWithBind", func(t *testing.T) {
		providerAdmin := e.kube(t, kcpAdmin, provider.path())
		createClusterRole(ctx, t, providerAdmin, "user-1-bind-cowboys", rbacv1.PolicyRule{
			Verbs: []string{"bind"}, APIGroups: []string{apisv1alpha2.SchemeGroupVersion.Group}, Resources: []string{"apiexports"}, ResourceNames: []string{"today-cowboys"},
		})
		bindClusterRole(ctx, t, providerAdmin, "user-1-bind-cowboys", "user-1-bind-cowboys", userSubject("user-1"))
		eventuallyAllowed(ctx, t, "WorkspaceType naming "+cowboys+" with bind", func(ctx context.Context) error {
			return user1.create(ctx, tenant.path(), workspaceTypesGVR, workspaceType("good", tenancyv1alpha1.APIExportReference{Path: provider.path(), Export: "today-cowboys"}), &tenancyv1alpha1.WorkspaceType{})
		})
		eventuallyAllowed(ctx, t, "APIExportEndpointSlice of "+cowboys+" with bind", func(ctx context.Context) error {
			return user1.create(ctx, tenant.path(), apiExportEndpointSlicesGVR, slice("cowboys", "today-cowboys"), &apisv1alpha1.APIExportEndpointSlice{})
		})
	})

	t.Run("UpdateAddingADefaultAPIBindingRequiresBind", func(t *testing.T) {
		if err := user1.create(ctx, tenant.path(), workspaceTypesGVR, workspaceType("later"), &tenancyv1alpha1.WorkspaceType{}); err != nil {
			t.Fatalf("create WorkspaceType without default bindings: %v", err)
		}
		want := "no permission to bind to export " + provider.path() + ":no-bind-export"
		eventuallyRefused(t, "adding "+provider.path()+":no-bind-export", want, func(ctx context.Context) error {
			latest := &tenancyv1alpha1.WorkspaceType{}
			if err := user1.get(ctx, tenant.path(), workspaceTypesGVR, "later", latest); err != nil {
				return err
			}
			latest.APIVersion, latest.Kind = tenancyv1alpha1.SchemeGroupVersion.String(), "WorkspaceType"
			latest.Spec.DefaultAPIBindings = []tenancyv1alpha1.APIExportReference{{Path: provider.path(), Export: "no-bind-export"}}
			return user1.update(ctx, tenant.path(), workspaceTypesGVR, "later", latest, &tenancyv1alpha1.WorkspaceType{})
		})
	})

	t.Run("UseOfAWorkspaceTypeNeedsNoAccessToItsWorkspace", func(t *testing.T) {
		// As bind: kcp judges use by a deep review in the type's workspace.
		createWorkspaceType(ctx, t, kcp, provider.path(), "special", tenancyv1alpha1.WorkspaceTypeSpec{
			Extend: tenancyv1alpha1.WorkspaceTypeExtension{With: []tenancyv1alpha1.WorkspaceTypeReference{{Name: "universal", Path: "root"}}},
		})
		special := &tenancyv1alpha1.WorkspaceTypeReference{Name: "special", Path: provider.path()}
		eventuallyRefused(t, "a workspace of type "+provider.path()+":special", `"use"`, func(ctx context.Context) error {
			_, err := createWorkspaceOnce(ctx, user1, tenant.path(), "special", special)
			return err
		})
		providerAdmin := e.kube(t, kcpAdmin, provider.path())
		createClusterRole(ctx, t, providerAdmin, "user-1-use-special", rbacv1.PolicyRule{
			Verbs: []string{"use"}, APIGroups: []string{tenancyv1alpha1.GroupName}, Resources: []string{"workspacetypes"}, ResourceNames: []string{"special"},
		})
		bindClusterRole(ctx, t, providerAdmin, "user-1-use-special", "user-1-use-special", userSubject("user-1"))
		eventuallyAllowed(ctx, t, "a workspace of type "+provider.path()+":special with use", func(ctx context.Context) error {
			_, err := createWorkspaceOnce(ctx, user1, tenant.path(), "special", special)
			return err
		})
	})
}
