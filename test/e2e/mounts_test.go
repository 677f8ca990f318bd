package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/features"
	"github.com/shardplane/shardplane/test/framework"
)

// TestWorkspaceMountsNeedTheirGate: the shared shard runs without kcp's
// WorkspaceMounts gate and refuses spec.mount with a message that names
// it. Deliberately different: kcp stores such a Workspace and nothing
// ever serves it.
func TestWorkspaceMountsNeedTheirGate(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	cfg := s.ClusterConfig(t, "base", "root")
	cfg.Host = s.BaseURL(t)
	c := newKCPREST(t, cfg)
	err := c.create(ctx, "root", workspacesGVR, framework.MountedWorkspace(uniqueName("mount"), "proxy-cluster"), &tenancyv1alpha1.Workspace{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "WorkspaceMounts") {
		t.Fatalf("create a mounted workspace without the gate: %v, want 422 naming WorkspaceMounts", err)
	}
}

// TestMountedWorkspaceFollowsItsMountObjectOnOneShard: with the gate, a
// mounted workspace on a single shard gets no logical cluster; its
// WorkspaceMountReady condition says kcp's MountObjectNotFound while the
// KubeCluster is missing (phase Unavailable), and once it reports Ready
// the workspace is Ready with the object's URL, as kcp's mounts
// reconciler makes it.
func TestMountedWorkspaceFollowsItsMountObjectOnOneShard(t *testing.T) {
	t.Parallel()
	s := framework.StartShard(t, framework.WithArgs(features.EnableFlag(features.WorkspaceMounts)))
	e := &wsEnv{s: s}
	e.waitForRootBootstrap(t)
	ctx := testContext(t)
	org := e.readyOrg(ctx, t, "mounts")
	c := e.kcp(t, kcpAdmin)
	if err := c.create(ctx, org.path(), workspacesGVR, framework.MountedWorkspace("mount", "proxy-cluster"), &tenancyv1alpha1.Workspace{}); err != nil {
		t.Fatalf("create mounted workspace: %v", err)
	}

	got := &tenancyv1alpha1.Workspace{}
	waitFor := func(what string, cond func(*tenancyv1alpha1.Workspace) bool) {
		t.Helper()
		framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
			if err := c.get(ctx, org.path(), workspacesGVR, "mount", got); err != nil {
				return err
			}
			if !cond(got) {
				return fmt.Errorf("spec %+v status %+v", got.Spec, got.Status)
			}
			return nil
		}, "mounted workspace never %s", what)
	}
	waitFor("says its mount object is missing", func(ws *tenancyv1alpha1.Workspace) bool {
		cond := ws.Status.Conditions.Get(tenancyv1alpha1.MountConditionReady)
		return cond != nil && cond.Status == corev1.ConditionFalse && cond.Reason == tenancyv1alpha1.MountObjectNotFoundReason &&
			cond.Message == `KubeCluster "/proxy-cluster" not found` && ws.Status.Phase == corev1alpha1.LogicalClusterPhaseUnavailable
	})
	if got.Spec.Cluster != "" || got.Spec.Type != nil || len(got.Finalizers) != 0 {
		t.Errorf("mounted workspace has cluster %q, type %v, finalizers %v: want none", got.Spec.Cluster, got.Spec.Type, got.Finalizers)
	}

	crds := apiextensionsclient.NewForConfigOrDie(e.config(t, kcpAdmin, org.path())).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, framework.KubeClusterCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	mounts := dynamic.NewForConfigOrDie(e.config(t, kcpAdmin, org.path())).Resource(framework.KubeClustersGVR)
	const url = "https://mounts.example.com/clusters/mounted"
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		obj, err := mounts.Get(ctx, "proxy-cluster", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			obj, err = mounts.Create(ctx, framework.KubeCluster("proxy-cluster"), metav1.CreateOptions{})
		}
		if err != nil {
			return err
		}
		obj.Object["status"] = map[string]interface{}{"URL": url, "phase": "Ready"}
		_, err = mounts.UpdateStatus(ctx, obj, metav1.UpdateOptions{})
		return err
	}, "make the mount object Ready")
	waitFor("becomes Ready", func(ws *tenancyv1alpha1.Workspace) bool {
		return ws.Status.Conditions.IsTrue(tenancyv1alpha1.MountConditionReady) && ws.Status.Phase == corev1alpha1.LogicalClusterPhaseReady && ws.Spec.URL == url
	})

	// Deleting a mounted workspace has no logical cluster to wait for.
	if err := c.delete(ctx, org.path(), workspacesGVR, "mount"); err != nil {
		t.Fatalf("delete mounted workspace: %v", err)
	}
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		if err := c.get(ctx, org.path(), workspacesGVR, "mount", got); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	}, "mounted workspace never gone")
}
