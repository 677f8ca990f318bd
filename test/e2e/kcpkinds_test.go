package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/test/framework"
)

var shardsGVR = corev1alpha1.SchemeGroupVersion.WithResource("shards")

// sharedWorkspaceEnv is the package's shared shard, ready for workspaces.
func sharedWorkspaceEnv(t *testing.T) *wsEnv {
	t.Helper()
	e := &wsEnv{s: sharedShard(t)}
	e.waitForRootBootstrap(t)
	return e
}

// orgWithAdmin creates an organization as kcp-admin and makes user its
// cluster-admin.
func orgWithAdmin(ctx context.Context, t *testing.T, e *wsEnv, prefix, user string) ws {
	t.Helper()
	org := e.readyOrg(ctx, t, prefix)
	bindClusterRole(ctx, t, e.kube(t, kcpAdmin, org.path()), user+"-admin", "cluster-admin", userSubject(user))
	return org
}

// TestWorkspaceAdminCannotForgeStatusOfKCPKinds: a workspace's
// cluster-admin tries to mark their workspace Ready, drop its initializers
// and fake conditions of their child Workspace, of a WorkspaceType and of
// the Shard; the status of kcp's kinds is written only by the system (kcp
// lets a workspace's RBAC decide for LogicalClusters and WorkspaceTypes: we
// are stricter), and by kcp-admin within kcp's rules.
func TestWorkspaceAdminCannotForgeStatusOfKCPKinds(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx := testContext(t)
	const attacker = "user-1"
	org := orgWithAdmin(ctx, t, e, "status", attacker)
	user := e.kcp(t, attacker)

	var child ws
	eventuallyAllowed(ctx, t, attacker+": create a workspace in "+org.path(), func(ctx context.Context) error {
		obj, err := createWorkspaceOnce(ctx, user, org.path(), "mine", nil)
		child = ws{parent: org.path(), name: "mine", obj: obj}
		return err
	})
	child = waitForPhase(t, user, child, corev1alpha1.LogicalClusterPhaseReady)

	// The child's creator is its cluster-admin; still, the status is not theirs.
	eventuallyAllowed(ctx, t, attacker+": read the LogicalCluster of "+child.path(), func(ctx context.Context) error {
		return user.get(ctx, child.path(), logicalClustersGVR, corev1alpha1.LogicalClusterName, &corev1alpha1.LogicalCluster{})
	})
	err := updateLogicalCluster(ctx, user, child.path(), true, func(lc *corev1alpha1.LogicalCluster) {
		lc.Status.Phase = corev1alpha1.LogicalClusterPhaseInitializing
		lc.Status.Initializers = []corev1alpha1.LogicalClusterInitializer{"root:forged"}
	})
	requireAPIError(t, err, 403, attacker+": PUT status of own LogicalCluster", "written only by the system")
	err = user.patchStatus(ctx, child.path(), logicalClustersGVR, corev1alpha1.LogicalClusterName, `{"status":{"phase":"Unavailable"}}`)
	requireAPIError(t, err, 403, attacker+": PATCH status of own LogicalCluster", "written only by the system")

	// The Workspace of the child lives in the org, where the attacker is cluster-admin.
	forged := child.obj.DeepCopy()
	forged.Status.Phase = corev1alpha1.LogicalClusterPhaseUnavailable
	err = user.update(ctx, org.path(), workspacesGVR, child.name, forged, &tenancyv1alpha1.Workspace{}, "status")
	requireAPIError(t, err, 403, attacker+": PUT status of Workspace "+child.path(), "written only by the system")
	err = user.patchStatus(ctx, org.path(), workspacesGVR, child.name, `{"status":{"conditions":[{"type":"WorkspaceInitialized","status":"False","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`)
	requireAPIError(t, err, 403, attacker+": PATCH status of Workspace "+child.path(), "written only by the system")

	// A WorkspaceType the attacker created.
	wtName := uniqueName("forge")
	createWorkspaceType(ctx, t, user, org.path(), wtName, tenancyv1alpha1.WorkspaceTypeSpec{})
	err = user.patchStatus(ctx, org.path(), workspaceTypesGVR, wtName, `{"status":{"conditions":[{"type":"Ready","status":"False","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`)
	requireAPIError(t, err, 403, attacker+": PATCH status of WorkspaceType "+wtName, "written only by the system")

	// kcp-admin writes a LogicalCluster's status only as kcp lets it, and
	// never a Shard's.
	kcp := e.kcp(t, kcpAdmin)
	err = kcp.patchStatus(ctx, child.cluster(), logicalClustersGVR, corev1alpha1.LogicalClusterName, `{"status":{"phase":"Scheduling"}}`)
	requireAPIError(t, err, 403, "kcp-admin: PATCH status of LogicalCluster "+child.cluster()+" back to Scheduling", `cannot transition from "Ready" to "Scheduling"`)
	err = kcp.patchStatus(ctx, "root", shardsGVR, corev1alpha1.RootShard, `{"status":{"capacity":{"cpu":"1"}}}`)
	requireAPIError(t, err, 403, "kcp-admin: PATCH status of Shard root", "written only by the system")

	// Nothing changed.
	lc := getLogicalCluster(ctx, t, kcp, child.cluster())
	if lc.Status.Phase != corev1alpha1.LogicalClusterPhaseReady || len(lc.Status.Initializers) != 0 {
		t.Errorf("LogicalCluster %s: phase %q initializers %v after the forgeries, want Ready without initializers", child.cluster(), lc.Status.Phase, lc.Status.Initializers)
	}
}

// TestKCPAdminWritesStatusWhereKCPLetsIt: kcp-admin sets conditions of a
// WorkspaceType and, as kcp's tests do, takes an initializer off a
// workspace's LogicalCluster, which then turns Ready; adding one is refused
// in kcp's words.
func TestKCPAdminWritesStatusWhereKCPLetsIt(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx := testContext(t)
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "adminstatus")
	wtName := uniqueName("init")
	createWorkspaceType(ctx, t, kcp, org.path(), wtName, tenancyv1alpha1.WorkspaceTypeSpec{
		Initializer: true,
		Extend:      tenancyv1alpha1.WorkspaceTypeExtension{With: []tenancyv1alpha1.WorkspaceTypeReference{{Name: "universal", Path: "root"}}},
	})
	eventuallyAllowed(ctx, t, "kcp-admin: PATCH status of WorkspaceType "+wtName, func(ctx context.Context) error {
		return kcp.patchStatus(ctx, org.path(), workspaceTypesGVR, wtName, `{"status":{"conditions":[{"type":"Example","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`)
	})

	child := createWorkspace(ctx, t, kcp, org.path(), "initializing", &tenancyv1alpha1.WorkspaceTypeReference{Name: tenancyv1alpha1.WorkspaceTypeName(wtName), Path: org.path()})
	child = waitForPhase(t, kcp, child, corev1alpha1.LogicalClusterPhaseInitializing)
	own := corev1alpha1.LogicalClusterInitializer(org.cluster() + ":" + wtName)
	var lc *corev1alpha1.LogicalCluster
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		lc = getLogicalCluster(ctx, t, kcp, child.cluster())
		if !slices.Contains(lc.Status.Initializers, own) {
			return fmt.Errorf("initializers %v, want %s among them", lc.Status.Initializers, own)
		}
		return nil
	}, "the type's initializer on %s", child.path())

	grown, _ := json.Marshal(append(append([]corev1alpha1.LogicalClusterInitializer(nil), lc.Status.Initializers...), "root:forged"))
	err := kcp.patchStatus(ctx, child.cluster(), logicalClustersGVR, corev1alpha1.LogicalClusterName, `{"status":{"initializers":`+string(grown)+`}}`)
	requireAPIError(t, err, 403, "kcp-admin adds an initializer", "status.initializers must not grow")

	var left []corev1alpha1.LogicalClusterInitializer
	for _, i := range lc.Status.Initializers {
		if i != own {
			left = append(left, i)
		}
	}
	rest, _ := json.Marshal(left)
	if left == nil {
		rest = []byte("[]")
	}
	if err := kcp.patchStatus(ctx, child.cluster(), logicalClustersGVR, corev1alpha1.LogicalClusterName, `{"status":{"initializers":`+string(rest)+`}}`); err != nil {
		t.Fatalf("kcp-admin takes initializer %s off %s: %v", own, child.path(), err)
	}
	if len(left) == 0 {
		waitForPhase(t, kcp, child, corev1alpha1.LogicalClusterPhaseReady)
	}
}

// TestWorkspaceAdminChangesOnlyOwnMetadataOfLogicalCluster: the workspace's
// cluster-admin may label and annotate its LogicalCluster as in kcp, but
// not rewrite its path or required groups, nor drop the deletion finalizer
// (which would leave the content behind).
func TestWorkspaceAdminChangesOnlyOwnMetadataOfLogicalCluster(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx := testContext(t)
	const admin = "user-2"
	org := orgWithAdmin(ctx, t, e, "lcmeta", admin)
	user := e.kcp(t, admin)

	eventuallyAllowed(ctx, t, admin+": label the LogicalCluster of "+org.path(), func(ctx context.Context) error {
		return updateLogicalCluster(ctx, user, org.path(), false, func(lc *corev1alpha1.LogicalCluster) {
			if lc.Labels == nil {
				lc.Labels = map[string]string{}
			}
			lc.Labels["example.com/team"] = "blue"
			if lc.Annotations == nil {
				lc.Annotations = map[string]string{}
			}
			lc.Annotations["example.com/note"] = "mine"
		})
	})
	lc := getLogicalCluster(ctx, t, user, org.path())
	if lc.Labels["example.com/team"] != "blue" || lc.Annotations["example.com/note"] != "mine" {
		t.Errorf("LogicalCluster of %s: labels %v annotations %v, want the admin's label and annotation", org.path(), lc.Labels, lc.Annotations)
	}

	for _, attack := range []struct {
		what   string
		mutate func(*corev1alpha1.LogicalCluster)
	}{
		{"rewrite kcp.io/path", func(lc *corev1alpha1.LogicalCluster) { lc.Annotations["kcp.io/path"] = "root:elsewhere" }},
		{"add required-groups", func(lc *corev1alpha1.LogicalCluster) {
			lc.Annotations[corev1alpha1.RequiredGroupsAnnotationKey] = "nobody"
		}},
		{"drop the deletion finalizer", func(lc *corev1alpha1.LogicalCluster) {
			lc.Finalizers = nil
		}},
		{"change spec.owner", func(lc *corev1alpha1.LogicalCluster) { lc.Spec.Owner = nil }},
		{"make it directly deletable", func(lc *corev1alpha1.LogicalCluster) { lc.Spec.DirectlyDeletable = true }},
	} {
		err := updateLogicalCluster(ctx, user, org.path(), false, attack.mutate)
		requireAPIError(t, err, 403, admin+": "+attack.what+" on the LogicalCluster of "+org.path(), "system")
	}
	err := user.delete(ctx, org.path(), logicalClustersGVR, corev1alpha1.LogicalClusterName)
	requireAPIError(t, err, 403, admin+": delete the LogicalCluster of "+org.path(), "not directly deletable")
}

// TestScheduledWorkspaceCarriesKCPsShardAnnotations: kcp's client libraries
// read core.kcp.io/shard; internal.tenancy.kcp.io/shard is kcp's hash form.
func TestScheduledWorkspaceCarriesKCPsShardAnnotations(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx := testContext(t)
	org := e.readyOrg(ctx, t, "annotations")
	want := map[string]string{
		"core.kcp.io/shard":               "root",
		"internal.tenancy.kcp.io/shard":   "1pfxsevk", // base36(sha224("root"))[:8], as kcp writes it
		"internal.tenancy.kcp.io/cluster": org.cluster(),
	}
	for k, v := range want {
		if got := org.obj.Annotations[k]; got != v {
			t.Errorf("Workspace %s: annotation %s = %q, want %q", org.path(), k, got, v)
		}
	}
}

// TestNewWorkspacesHaveDefaultAndKubeSystemNamespaces: organization, team
// and universal workspaces start with default and kube-system as in kcp,
// system:admin has kube-system for the apiserver's lease, and the shard
// never logs that kube-system is missing.
func TestNewWorkspacesHaveDefaultAndKubeSystemNamespaces(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx := testContext(t)
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "namespaces")
	team := readyWorkspace(ctx, t, kcp, org.path(), "team", typeRef("team", "root"))
	app := readyWorkspace(ctx, t, kcp, team.path(), "app", nil)
	for _, w := range []ws{org, team, app} {
		c := e.kube(t, kcpAdmin, w.path())
		for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem} {
			if _, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
				t.Errorf("workspace %s (type %s): namespace %s: %v", w.path(), w.obj.Spec.Type.Name, ns, err)
			}
		}
	}
	if _, err := e.kube(t, shardAdmin, "system:admin").CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{}); err != nil {
		t.Errorf("system:admin: namespace kube-system: %v", err)
	}
	log, err := os.ReadFile(e.s.LogPath())
	if err != nil {
		t.Fatalf("read shard log: %v", err)
	}
	if strings.Contains(string(log), `namespaces \"kube-system\" not found`) || strings.Contains(string(log), `namespaces "kube-system" not found`) {
		t.Errorf("shard log %s reports kube-system missing", e.s.LogPath())
	}
}

// TestWorkspaceTypesBecomeReady: built-in and new WorkspaceTypes get the
// Ready condition.
func TestWorkspaceTypesBecomeReady(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx := testContext(t)
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "types")
	name := uniqueName("ready")
	createWorkspaceType(ctx, t, kcp, org.path(), name, tenancyv1alpha1.WorkspaceTypeSpec{})

	for _, wt := range []struct{ cluster, name string }{
		{"root", "root"}, {"root", "universal"}, {"root", "organization"}, {"root", "team"}, {"root", "home"}, {org.path(), name},
	} {
		var last *tenancyv1alpha1.WorkspaceType
		err := wait.PollUntilContextTimeout(ctx, wsPoll, wsTimeout, true, func(ctx context.Context) (bool, error) {
			got := &tenancyv1alpha1.WorkspaceType{}
			if err := kcp.get(ctx, wt.cluster, workspaceTypesGVR, wt.name, got); err != nil {
				return false, nil
			}
			last = got
			return got.Status.Conditions.IsTrue(conditionsv1alpha1.ReadyCondition), nil
		})
		if err != nil {
			var status any
			if last != nil {
				status = last.Status
			}
			t.Errorf("WorkspaceType %s:%s never Ready: %v (last status %+v)", wt.cluster, wt.name, err, status)
		}
	}
}

// TestDeletingWorkspaceSaysWhatHoldsItsContent: a ConfigMap with a
// finalizer holds a deleted workspace; its Workspace says so in
// WorkspaceContentDeleted=False, naming the resource and the finalizer,
// and turns it True when the content is gone.
func TestDeletingWorkspaceSaysWhatHoldsItsContent(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx := testContext(t)
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "held")
	doomed := readyWorkspace(ctx, t, kcp, org.path(), "doomed", nil)

	const finalizer = "example.com/hold"
	c := e.kube(t, kcpAdmin, doomed.path())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "held", Finalizers: []string{finalizer}}}
	if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap with finalizer: %v", err)
	}

	// Watch the Workspace from before its deletion: True is its last word.
	cfg := e.config(t, kcpAdmin, org.path())
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("dynamic client: %v", err)
	}
	watchCtx, stopWatch := context.WithTimeout(ctx, 2*wsTimeout)
	defer stopWatch()
	watcher, err := dyn.Resource(workspacesGVR).Watch(watchCtx, metav1.ListOptions{FieldSelector: "metadata.name=" + doomed.name})
	if err != nil {
		t.Fatalf("watch workspace %s: %v", doomed.path(), err)
	}
	defer watcher.Stop()

	if err := kcp.delete(ctx, org.path(), workspacesGVR, doomed.name); err != nil {
		t.Fatalf("delete workspace %s: %v", doomed.path(), err)
	}
	var held *conditionsv1alpha1.Condition
	var last *tenancyv1alpha1.Workspace
	err = wait.PollUntilContextTimeout(ctx, wsPoll, wsTimeout, true, func(ctx context.Context) (bool, error) {
		got := &tenancyv1alpha1.Workspace{}
		if err := kcp.get(ctx, org.path(), workspacesGVR, doomed.name, got); err != nil {
			return false, nil
		}
		last = got
		held = got.Status.Conditions.Get(tenancyv1alpha1.WorkspaceContentDeleted)
		return held != nil && held.Status == corev1.ConditionFalse, nil
	})
	if err != nil {
		t.Fatalf("workspace %s never reported its held content: %v (last status %+v)", doomed.path(), err, last)
	}
	if held.Reason != tenancyv1alpha1.WorkspaceContentDeletedSomeResourcesRemain || !strings.Contains(held.Message, "configmaps") || !strings.Contains(held.Message, finalizer) {
		t.Errorf("WorkspaceContentDeleted = %+v, want reason SomeResourcesRemain and a message naming configmaps and %s", held, finalizer)
	}
	if last.Status.Phase != corev1alpha1.LogicalClusterPhaseTerminating {
		t.Errorf("workspace %s: phase %q while its content is held, want Terminating", doomed.path(), last.Status.Phase)
	}

	// Release the ConfigMap: the workspace finishes and goes.
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := c.CoreV1().ConfigMaps("default").Patch(ctx, "held", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("remove finalizer %s: %v", finalizer, err)
	}
	sawTrue := false
	for ev := range watcher.ResultChan() {
		if ev.Type == watch.Deleted {
			break
		}
		if u, ok := ev.Object.(*unstructured.Unstructured); ok && conditionStatus(u, tenancyv1alpha1.WorkspaceContentDeleted) == string(corev1.ConditionTrue) {
			sawTrue = true
		}
	}
	if !sawTrue {
		t.Errorf("workspace %s went away without WorkspaceContentDeleted=True", doomed.path())
	}
	err = kcp.get(ctx, org.path(), workspacesGVR, doomed.name, &tenancyv1alpha1.Workspace{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("workspace %s after its content was released: %v, want NotFound", doomed.path(), err)
	}
}

// conditionStatus returns the status of a condition of an unstructured
// object, "" when it has none.
func conditionStatus(u *unstructured.Unstructured, t conditionsv1alpha1.ConditionType) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, item := range conds {
		if c, ok := item.(map[string]interface{}); ok && c["type"] == string(t) {
			s, _ := c["status"].(string)
			return s
		}
	}
	return ""
}
