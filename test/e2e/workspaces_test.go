package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

// TestWorkspaces runs the workspace scenarios of issue 4 against one shard
// of their own (the last subtest restarts it).
func TestWorkspaces(t *testing.T) {
	e := startWorkspaceShard(t)

	t.Run("NestedWorkspacesByPathAndName", func(t *testing.T) { testNestedWorkspaces(t, e) })
	t.Run("TypeRulesRefuseWorkspaces", func(t *testing.T) { testTypeRules(t, e) })
	t.Run("UseVerbIsRequired", func(t *testing.T) { testUseVerb(t, e) })
	t.Run("InitializerHoldsWorkspace", func(t *testing.T) { testInitializer(t, e) })
	t.Run("DeletionRemovesContentAndCluster", func(t *testing.T) { testDeletion(t, e) })
	t.Run("AccessRequiresBinding", func(t *testing.T) { testAccess(t, e) })
	t.Run("CreatorIsClusterAdmin", func(t *testing.T) { testCreatorIsAdmin(t, e) })
	t.Run("RequiredGroupsAdmitOnlyTheirMembers", func(t *testing.T) { testRequiredGroups(t, e) })
	t.Run("CreateToReadyTiming", func(t *testing.T) { testCreateToReadyTiming(t, e) })
	t.Run("WorkspacesSurviveRestart", func(t *testing.T) { testRestart(t, e) })
}

// testNestedWorkspaces: org → team → app, each used through its path and
// through its logical cluster name.
func testNestedWorkspaces(t *testing.T, e *wsEnv) {
	ctx := testContext(t)
	kcp := e.kcp(t, kcpAdmin)

	org := e.readyOrg(ctx, t, "org")
	team := readyWorkspace(ctx, t, kcp, org.path(), "team", typeRef("team", ""))
	app := readyWorkspace(ctx, t, kcp, team.path(), "app", nil)

	parentCluster := map[string]string{org.path(): "root", team.path(): org.cluster(), app.path(): team.cluster()}
	for _, tc := range []struct {
		w        ws
		wantType tenancyv1alpha1.WorkspaceTypeReference
	}{
		{org, *typeRef("organization", "root")}, // root's default child type
		{team, *typeRef("team", "root")},
		{app, *typeRef("universal", "root")}, // team's default child type
	} {
		w, path := tc.w, tc.w.path()
		t.Run(w.name, func(t *testing.T) {
			if !clusterNamePattern.MatchString(w.cluster()) {
				t.Errorf("%s: spec.cluster %q is not 16 characters of base36", path, w.cluster())
			}
			if w.obj.Spec.Type == nil || *w.obj.Spec.Type != tc.wantType {
				t.Errorf("%s: spec.type %+v, want %+v", path, w.obj.Spec.Type, tc.wantType)
			}
			if want := e.s.BaseURL(t) + "/clusters/" + path; w.obj.Spec.URL != want {
				t.Errorf("%s: spec.URL %q, want %q", path, w.obj.Spec.URL, want)
			}
			if got := w.obj.Labels[tenancyv1alpha1.WorkspacePhaseLabel]; got != string(corev1alpha1.LogicalClusterPhaseReady) {
				t.Errorf("%s: label %s = %q, want Ready", path, tenancyv1alpha1.WorkspacePhaseLabel, got)
			}
			if c := w.obj.Status.Conditions.Get(tenancyv1alpha1.WorkspaceScheduled); c == nil || c.Status != corev1.ConditionTrue {
				t.Errorf("%s: condition WorkspaceScheduled = %+v, want True", path, c)
			}
			if !slices.Contains(w.obj.Finalizers, tenancyv1alpha1.LogicalClusterFinalizer) {
				t.Errorf("%s: finalizers %v lack %s", path, w.obj.Finalizers, tenancyv1alpha1.LogicalClusterFinalizer)
			}

			// The LogicalCluster, read through the name and through the path.
			lc := getLogicalCluster(ctx, t, kcp, w.cluster())
			if got := lc.Annotations["kcp.io/path"]; got != path {
				t.Errorf("%s: LogicalCluster annotation kcp.io/path = %q, want %q", path, got, path)
			}
			if got, want := lc.Annotations[corev1alpha1.LogicalClusterTypeAnnotationKey], tc.wantType.Path+":"+string(tc.wantType.Name); got != want {
				t.Errorf("%s: LogicalCluster annotation %s = %q, want %q", path, corev1alpha1.LogicalClusterTypeAnnotationKey, got, want)
			}
			if lc.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
				t.Errorf("%s: LogicalCluster phase %q, want Ready", path, lc.Status.Phase)
			}
			if o := lc.Spec.Owner; o == nil || o.Resource != "workspaces" || o.Name != w.name || o.Cluster != parentCluster[path] || o.UID != w.obj.UID {
				t.Errorf("%s: LogicalCluster spec.owner %+v, want workspaces %s in %s with uid %s", path, o, w.name, parentCluster[path], w.obj.UID)
			}
			byPath := getLogicalCluster(ctx, t, kcp, path)
			if byPath.UID != lc.UID {
				t.Errorf("%s: LogicalCluster through the path has uid %s, through the name %s", path, byPath.UID, lc.UID)
			}
			requireCluster(t, byPath, w.cluster())

			// Content: written through one address, read through the other.
			viaPath, viaName := e.kube(t, kcpAdmin, path), e.kube(t, kcpAdmin, w.cluster())
			a := configMapIn(ctx, t, viaPath, "written-via-path", path)
			requireCluster(t, a, w.cluster())
			requireConfigMap(ctx, t, viaName, "the cluster name", a, w.cluster())
			b := configMapIn(ctx, t, viaName, "written-via-name", w.cluster())
			requireConfigMap(ctx, t, viaPath, "the path", b, w.cluster())

			// spec.URL is a server URL.
			cfg := e.config(t, kcpAdmin, "root")
			cfg.Host = w.obj.Spec.URL
			requireConfigMap(ctx, t, newKubeClient(t, cfg), "spec.URL", a, w.cluster())
		})
	}

	// The parent lists its child workspace, addressed by path.
	list := &tenancyv1alpha1.WorkspaceList{}
	if err := kcp.list(ctx, team.path(), workspacesGVR, list); err != nil {
		t.Fatalf("list workspaces in %s: %v", team.path(), err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "app" || list.Items[0].Spec.Cluster != app.cluster() {
		t.Errorf("workspaces in %s: %+v, want only app in cluster %s", team.path(), list.Items, app.cluster())
	}
	requireCluster(t, &list.Items[0], team.cluster())

	// A path nobody created: 404 for the privileged, 403 for others.
	missing := org.path() + ":does-not-exist"
	_, err := e.kube(t, shardAdmin, missing).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	requireAPIError(t, err, 404, "shard-admin: list namespaces in unknown path "+missing)
	_, err = e.kube(t, "user-1", missing).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	requireAccessDenied(t, err, "user-1: list namespaces in unknown path "+missing)
}

// testTypeRules: limitAllowedParents and limitAllowedChildren refuse
// workspaces with 422.
func testTypeRules(t *testing.T, e *wsEnv) {
	ctx := testContext(t)
	kcp := e.kcp(t, kcpAdmin)

	_, err := tryCreateWorkspace(ctx, kcp, "root", uniqueName("team-in-root"), typeRef("team", ""))
	requireInvalidType(t, err, "create a team workspace in root", "limitAllowedParents")

	org := e.readyOrg(ctx, t, "types")
	_, err = tryCreateWorkspace(ctx, kcp, org.path(), "nested-org", typeRef("organization", "root"))
	requireInvalidType(t, err, "create an organization workspace in an organization", "limitAllowedParents")

	noParents := uniqueName("noparents")
	createWorkspaceType(ctx, t, kcp, "root", noParents, tenancyv1alpha1.WorkspaceTypeSpec{
		LimitAllowedParents: &tenancyv1alpha1.WorkspaceTypeSelector{None: true},
	})
	_, err = tryCreateWorkspace(ctx, kcp, "root", uniqueName("noparents"), typeRef(noParents, "root"))
	requireInvalidType(t, err, "create a workspace of a type with limitAllowedParents none in root", "limitAllowedParents")
	_, err = tryCreateWorkspace(ctx, kcp, org.path(), "noparents", typeRef(noParents, ""))
	requireInvalidType(t, err, "create a workspace of a type with limitAllowedParents none in an organization", "limitAllowedParents")

	// A type without children.
	leaf := uniqueName("leaf")
	createWorkspaceType(ctx, t, kcp, "root", leaf, tenancyv1alpha1.WorkspaceTypeSpec{
		LimitAllowedChildren: &tenancyv1alpha1.WorkspaceTypeSelector{None: true},
	})
	leafWS := readyWorkspace(ctx, t, kcp, org.path(), "leaf", typeRef(leaf, "root"))
	_, err = tryCreateWorkspace(ctx, kcp, leafWS.path(), "child", typeRef("universal", "root"))
	requireInvalidType(t, err, "create a child in a workspace whose type has limitAllowedChildren none", "limitAllowedChildren")

	_, err = createWorkspaceOnce(ctx, kcp, org.path(), "ghost", typeRef("no-such-type", "root"))
	requireInvalidType(t, err, "create a workspace of a type that does not exist", "no-such-type")

	// The allowed combination works: team in organization, team in team.
	team := readyWorkspace(ctx, t, kcp, org.path(), "team", typeRef("team", "root"))
	readyWorkspace(ctx, t, kcp, team.path(), "subteam", typeRef("team", "root"))
}

// testUseVerb: a user who may create workspaces but may not "use" a type is
// refused with 403, and may create it once allowed to use it.
func testUseVerb(t *testing.T, e *wsEnv) {
	ctx := testContext(t)
	kcp := e.kcp(t, kcpAdmin)
	rootAdmin := e.kube(t, kcpAdmin, "root")

	restricted := uniqueName("restricted")
	createWorkspaceType(ctx, t, kcp, "root", restricted, tenancyv1alpha1.WorkspaceTypeSpec{})

	org := e.readyOrg(ctx, t, "use")
	orgAdmin := e.kube(t, kcpAdmin, org.path())
	createClusterRole(ctx, t, orgAdmin, "workspace-creator", rbacv1.PolicyRule{
		APIGroups: []string{tenancyv1alpha1.GroupName}, Resources: []string{"workspaces"}, Verbs: []string{"create", "get", "list", "watch"},
	})
	bindClusterRole(ctx, t, orgAdmin, "user-1-access", workspaceAccessRole, userSubject("user-1"))
	bindClusterRole(ctx, t, orgAdmin, "user-1-creator", "workspace-creator", userSubject("user-1"))

	user := e.kcp(t, "user-1")
	// user-1 may create workspaces of the built-in types (use through
	// system:authenticated in root) ...
	eventuallyAllowed(ctx, t, "user-1: create a universal workspace in "+org.path(), func(ctx context.Context) error {
		_, err := tryCreateWorkspace(ctx, user, org.path(), "allowed", typeRef("universal", "root"))
		return err
	})
	waitForPhase(t, user, ws{parent: org.path(), name: "allowed"}, corev1alpha1.LogicalClusterPhaseReady)

	// ... but not of the restricted one.
	_, err := tryCreateWorkspace(ctx, user, org.path(), "refused", typeRef(restricted, "root"))
	requireAPIError(t, err, 403, "user-1: create a workspace of type "+restricted+" without use", `"use"`, restricted)

	// kcp-admin may use every type.
	readyWorkspace(ctx, t, kcp, org.path(), "by-admin", typeRef(restricted, "root"))

	// Once allowed to use it in root, user-1 may create it.
	createClusterRole(ctx, t, rootAdmin, "use-"+restricted, rbacv1.PolicyRule{
		APIGroups: []string{tenancyv1alpha1.GroupName}, Resources: []string{"workspacetypes"}, ResourceNames: []string{restricted}, Verbs: []string{"use"},
	})
	bindClusterRole(ctx, t, rootAdmin, "use-"+restricted+"-user-1", "use-"+restricted, userSubject("user-1"))
	eventuallyAllowed(ctx, t, "user-1: create a workspace of type "+restricted+" with use", func(ctx context.Context) error {
		_, err := tryCreateWorkspace(ctx, user, org.path(), "permitted", typeRef(restricted, "root"))
		return err
	})
	w := waitForPhase(t, user, ws{parent: org.path(), name: "permitted"}, corev1alpha1.LogicalClusterPhaseReady)
	if got := *w.obj.Spec.Type; got != *typeRef(restricted, "root") {
		t.Errorf("spec.type %+v, want root:%s", got, restricted)
	}
}

// testInitializer: an initializer of the type (and of a type extending it)
// holds the workspace in Initializing until removed from the LogicalCluster.
func testInitializer(t *testing.T, e *wsEnv) {
	ctx := testContext(t)
	kcp, masters := e.kcp(t, kcpAdmin), e.kcp(t, shardAdmin)

	initType := uniqueName("init")
	createWorkspaceType(ctx, t, kcp, "root", initType, tenancyv1alpha1.WorkspaceTypeSpec{Initializer: true})
	extending := uniqueName("extends")
	createWorkspaceType(ctx, t, kcp, "root", extending, tenancyv1alpha1.WorkspaceTypeSpec{
		Extend: tenancyv1alpha1.WorkspaceTypeExtension{With: []tenancyv1alpha1.WorkspaceTypeReference{*typeRef(initType, "root")}},
	})
	initializer := corev1alpha1.LogicalClusterInitializer("root:" + initType)

	org := e.readyOrg(ctx, t, "init")
	for _, typ := range []string{initType, extending} {
		t.Run(typ, func(t *testing.T) {
			w := createWorkspace(ctx, t, kcp, org.path(), typ, typeRef(typ, "root"))
			w = waitForPhase(t, kcp, w, corev1alpha1.LogicalClusterPhaseInitializing)
			if !slices.Contains(w.obj.Status.Initializers, initializer) {
				t.Errorf("workspace %s: status.initializers %v lack %s", w.path(), w.obj.Status.Initializers, initializer)
			}
			if c := w.obj.Status.Conditions.Get(tenancyv1alpha1.WorkspaceInitialized); c == nil || c.Status != corev1.ConditionFalse {
				t.Errorf("workspace %s: condition WorkspaceInitialized = %+v, want False", w.path(), c)
			}
			lc := getLogicalCluster(ctx, t, kcp, w.cluster())
			if lc.Status.Phase != corev1alpha1.LogicalClusterPhaseInitializing || !slices.Contains(lc.Status.Initializers, initializer) || !slices.Contains(lc.Spec.Initializers, initializer) {
				t.Fatalf("LogicalCluster %s: phase %q spec.initializers %v status.initializers %v, want Initializing with %s",
					w.cluster(), lc.Status.Phase, lc.Spec.Initializers, lc.Status.Initializers, initializer)
			}

			// kcp-admin may only take initializers off, as kcp lets it; it
			// cannot add one.
			err := updateLogicalCluster(ctx, kcp, w.cluster(), true, func(lc *corev1alpha1.LogicalCluster) {
				lc.Status.Initializers = append(lc.Status.Initializers, "root:forged")
			})
			requireAPIError(t, err, 403, "kcp-admin: add an initializer to LogicalCluster "+w.cluster(), "status.initializers must not grow")
			err = updateLogicalCluster(ctx, kcp, w.cluster(), false, func(lc *corev1alpha1.LogicalCluster) {
				lc.Annotations[logicalcluster.PathAnnotationKey] = "root:elsewhere"
			})
			requireAPIError(t, err, 403, "kcp-admin: move LogicalCluster "+w.cluster()+" to another path")

			// Still held.
			w = waitForPhase(t, kcp, w, corev1alpha1.LogicalClusterPhaseInitializing)

			err = updateLogicalCluster(ctx, masters, w.cluster(), true, func(lc *corev1alpha1.LogicalCluster) {
				lc.Status.Initializers = slices.DeleteFunc(lc.Status.Initializers, func(i corev1alpha1.LogicalClusterInitializer) bool { return i == initializer })
			})
			if err != nil {
				t.Fatalf("shard-admin: remove %s from LogicalCluster %s status: %v", initializer, w.cluster(), err)
			}
			w = waitForPhase(t, kcp, w, corev1alpha1.LogicalClusterPhaseReady)
			if len(w.obj.Status.Initializers) != 0 {
				t.Errorf("workspace %s is Ready with initializers %v", w.path(), w.obj.Status.Initializers)
			}
			if c := w.obj.Status.Conditions.Get(tenancyv1alpha1.WorkspaceInitialized); c == nil || c.Status != corev1.ConditionTrue {
				t.Errorf("workspace %s: condition WorkspaceInitialized = %+v, want True", w.path(), c)
			}
			// And usable.
			configMapIn(ctx, t, e.kube(t, kcpAdmin, w.path()), "after-init", "x")
		})
	}
}

// testDeletion: deleting a workspace removes its content, its nested
// workspaces and its logical cluster.
func testDeletion(t *testing.T, e *wsEnv) {
	ctx := testContext(t)
	kcp := e.kcp(t, kcpAdmin)

	org := e.readyOrg(ctx, t, "delete")
	doomed := readyWorkspace(ctx, t, kcp, org.path(), "doomed", nil)
	inner := readyWorkspace(ctx, t, kcp, doomed.path(), "inner", nil)
	clusters := []string{doomed.cluster(), inner.cluster()}

	for _, w := range []ws{doomed, inner} {
		c := e.kube(t, kcpAdmin, w.path())
		createNamespace(ctx, t, c, "stuff")
		for i := range 3 {
			createConfigMap(ctx, t, c, "stuff", fmt.Sprintf("cm-%d", i), map[string]string{"i": fmt.Sprint(i)})
		}
		configMapIn(ctx, t, c, "in-default", w.path())
		createClusterRole(ctx, t, c, "doomed-role", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}})
		bindClusterRole(ctx, t, c, "doomed-binding", "doomed-role", userSubject("user-1"))
	}
	if got := e.wildcardItemsIn(ctx, t, configMapsGVR, clusters...); len(got) < 8 {
		t.Fatalf("before deletion the wildcard list shows %d configmaps of the doomed clusters (%v), want at least 8", len(got), got)
	}

	if err := kcp.delete(ctx, org.path(), workspacesGVR, doomed.name); err != nil {
		t.Fatalf("delete workspace %s: %v", doomed.path(), err)
	}
	framework.EventuallyEvery(t, wsPoll, 60*time.Second, func(ctx context.Context) error {
		got := &tenancyv1alpha1.Workspace{}
		err := kcp.get(ctx, org.path(), workspacesGVR, doomed.name, got)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return fmt.Errorf("phase %q finalizers %v conditions %+v", got.Status.Phase, got.Finalizers, got.Status.Conditions)
	}, "workspace %s still exists 60s after deletion", doomed.path())

	// The logical clusters stop answering ...
	for _, w := range []ws{doomed, inner} {
		_, err := e.kube(t, kcpAdmin, w.cluster()).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		requireAccessDenied(t, err, "kcp-admin: list namespaces in deleted cluster "+w.cluster()+" ("+w.path()+")")
		_, err = e.kube(t, kcpAdmin, w.path()).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		requireAccessDenied(t, err, "kcp-admin: list namespaces in deleted path "+w.path())
		_, err = e.kube(t, shardAdmin, w.path()).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		requireAPIError(t, err, 404, "shard-admin: list namespaces in deleted path "+w.path())
		err = e.kcp(t, shardAdmin).get(ctx, w.cluster(), logicalClustersGVR, corev1alpha1.LogicalClusterName, &corev1alpha1.LogicalCluster{})
		requireAPIError(t, err, 404, "shard-admin: get LogicalCluster of deleted cluster "+w.cluster())
		cms, err := e.kube(t, shardAdmin, w.cluster()).CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Errorf("shard-admin: list configmaps in deleted cluster %s: %v", w.cluster(), err)
		} else if len(cms.Items) != 0 {
			t.Errorf("shard-admin: deleted cluster %s still has %d configmaps", w.cluster(), len(cms.Items))
		}
	}
	// ... and nothing of them is left anywhere.
	for _, gvr := range []schema.GroupVersionResource{configMapsGVR, namespacesGVR, crbGVR, logicalClustersGVR, workspacesGVR} {
		if left := e.wildcardItemsIn(ctx, t, gvr, clusters...); len(left) != 0 {
			t.Errorf("after deletion the wildcard list of %s still shows %v", gvr.Resource, left)
		}
	}

	// The name can be used again, for a new and empty logical cluster.
	again := readyWorkspace(ctx, t, kcp, org.path(), "doomed", nil)
	if again.cluster() == doomed.cluster() {
		t.Errorf("re-created workspace %s got the deleted cluster name %s again", again.path(), again.cluster())
	}
	if _, err := e.kube(t, kcpAdmin, again.path()).CoreV1().Namespaces().Get(ctx, "stuff", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("re-created workspace %s: get namespace stuff: err = %v, want 404", again.path(), err)
	}
}

// testAccess: users need "access" in a workspace to enter it at all.
func testAccess(t *testing.T, e *wsEnv) {
	ctx := testContext(t)
	kcp := e.kcp(t, kcpAdmin)

	org := e.readyOrg(ctx, t, "access")
	private := readyWorkspace(ctx, t, kcp, org.path(), "private", nil)
	for _, addr := range []string{private.path(), private.cluster()} {
		requireAccessDenied(t, listConfigMaps(ctx, e.kube(t, "user-2", addr)), "user-2: list configmaps in "+addr)
		// Discovery, which kubectl ws uses to check a workspace exists.
		code, body := httpGet(ctx, t, e.s.HTTPClient(t), e.s.ClusterURL(t, addr, "/api"), e.s.UserToken(t, "user-2"))
		if code != 403 || !strings.Contains(body, accessDenied) {
			t.Errorf("user-2: GET /clusters/%s/api: HTTP %d %s, want 403 %q", addr, code, body, accessDenied)
		}
	}

	admin := e.kube(t, kcpAdmin, private.path())
	// user-3 may view but not enter; bound before user-2, so that user-2's
	// success below means the RBAC cache has user-3's binding too.
	bindClusterRole(ctx, t, admin, "user-3-view", "view", userSubject("user-3"))
	grantAccessAndView(ctx, t, admin, "user-2")

	user2 := e.kube(t, "user-2", private.path())
	eventuallyAllowed(ctx, t, "user-2: list configmaps in "+private.path(), func(ctx context.Context) error { return listConfigMaps(ctx, user2) })
	if err := listConfigMaps(ctx, e.kube(t, "user-2", private.cluster())); err != nil {
		t.Errorf("user-2: list configmaps in %s (%s): %v", private.cluster(), private.path(), err)
	}
	// view does not allow writes: RBAC refuses, not the workspace.
	_, err := user2.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nope"}}, metav1.CreateOptions{})
	requireAPIError(t, err, 403, "user-2 (view): create a configmap in "+private.path())

	requireAccessDenied(t, listConfigMaps(ctx, e.kube(t, "user-3", private.path())), "user-3 (view, no access): list configmaps in "+private.path())
	requireAccessDenied(t, listConfigMaps(ctx, e.kube(t, "user-2", org.path())), "user-2: list configmaps in the parent "+org.path())
}

// testCreatorIsAdmin: whoever creates a workspace is recorded as its owner
// and becomes cluster-admin in it.
func testCreatorIsAdmin(t *testing.T, e *wsEnv) {
	ctx := testContext(t)
	kcp := e.kcp(t, kcpAdmin)

	org := e.readyOrg(ctx, t, "owner")
	orgAdmin := e.kube(t, kcpAdmin, org.path())
	createClusterRole(ctx, t, orgAdmin, "workspace-creator", rbacv1.PolicyRule{
		APIGroups: []string{tenancyv1alpha1.GroupName}, Resources: []string{"workspaces"}, Verbs: []string{"create", "get", "list", "watch", "delete"},
	})
	bindClusterRole(ctx, t, orgAdmin, "user-1-access", workspaceAccessRole, userSubject("user-1"))
	bindClusterRole(ctx, t, orgAdmin, "user-1-creator", "workspace-creator", userSubject("user-1"))

	user1 := e.kcp(t, "user-1")
	eventuallyAllowed(ctx, t, "user-1: create workspace mine in "+org.path(), func(ctx context.Context) error {
		_, err := tryCreateWorkspace(ctx, user1, org.path(), "mine", nil)
		return err
	})
	mine := waitForPhase(t, user1, ws{parent: org.path(), name: "mine"}, corev1alpha1.LogicalClusterPhaseReady)

	// spec.cluster and spec.URL belong to the system.
	forged := newWorkspace("forged", nil)
	forged.Spec.Cluster = mine.cluster()
	err := user1.create(ctx, org.path(), workspacesGVR, forged, &tenancyv1alpha1.Workspace{})
	requireAPIError(t, err, 403, "user-1: create a workspace with spec.cluster set")

	// The owner is recorded on the Workspace and its LogicalCluster.
	lc := getLogicalCluster(ctx, t, kcp, mine.cluster())
	for what, annotations := range map[string]map[string]string{"Workspace": mine.obj.Annotations, "LogicalCluster": lc.Annotations} {
		var owner authenticationv1.UserInfo
		raw := annotations[corev1alpha1.ExperimentalWorkspaceOwnerAnnotationKey]
		if err := json.Unmarshal([]byte(raw), &owner); err != nil || owner.Username != "user-1" || !slices.Contains(owner.Groups, "team-1") {
			t.Errorf("%s of %s: annotation %s = %q (%v), want user-1 in team-1", what, mine.path(), corev1alpha1.ExperimentalWorkspaceOwnerAnnotationKey, raw, err)
		}
	}
	crb, err := e.kube(t, kcpAdmin, mine.path()).RbacV1().ClusterRoleBindings().Get(ctx, "workspace-admin", metav1.GetOptions{})
	if err != nil {
		t.Errorf("get ClusterRoleBinding workspace-admin in %s: %v", mine.path(), err)
	} else if crb.RoleRef.Name != "cluster-admin" || !slices.ContainsFunc(crb.Subjects, func(s rbacv1.Subject) bool { return s.Kind == rbacv1.UserKind && s.Name == "user-1" }) {
		t.Errorf("ClusterRoleBinding workspace-admin in %s: roleRef %+v subjects %+v, want cluster-admin for user-1", mine.path(), crb.RoleRef, crb.Subjects)
	}

	// The owner can do everything in it.
	u := e.kube(t, "user-1", mine.path())
	eventuallyAllowed(ctx, t, "user-1: create namespace owned in "+mine.path(), func(ctx context.Context) error {
		_, err := u.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "owned"}}, metav1.CreateOptions{})
		return err
	})
	createConfigMap(ctx, t, u, "owned", "settings", map[string]string{"a": "b"})
	if _, err := u.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("user-1: list secrets in %s: %v", mine.path(), err)
	}
	createClusterRole(ctx, t, u, "custom", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}})
	grantAccessAndView(ctx, t, u, "user-2")
	user2 := e.kube(t, "user-2", mine.path())
	eventuallyAllowed(ctx, t, "user-2 (bound by the owner): list configmaps in "+mine.path(), func(ctx context.Context) error { return listConfigMaps(ctx, user2) })
	sub := readyWorkspace(ctx, t, user1, mine.path(), "sub", nil)
	if err := user1.delete(ctx, mine.path(), workspacesGVR, sub.name); err != nil {
		t.Errorf("user-1: delete workspace %s: %v", sub.path(), err)
	}

	requireAccessDenied(t, listConfigMaps(ctx, e.kube(t, "user-3", mine.path())), "user-3: list configmaps in "+mine.path())
}

// testRequiredGroups: authorization.kcp.io/required-groups on a
// LogicalCluster admits only members of one of its alternatives.
func testRequiredGroups(t *testing.T, e *wsEnv) {
	ctx := testContext(t)
	kcp, masters := e.kcp(t, kcpAdmin), e.kcp(t, shardAdmin)

	org := e.readyOrg(ctx, t, "groups")
	guarded := readyWorkspace(ctx, t, kcp, org.path(), "guarded", nil)
	admin := e.kube(t, kcpAdmin, guarded.path())
	grantAccessAndView(ctx, t, admin, "user-2")
	grantAccessAndView(ctx, t, admin, "user-3")
	user2, user3 := e.kube(t, "user-2", guarded.path()), e.kube(t, "user-3", guarded.path())
	// Without the annotation both may enter.
	eventuallyAllowed(ctx, t, "user-2: list configmaps in "+guarded.path(), func(ctx context.Context) error { return listConfigMaps(ctx, user2) })
	eventuallyAllowed(ctx, t, "user-3: list configmaps in "+guarded.path(), func(ctx context.Context) error { return listConfigMaps(ctx, user3) })

	setRequiredGroups := func(value string) {
		t.Helper()
		err := updateLogicalCluster(ctx, masters, guarded.cluster(), false, func(lc *corev1alpha1.LogicalCluster) {
			if lc.Annotations == nil {
				lc.Annotations = map[string]string{}
			}
			lc.Annotations[corev1alpha1.RequiredGroupsAnnotationKey] = value
		})
		if err != nil {
			t.Fatalf("shard-admin: set %s=%q on LogicalCluster %s: %v", corev1alpha1.RequiredGroupsAnnotationKey, value, guarded.cluster(), err)
		}
	}

	setRequiredGroups("team-3")
	eventuallyDenied(t, "user-2 (team-2): list configmaps in "+guarded.path()+" requiring team-3", func(ctx context.Context) error { return listConfigMaps(ctx, user2) })
	requireAccessDenied(t, listConfigMaps(ctx, e.kube(t, "user-2", guarded.cluster())), "user-2 (team-2): list configmaps in "+guarded.cluster()+" requiring team-3")
	if err := listConfigMaps(ctx, user3); err != nil {
		t.Errorf("user-3 (team-3): list configmaps in %s requiring team-3: %v", guarded.path(), err)
	}
	if err := listConfigMaps(ctx, admin); err != nil {
		t.Errorf("kcp-admin: list configmaps in %s requiring team-3: %v", guarded.path(), err)
	}
	// Children get the annotation on creation.
	child := readyWorkspace(ctx, t, kcp, guarded.path(), "child", nil)
	if got := getLogicalCluster(ctx, t, kcp, child.cluster()).Annotations[corev1alpha1.RequiredGroupsAnnotationKey]; got != "team-3" {
		t.Errorf("LogicalCluster of child %s: %s = %q, want team-3 (copied from the parent)", child.path(), corev1alpha1.RequiredGroupsAnnotationKey, got)
	}

	// Alternatives: either group will do.
	setRequiredGroups("team-2;team-3")
	eventuallyAllowed(ctx, t, "user-2 (team-2): list configmaps in "+guarded.path()+" requiring team-2 or team-3", func(ctx context.Context) error { return listConfigMaps(ctx, user2) })
	if err := listConfigMaps(ctx, user3); err != nil {
		t.Errorf("user-3 (team-3): list configmaps in %s requiring team-2 or team-3: %v", guarded.path(), err)
	}

	// All of: neither user is in both groups.
	setRequiredGroups("team-2,team-3")
	eventuallyDenied(t, "user-2 (team-2): list configmaps in "+guarded.path()+" requiring team-2 and team-3", func(ctx context.Context) error { return listConfigMaps(ctx, user2) })
	requireAccessDenied(t, listConfigMaps(ctx, user3), "user-3 (team-3): list configmaps in "+guarded.path()+" requiring team-2 and team-3")
}

// testCreateToReadyTiming logs how long workspaces take from create to
// Ready: 100 workspaces in one organization, 10 at a time. It only logs.
func testCreateToReadyTiming(t *testing.T, e *wsEnv) {
	if testing.Short() {
		t.Skip("creates 100 workspaces; skipped in -short mode")
	}
	const total, concurrency = 100, 10
	ctx := testContext(t)
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "timing")

	ready := make(map[string]chan time.Time, total)
	names := make([]string, total)
	for i := range names {
		names[i] = fmt.Sprintf("ws-%03d", i)
		ready[names[i]] = make(chan time.Time, 1)
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	done := e.startReadyWatch(watchCtx, t, kcpAdmin, org.path(), func(name string, at time.Time) {
		if ch, ok := ready[name]; ok {
			ch <- at
		}
	})
	defer func() { stopWatch(); <-done }()

	durations := make([]time.Duration, total)
	var errs collector
	jobs := make(chan int)
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				name := names[i]
				created := time.Now()
				if _, err := tryCreateWorkspace(ctx, kcp, org.path(), name, nil); err != nil {
					errs.add("create %s: %v", name, err)
					continue
				}
				select {
				case at := <-ready[name]:
					durations[i] = at.Sub(created)
				case <-time.After(wsTimeout):
					errs.add("workspace %s:%s not Ready within %s", org.path(), name, wsTimeout)
				case <-ctx.Done():
					errs.add("workspace %s:%s: %v", org.path(), name, ctx.Err())
				}
			}
		}()
	}
	for i := range names {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	wall := time.Since(start)
	if len(errs.errs) > 0 {
		t.Fatalf("%d of %d workspaces failed:\n%s", len(errs.errs), total, fmt.Sprint(errs.errs))
	}

	sorted := slices.Clone(durations)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	t.Logf("Workspace create → Ready over %d workspaces (concurrency %d, wall %s): p50 %s, p99 %s, min %s, mean %s, max %s",
		total, concurrency, wall.Round(time.Millisecond), percentile(sorted, 50).Round(time.Millisecond), percentile(sorted, 99).Round(time.Millisecond),
		sorted[0].Round(time.Millisecond), (sum / time.Duration(total)).Round(time.Millisecond), sorted[total-1].Round(time.Millisecond))

	// The workspaces are really there and Ready.
	list := &tenancyv1alpha1.WorkspaceList{}
	if err := kcp.list(ctx, org.path(), workspacesGVR, list); err != nil {
		t.Fatalf("list workspaces in %s: %v", org.path(), err)
	}
	readyCount := 0
	for _, w := range list.Items {
		if w.Status.Phase == corev1alpha1.LogicalClusterPhaseReady {
			readyCount++
		}
	}
	if readyCount != total {
		t.Errorf("%s has %d Ready workspaces of %d, want %d", org.path(), readyCount, len(list.Items), total)
	}
}

// testRestart: workspaces, paths, content, access rules and a pending
// initializer survive a restart of the shard, and its controllers resume.
func testRestart(t *testing.T, e *wsEnv) {
	ctx := testContext(t)
	kcp, masters := e.kcp(t, kcpAdmin), e.kcp(t, shardAdmin)

	org := e.readyOrg(ctx, t, "restart")
	team := readyWorkspace(ctx, t, kcp, org.path(), "team", typeRef("team", "root"))
	app := readyWorkspace(ctx, t, kcp, team.path(), "app", nil)
	cm := configMapIn(ctx, t, e.kube(t, kcpAdmin, app.path()), "persisted", app.path())
	grantAccessAndView(ctx, t, e.kube(t, kcpAdmin, app.path()), "user-2")
	eventuallyAllowed(ctx, t, "user-2: list configmaps in "+app.path(), func(ctx context.Context) error {
		return listConfigMaps(ctx, e.kube(t, "user-2", app.path()))
	})

	guarded := readyWorkspace(ctx, t, kcp, org.path(), "guarded", nil)
	guardedAdmin := e.kube(t, kcpAdmin, guarded.path())
	grantAccessAndView(ctx, t, guardedAdmin, "user-2")
	grantAccessAndView(ctx, t, guardedAdmin, "user-3")
	if err := updateLogicalCluster(ctx, masters, guarded.cluster(), false, func(lc *corev1alpha1.LogicalCluster) {
		if lc.Annotations == nil {
			lc.Annotations = map[string]string{}
		}
		lc.Annotations[corev1alpha1.RequiredGroupsAnnotationKey] = "team-3"
	}); err != nil {
		t.Fatalf("set required groups on %s: %v", guarded.cluster(), err)
	}
	eventuallyAllowed(ctx, t, "user-3: list configmaps in "+guarded.path(), func(ctx context.Context) error {
		return listConfigMaps(ctx, e.kube(t, "user-3", guarded.path()))
	})
	eventuallyDenied(t, "user-2: list configmaps in "+guarded.path(), func(ctx context.Context) error {
		return listConfigMaps(ctx, e.kube(t, "user-2", guarded.path()))
	})

	initType := uniqueName("restartinit")
	createWorkspaceType(ctx, t, kcp, "root", initType, tenancyv1alpha1.WorkspaceTypeSpec{Initializer: true})
	held := waitForPhase(t, kcp, createWorkspace(ctx, t, kcp, org.path(), "held", typeRef(initType, "root")), corev1alpha1.LogicalClusterPhaseInitializing)

	e.s.Restart(t)
	e.waitForRootBootstrap(t)

	// Workspaces are still Ready in the same logical clusters, and their
	// paths resolve.
	for _, w := range []ws{org, team, app, guarded} {
		got := &tenancyv1alpha1.Workspace{}
		if err := kcp.get(ctx, w.parent, workspacesGVR, w.name, got); err != nil {
			t.Errorf("after restart: get workspace %s: %v", w.path(), err)
			continue
		}
		if got.Status.Phase != corev1alpha1.LogicalClusterPhaseReady || got.Spec.Cluster != w.cluster() || got.UID != w.obj.UID {
			t.Errorf("after restart: workspace %s: phase %q cluster %q uid %s, want Ready in %s with uid %s", w.path(), got.Status.Phase, got.Spec.Cluster, got.UID, w.cluster(), w.obj.UID)
		}
		lc := getLogicalCluster(ctx, t, kcp, w.path())
		requireCluster(t, lc, w.cluster())
		if lc.Status.Phase != corev1alpha1.LogicalClusterPhaseReady || lc.Annotations["kcp.io/path"] != w.path() {
			t.Errorf("after restart: LogicalCluster of %s: phase %q path %q, want Ready at %s", w.path(), lc.Status.Phase, lc.Annotations["kcp.io/path"], w.path())
		}
	}
	requireConfigMap(ctx, t, e.kube(t, kcpAdmin, app.path()), "the path after restart", cm, app.cluster())
	requireConfigMap(ctx, t, e.kube(t, kcpAdmin, app.cluster()), "the cluster name after restart", cm, app.cluster())

	// Access rules hold.
	eventuallyAllowed(ctx, t, "after restart: user-2: list configmaps in "+app.path(), func(ctx context.Context) error {
		return listConfigMaps(ctx, e.kube(t, "user-2", app.path()))
	})
	requireAccessDenied(t, listConfigMaps(ctx, e.kube(t, "user-3", app.path())), "after restart: user-3: list configmaps in "+app.path())
	eventuallyAllowed(ctx, t, "after restart: user-3: list configmaps in "+guarded.path(), func(ctx context.Context) error {
		return listConfigMaps(ctx, e.kube(t, "user-3", guarded.path()))
	})
	requireAccessDenied(t, listConfigMaps(ctx, e.kube(t, "user-2", guarded.path())), "after restart: user-2 (not team-3): list configmaps in "+guarded.path())

	// The initializer still holds; removing it completes the workspace.
	held = waitForPhase(t, kcp, held, corev1alpha1.LogicalClusterPhaseInitializing)
	initializer := corev1alpha1.LogicalClusterInitializer("root:" + initType)
	if !slices.Contains(held.obj.Status.Initializers, initializer) {
		t.Errorf("after restart: workspace %s: initializers %v lack %s", held.path(), held.obj.Status.Initializers, initializer)
	}
	if err := updateLogicalCluster(ctx, masters, held.cluster(), true, func(lc *corev1alpha1.LogicalCluster) { lc.Status.Initializers = nil }); err != nil {
		t.Fatalf("after restart: remove the initializers of %s: %v", held.cluster(), err)
	}
	waitForPhase(t, kcp, held, corev1alpha1.LogicalClusterPhaseReady)

	// New workspaces are scheduled after the restart.
	fresh := readyWorkspace(ctx, t, kcp, app.path(), "fresh", nil)
	configMapIn(ctx, t, e.kube(t, kcpAdmin, fresh.path()), "new", "x")
}
