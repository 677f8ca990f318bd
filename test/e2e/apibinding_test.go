package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	"github.com/shardplane/shardplane/test/framework"
)

// bindingTo is an APIBinding of the export path:name.
func bindingTo(name, path, export string) *apisv1alpha2.APIBinding {
	return &apisv1alpha2.APIBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: path, Name: export}}},
	}
}

// waitForBinding polls an APIBinding until ok says yes and returns it.
func waitForBinding(t *testing.T, c *kcpREST, cluster, name, what string, ok func(*apisv1alpha2.APIBinding) bool) *apisv1alpha2.APIBinding {
	t.Helper()
	var b *apisv1alpha2.APIBinding
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		b = &apisv1alpha2.APIBinding{}
		if err := c.get(ctx, cluster, apiBindingsGVR, name, b); err != nil {
			return err
		}
		if !ok(b) {
			return fmt.Errorf("status %+v", b.Status)
		}
		return nil
	}, "APIBinding %s|%s never %s", cluster, name, what)
	return b
}

func bound(b *apisv1alpha2.APIBinding) bool {
	return b.Status.Phase == apisv1alpha2.APIBindingPhaseBound
}

func conditionReason(b *apisv1alpha2.APIBinding, t conditionsv1alpha1.ConditionType, status corev1.ConditionStatus, reason string) bool {
	c := b.Status.Conditions.Get(t)
	return c != nil && c.Status == status && c.Reason == reason
}

// TestAPIBindingNeedsBindPermissionAndRecordsWhatItBinds is the attack of
// a tenant binding someone else's API without being allowed to: binding
// an export needs verb "bind" on it in the export's workspace. Once
// allowed, the binding records the export's cluster, identity and schema;
// a binding that would shadow a CRD of its workspace is refused with
// NamingConflicts and the CRD keeps serving; a binding of a missing export
// says so and binds once the export appears. It all survives a restart.
func TestAPIBindingNeedsBindPermissionAndRecordsWhatItBinds(t *testing.T) {
	t.Parallel()
	e := startWorkspaceShard(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "bind")
	provider := readyWorkspace(ctx, t, kcp, org.path(), "provider", nil)
	consumer := readyWorkspace(ctx, t, kcp, org.path(), "consumer", nil)
	crdSide := readyWorkspace(ctx, t, kcp, org.path(), "crds", nil)

	// The provider publishes widgets.e2e.shardplane.dev.
	schemaName := "v1.widgets." + crdGroup
	schema := widgetSchema(schemaName)
	schema.Spec.Group = crdGroup
	createdSchema := &apisv1alpha1.APIResourceSchema{}
	if err := kcp.create(ctx, provider.path(), apiResourceSchemasGVR, schema, createdSchema); err != nil {
		t.Fatalf("create APIResourceSchema: %v", err)
	}
	export := &apisv1alpha2.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Spec:       apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{Name: "widgets", Group: crdGroup, Schema: schemaName}}},
	}
	if err := kcp.create(ctx, provider.path(), apiExportsGVR, export, &apisv1alpha2.APIExport{}); err != nil {
		t.Fatalf("create APIExport: %v", err)
	}
	identity := waitForIdentity(t, kcp, provider.path(), "widgets", corev1.ConditionTrue).Status.IdentityHash

	// user-1 may manage APIBindings in the consumer workspace, nothing more.
	consumerAdmin := e.kube(t, kcpAdmin, consumer.path())
	createClusterRole(ctx, t, consumerAdmin, "apibinding-writer", rbacv1.PolicyRule{APIGroups: []string{apisv1alpha1.GroupName}, Resources: []string{"apibindings"}, Verbs: []string{"*"}})
	bindClusterRole(ctx, t, consumerAdmin, "user-1-access", workspaceAccessRole, userSubject("user-1"))
	bindClusterRole(ctx, t, consumerAdmin, "user-1-apibindings", "apibinding-writer", userSubject("user-1"))
	user1 := e.kcp(t, "user-1")
	exportRef := provider.path() + ":widgets"

	t.Run("BindingWithoutBindPermissionIsForbidden", func(t *testing.T) {
		var last error
		err := wait.PollUntilContextTimeout(ctx, wsPoll, wsTimeout, true, func(ctx context.Context) (bool, error) {
			last = user1.create(ctx, consumer.path(), apiBindingsGVR, bindingTo("widgets", provider.path(), "widgets"), &apisv1alpha2.APIBinding{})
			// Until the RBAC above is seen, user-1 may not even create; wait
			// for the export's denial.
			return apierrors.IsForbidden(last) && strings.Contains(last.Error(), "no permission to bind to export "+exportRef), nil
		})
		if err != nil {
			t.Fatalf("binding without bind permission: want 403 naming %s, got %v", exportRef, last)
		}
		if !strings.Contains(last.Error(), "unable to create APIBinding") {
			t.Errorf("403 message %q does not say what was refused", last.Error())
		}
		// Binding by the provider's logical cluster name is the same export.
		err = user1.create(ctx, consumer.path(), apiBindingsGVR, bindingTo("by-name", provider.cluster(), "widgets"), &apisv1alpha2.APIBinding{})
		requireAPIError(t, err, 403, "bind by cluster name without permission", "no permission to bind to export "+provider.cluster()+":widgets")
	})

	// The provider lets user-1 bind exactly this export.
	providerAdmin := e.kube(t, kcpAdmin, provider.path())
	createClusterRole(ctx, t, providerAdmin, "bind-widgets",
		rbacv1.PolicyRule{APIGroups: []string{apisv1alpha1.GroupName}, Resources: []string{"apiexports"}, ResourceNames: []string{"widgets"}, Verbs: []string{"bind"}})
	// bind alone: kcp judges it by a deep review, without access to the
	// provider's workspace.
	bindClusterRole(ctx, t, providerAdmin, "user-1-bind-widgets", "bind-widgets", userSubject("user-1"))

	t.Run("BindPermissionOnAnotherExportDoesNotCount", func(t *testing.T) {
		other := export.DeepCopy()
		other.Name = "other-widgets"
		if err := kcp.create(ctx, provider.path(), apiExportsGVR, other, &apisv1alpha2.APIExport{}); err != nil {
			t.Fatalf("create APIExport other-widgets: %v", err)
		}
		eventuallyAllowed(ctx, t, "bind widgets", func(ctx context.Context) error {
			return user1.create(ctx, consumer.path(), apiBindingsGVR, bindingTo("widgets", provider.path(), "widgets"), &apisv1alpha2.APIBinding{})
		})
		err := user1.create(ctx, consumer.path(), apiBindingsGVR, bindingTo("other", provider.path(), "other-widgets"), &apisv1alpha2.APIBinding{})
		requireAPIError(t, err, 403, "bind other-widgets", "no permission to bind to export "+provider.path()+":other-widgets")
	})

	checkBound := func(t *testing.T) {
		t.Helper()
		b := waitForBinding(t, kcp, consumer.path(), "widgets", "Bound", bound)
		if b.Status.APIExportClusterName != provider.cluster() {
			t.Errorf("apiExportClusterName = %q, want the provider's cluster %q", b.Status.APIExportClusterName, provider.cluster())
		}
		want := apisv1alpha2.BoundAPIResource{Group: crdGroup, Resource: "widgets",
			Schema:          apisv1alpha2.BoundAPIResourceSchema{Name: schemaName, UID: string(createdSchema.UID), IdentityHash: identity},
			StorageVersions: []string{"v1"}}
		if len(b.Status.BoundResources) != 1 || b.Status.BoundResources[0].Schema != want.Schema ||
			b.Status.BoundResources[0].Group != want.Group || b.Status.BoundResources[0].Resource != want.Resource ||
			strings.Join(b.Status.BoundResources[0].StorageVersions, ",") != "v1" {
			t.Errorf("boundResources = %+v, want [%+v]", b.Status.BoundResources, want)
		}
		for _, ct := range []conditionsv1alpha1.ConditionType{apisv1alpha2.APIExportValid, apisv1alpha2.InitialBindingCompleted, apisv1alpha2.BindingUpToDate, apisv1alpha2.PermissionClaimsValid, conditionsv1alpha1.ReadyCondition} {
			if !b.Status.Conditions.IsTrue(ct) {
				t.Errorf("condition %s not True: %+v", ct, b.Status.Conditions.Get(ct))
			}
		}
		// v1alpha1 says the same.
		legacy := &apisv1alpha1.APIBinding{}
		if err := kcp.get(ctx, consumer.path(), apiBindingsV1alpha1GVR, "widgets", legacy); err != nil {
			t.Fatal(err)
		}
		if legacy.Status.Phase != apisv1alpha1.APIBindingPhaseBound || legacy.Status.APIExportClusterName != provider.cluster() {
			t.Errorf("v1alpha1 status = %+v", legacy.Status)
		}
	}
	t.Run("AllowedBindingIsBoundToTheExportsIdentity", checkBound)

	t.Run("StatusIsNotTheUsersToWrite", func(t *testing.T) {
		// The status is the controller's: a user's status write is judged
		// by RBAC on apibindings/status, which user-1 was not given.
		err := user1.patchStatus(ctx, consumer.path(), apiBindingsGVR, "widgets", `{"status":{"apiExportClusterName":"elsewhere"}}`)
		requireAPIError(t, err, 403, "patch the status of a binding")
	})

	// A workspace with its own widgets CRD.
	crds := crdEnvFor(t, e.s, crdSide.path())
	crds.createCRD(ctx, t, widgetCRD())
	if _, err := e.kube(t, kcpAdmin, crdSide.path()).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace default: %v", err)
	}
	createWidget(ctx, t, crds.widgets("default"), widget("before", map[string]interface{}{}))
	checkConflict := func(t *testing.T) {
		t.Helper()
		b := waitForBinding(t, kcp, crdSide.path(), "widgets", "NamingConflicts", func(b *apisv1alpha2.APIBinding) bool {
			return conditionReason(b, apisv1alpha2.BindingUpToDate, corev1.ConditionFalse, apisv1alpha2.NamingConflictsReason)
		})
		if msg := b.Status.Conditions.Get(apisv1alpha2.BindingUpToDate).Message; !strings.Contains(msg, "CustomResourceDefinition widgets."+crdGroup) {
			t.Errorf("NamingConflicts message %q does not name the CRD", msg)
		}
		if b.Status.Phase == apisv1alpha2.APIBindingPhaseBound || len(b.Status.BoundResources) != 0 {
			t.Errorf("conflicting binding binds: phase %q, boundResources %+v", b.Status.Phase, b.Status.BoundResources)
		}
		if _, err := crds.widgets("default").Get(ctx, "before", metav1.GetOptions{}); err != nil {
			t.Errorf("the CRD's widget is gone: %v", err)
		}
		createWidget(ctx, t, crds.widgets("default"), widget(fmt.Sprintf("after-%d", time.Now().UnixNano()), map[string]interface{}{}))
	}
	t.Run("BindingThatShadowsACRDIsRefusedAndTheCRDKeepsServing", func(t *testing.T) {
		if err := kcp.create(ctx, crdSide.path(), apiBindingsGVR, bindingTo("widgets", provider.path(), "widgets"), &apisv1alpha2.APIBinding{}); err != nil {
			t.Fatalf("create binding: %v", err)
		}
		checkConflict(t)
	})

	missingRef := provider.path() + ":missing"
	checkMissing := func(t *testing.T) {
		t.Helper()
		b := waitForBinding(t, kcp, crdSide.path(), "missing", "APIExportNotFound", func(b *apisv1alpha2.APIBinding) bool {
			return conditionReason(b, apisv1alpha2.APIExportValid, corev1.ConditionFalse, apisv1alpha2.APIExportNotFoundReason)
		})
		if msg := b.Status.Conditions.Get(apisv1alpha2.APIExportValid).Message; !strings.Contains(msg, missingRef) {
			t.Errorf("APIExportValid message %q does not name %s", msg, missingRef)
		}
		if b.Status.Phase != apisv1alpha2.APIBindingPhaseBinding {
			t.Errorf("phase %q, want Binding", b.Status.Phase)
		}
	}
	t.Run("BindingOfAMissingExportSaysWhichOne", func(t *testing.T) {
		if err := kcp.create(ctx, crdSide.path(), apiBindingsGVR, bindingTo("missing", provider.path(), "missing"), &apisv1alpha2.APIBinding{}); err != nil {
			t.Fatalf("create binding: %v", err)
		}
		checkMissing(t)
	})

	e.s.Restart(t)
	e.waitForRootBootstrap(t)

	t.Run("EverythingSurvivesRestart", func(t *testing.T) {
		checkBound(t)
		checkConflict(t)
		checkMissing(t)
	})

	t.Run("MissingExportBindsOnceCreated", func(t *testing.T) {
		empty := &apisv1alpha2.APIExport{
			TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
			ObjectMeta: metav1.ObjectMeta{Name: "missing"},
		}
		if err := kcp.create(ctx, provider.path(), apiExportsGVR, empty, &apisv1alpha2.APIExport{}); err != nil {
			t.Fatalf("create APIExport missing: %v", err)
		}
		b := waitForBinding(t, kcp, crdSide.path(), "missing", "Bound", bound)
		if b.Status.APIExportClusterName != provider.cluster() || len(b.Status.BoundResources) != 0 {
			t.Errorf("status = %+v", b.Status)
		}
	})

	t.Run("ConflictClearsWhenTheCRDGoes", func(t *testing.T) {
		if err := crds.crds.ApiextensionsV1().CustomResourceDefinitions().Delete(ctx, "widgets."+crdGroup, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete CRD: %v", err)
		}
		b := waitForBinding(t, kcp, crdSide.path(), "widgets", "Bound after the CRD was deleted", bound)
		if len(b.Status.BoundResources) != 1 || b.Status.BoundResources[0].Schema.IdentityHash != identity {
			t.Errorf("boundResources = %+v", b.Status.BoundResources)
		}
	})
}
