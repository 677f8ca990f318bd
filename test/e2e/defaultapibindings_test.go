package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/test/framework"
)

// TestWorkspaceTypeDefaultAPIBindingsAreBoundBeforeReady: a WorkspaceType
// lists default APIBindings; a workspace of a type extending it is held in
// Initializing by the initializer system:apibindings until the binding the
// system creates in it is Bound, so that it is usable the moment it is
// Ready. A default export that does not exist holds only its own
// workspace, saying which export is missing, and the workspace becomes
// Ready once the export is created. Types without default bindings get no
// such initializer.
func TestWorkspaceTypeDefaultAPIBindingsAreBoundBeforeReady(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaces(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "defbind")
	provider := readyWorkspace(ctx, t, kcp, org.path(), "provider", nil)
	inOrg := func(name string) tenancyv1alpha1.WorkspaceTypeReference { return *typeRef(name, org.path()) }

	// A type whose default export does not exist yet; without a path the
	// export is looked for in the type's own workspace.
	missingExport := uniqueName("missing")
	missingType := uniqueName("needsmissing")
	createWorkspaceType(ctx, t, kcp, org.path(), missingType, tenancyv1alpha1.WorkspaceTypeSpec{
		DefaultAPIBindings: []tenancyv1alpha1.APIExportReference{{Export: missingExport}},
	})
	// Created first: it must not hold up the workspaces after it.
	waiting := createWorkspace(ctx, t, kcp, org.path(), "waiting", typeRef(missingType, org.path()))

	// The provider exports widgets, whose schema it has not published yet:
	// a binding of it stays in phase Binding until the schema exists.
	schemaName := "v1.widgets." + crdGroup
	export := &apisv1alpha2.APIExport{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Spec:       apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{Name: "widgets", Group: crdGroup, Schema: schemaName}}},
	}
	if err := kcp.create(ctx, provider.path(), apiExportsGVR, export, &apisv1alpha2.APIExport{}); err != nil {
		t.Fatalf("create APIExport widgets: %v", err)
	}
	waitForIdentity(t, kcp, provider.path(), "widgets", corev1.ConditionTrue)

	base := uniqueName("widgetbase")
	createWorkspaceType(ctx, t, kcp, org.path(), base, tenancyv1alpha1.WorkspaceTypeSpec{
		DefaultAPIBindings: []tenancyv1alpha1.APIExportReference{{Path: provider.path(), Export: "widgets"}},
	})
	extending := uniqueName("widgetext")
	createWorkspaceType(ctx, t, kcp, org.path(), extending, tenancyv1alpha1.WorkspaceTypeSpec{
		Extend: tenancyv1alpha1.WorkspaceTypeExtension{With: []tenancyv1alpha1.WorkspaceTypeReference{inOrg(base)}},
	})
	plain := uniqueName("plain")
	createWorkspaceType(ctx, t, kcp, org.path(), plain, tenancyv1alpha1.WorkspaceTypeSpec{})

	t.Run("TypeWithoutDefaultBindingsGetsNoInitializer", func(t *testing.T) {
		w := readyWorkspace(ctx, t, kcp, org.path(), "plain", typeRef(plain, org.path()))
		if lc := getLogicalCluster(ctx, t, kcp, w.cluster()); slices.Contains(lc.Spec.Initializers, tenancyv1alpha1.WorkspaceAPIBindingsInitializer) {
			t.Errorf("LogicalCluster of %s (type without defaultAPIBindings): spec.initializers %v include %s", w.path(), lc.Spec.Initializers, tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
		}
	})

	t.Run("ExtendingTypeIsReadyOnlyWithItsBindingBound", func(t *testing.T) {
		w := createWorkspace(ctx, t, kcp, org.path(), "consumer", typeRef(extending, org.path()))
		w = waitForPhase(t, kcp, w, corev1alpha1.LogicalClusterPhaseInitializing)
		if !slices.Contains(w.obj.Status.Initializers, tenancyv1alpha1.WorkspaceAPIBindingsInitializer) {
			t.Fatalf("Initializing workspace %s: status.initializers %v lack %s", w.path(), w.obj.Status.Initializers, tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
		}
		// The binding is there and says why it is not bound; the
		// LogicalCluster says it waits for it.
		b := waitForDefaultBinding(t, kcp, w.cluster(), provider.path(), "widgets")
		if !strings.HasPrefix(b.Name, "widgets-") {
			t.Errorf("default binding is named %s, want widgets-<hash> as kcp names it", b.Name)
		}
		lc := waitForBindingsCondition(t, kcp, w.cluster(), tenancyv1alpha1.WorkspaceInitializedWaitingOnAPIBindings, b.Name, schemaName)
		if lc.Status.Phase != corev1alpha1.LogicalClusterPhaseInitializing {
			t.Errorf("LogicalCluster %s is %s while its binding is not bound", w.cluster(), lc.Status.Phase)
		}

		// Publishing the schema binds it, and only then is the workspace
		// Ready: at the first sight of Ready, the binding is Bound.
		schema := widgetSchema(schemaName)
		schema.Spec.Group = crdGroup
		if err := kcp.create(ctx, provider.path(), apiResourceSchemasGVR, schema, &apisv1alpha1.APIResourceSchema{}); err != nil {
			t.Fatalf("create APIResourceSchema: %v", err)
		}
		w = waitForPhase(t, kcp, w, corev1alpha1.LogicalClusterPhaseReady)
		b = requireDefaultBindingBound(ctx, t, kcp, w, provider.path(), "widgets")
		if len(b.Status.BoundResources) != 1 || b.Status.BoundResources[0].Resource != "widgets" {
			t.Errorf("binding %s: boundResources %+v, want widgets", b.Name, b.Status.BoundResources)
		}
	})

	t.Run("MissingExportHoldsOnlyItsWorkspaceAndSaysWhich", func(t *testing.T) {
		w := waitForPhase(t, kcp, waiting, corev1alpha1.LogicalClusterPhaseInitializing)
		missingRef := org.cluster() + ":" + missingExport
		waitForBindingsCondition(t, kcp, w.cluster(), tenancyv1alpha1.WorkspaceInitializedAPIBindingErrors,
			"APIExport "+missingRef+" ", "WorkspaceType "+org.path()+":"+missingType, "does not exist")
		// Still held, after the workspaces created later became Ready.
		w = waitForPhase(t, kcp, w, corev1alpha1.LogicalClusterPhaseInitializing)
		if !slices.Contains(w.obj.Status.Initializers, tenancyv1alpha1.WorkspaceAPIBindingsInitializer) {
			t.Errorf("workspace %s: status.initializers %v lack %s", w.path(), w.obj.Status.Initializers, tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
		}

		empty := &apisv1alpha2.APIExport{
			TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIExport"},
			ObjectMeta: metav1.ObjectMeta{Name: missingExport},
		}
		if err := kcp.create(ctx, org.path(), apiExportsGVR, empty, &apisv1alpha2.APIExport{}); err != nil {
			t.Fatalf("create APIExport %s: %v", missingExport, err)
		}
		w = waitForPhase(t, kcp, w, corev1alpha1.LogicalClusterPhaseReady)
		requireDefaultBindingBound(ctx, t, kcp, w, org.cluster(), missingExport)
	})
}

// defaultBinding returns the APIBinding of a cluster to path:export, or nil.
func defaultBinding(ctx context.Context, c *kcpREST, cluster, path, export string) (*apisv1alpha2.APIBinding, error) {
	list := &apisv1alpha2.APIBindingList{}
	if err := c.list(ctx, cluster, apiBindingsGVR, list); err != nil {
		return nil, err
	}
	for i := range list.Items {
		if ref := list.Items[i].Spec.Reference.Export; ref != nil && ref.Path == path && ref.Name == export {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// waitForDefaultBinding waits until the system created the APIBinding of a
// cluster to path:export.
func waitForDefaultBinding(t *testing.T, c *kcpREST, cluster, path, export string) *apisv1alpha2.APIBinding {
	t.Helper()
	var b *apisv1alpha2.APIBinding
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		var err error
		if b, err = defaultBinding(ctx, c, cluster, path, export); err == nil && b == nil {
			err = errors.New("none yet")
		}
		return err
	}, "no APIBinding to %s:%s was created in %s", path, export, cluster)
	return b
}

// requireDefaultBindingBound fails unless the Ready workspace w has its
// APIBinding to path:export Bound, and its LogicalCluster says so; it
// returns the binding.
func requireDefaultBindingBound(ctx context.Context, t *testing.T, c *kcpREST, w ws, path, export string) *apisv1alpha2.APIBinding {
	t.Helper()
	b, err := defaultBinding(ctx, c, w.cluster(), path, export)
	if err != nil {
		t.Fatalf("list APIBindings of %s: %v", w.path(), err)
	}
	if b == nil {
		t.Fatalf("workspace %s is Ready without an APIBinding to %s:%s", w.path(), path, export)
	}
	if b.Status.Phase != apisv1alpha2.APIBindingPhaseBound {
		t.Errorf("workspace %s is Ready with APIBinding %s in phase %q, want Bound (conditions %+v)", w.path(), b.Name, b.Status.Phase, b.Status.Conditions)
	}
	lc := getLogicalCluster(ctx, t, c, w.cluster())
	if slices.Contains(lc.Status.Initializers, tenancyv1alpha1.WorkspaceAPIBindingsInitializer) || !slices.Contains(lc.Spec.Initializers, tenancyv1alpha1.WorkspaceAPIBindingsInitializer) {
		t.Errorf("LogicalCluster %s: spec.initializers %v status.initializers %v, want %s in the spec and removed from the status",
			w.cluster(), lc.Spec.Initializers, lc.Status.Initializers, tenancyv1alpha1.WorkspaceAPIBindingsInitializer)
	}
	if !lc.Status.Conditions.IsTrue(tenancyv1alpha1.WorkspaceAPIBindingsInitialized) {
		t.Errorf("LogicalCluster %s: condition %s = %+v, want True", w.cluster(), tenancyv1alpha1.WorkspaceAPIBindingsInitialized, lc.Status.Conditions.Get(tenancyv1alpha1.WorkspaceAPIBindingsInitialized))
	}
	return b
}

// waitForBindingsCondition waits until the LogicalCluster of a cluster has
// APIBindingsInitialized False with reason and a message mentioning each
// of substrings.
func waitForBindingsCondition(t *testing.T, c *kcpREST, cluster, reason string, substrings ...string) *corev1alpha1.LogicalCluster {
	t.Helper()
	var lc *corev1alpha1.LogicalCluster
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		lc = &corev1alpha1.LogicalCluster{}
		if err := c.get(ctx, cluster, logicalClustersGVR, corev1alpha1.LogicalClusterName, lc); err != nil {
			return err
		}
		cond := lc.Status.Conditions.Get(tenancyv1alpha1.WorkspaceAPIBindingsInitialized)
		if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != reason {
			return fmt.Errorf("condition %+v", cond)
		}
		for _, s := range substrings {
			if !strings.Contains(cond.Message, s) {
				return fmt.Errorf("condition %+v", cond)
			}
		}
		return nil
	}, "LogicalCluster %s: condition %s never False/%s mentioning %q", cluster, tenancyv1alpha1.WorkspaceAPIBindingsInitialized, reason, substrings)
	return lc
}
