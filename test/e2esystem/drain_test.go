package e2esystem

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/drain"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

// TestDrainMovesEveryWorkspaceOffACordonedShard: ours, kcp has no drain.
// The operator cordons shard-1 (kcp's unschedulable annotation) and asks
// for a drain (drain.shardplane.io/requested, two moves at a time); the
// shard's workspaces move to root by LogicalClusterMigrations in root,
// each Completed, the Workspaces name root and serve their content by path
// through the front-proxy, and shard-1 reports Drained True. The drained
// shard is then removed as docs/architecture.md says: its process stops
// and its Shard object is deleted from root; the Shard is gone, the
// front-proxies stop routing to it, a front-proxy started afresh is ready
// without it, and every moved workspace answers through each front-proxy.
// Not parallel: it drains and removes a shard every other test uses, and
// brings it back (a restarted shard registers itself again).
func TestDrainMovesEveryWorkspaceOffACordonedShard(t *testing.T) {
	if shards < 2 {
		t.Skip("needs a second shard (SHARDPLANE_E2E_SYSTEM_SHARDS >= 2)")
	}
	ctx := testContext(t)
	org := readyWorkspace(ctx, t, "root", uniqueName("drain"), "organization", corev1alpha1.RootShard)
	var moving []*tenancyv1alpha1.Workspace
	for i := range 3 {
		ws := readyWorkspace(ctx, t, org.Spec.Cluster, fmt.Sprintf("ws-%d", i), "", "shard-1")
		path := pathOf(ctx, t, logicalcluster.Name(ws.Spec.Cluster))
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before-drain"}}
		if _, err := kube(t, sys.AdminConfig(t, path)).CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		moving = append(moving, ws)
	}

	// Deferred, not a Cleanup: the test's context ends before Cleanups run.
	defer func() {
		updateShard(t, "shard-1", func(s *corev1alpha1.Shard) {
			uncordon(s)
			delete(s.Annotations, corev1alpha1.ShardDrainAnnotationKey)
			delete(s.Annotations, corev1alpha1.ShardDrainMaxMovesAnnotationKey)
		})
		eventuallyShardCondition(t, "shard-1", corev1alpha1.ShardSchedulable, corev1.ConditionTrue, "", "")
	}()
	t.Log("Ask for a drain of shard-1 before cordoning it: the shard says a drain needs the cordon")
	updateShard(t, "shard-1", func(s *corev1alpha1.Shard) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[corev1alpha1.ShardDrainAnnotationKey] = "true"
		s.Annotations[corev1alpha1.ShardDrainMaxMovesAnnotationKey] = "2"
	})
	eventuallyShardCondition(t, "shard-1", corev1alpha1.ShardDrained, corev1.ConditionFalse, corev1alpha1.ShardReasonDrainNotCordoned, "")

	t.Log("Cordon shard-1: its workspaces move to root until it is Drained")
	updateShard(t, "shard-1", cordon)
	eventuallyShardCondition(t, "shard-1", corev1alpha1.ShardDrained, corev1.ConditionTrue, "", "")

	admin := kcp(t, sys.AdminConfig(t, ""))
	for _, ws := range moving {
		cluster := logicalcluster.Name(ws.Spec.Cluster)
		// A move whose copy changed under verification is tried again
		// (drain-shard-1-<cluster>-2, ...): one of them Completed. Drained
		// comes once shard-1 is clean; the destination may still finalize.
		framework.Eventually(t, func(ctx context.Context) error {
			migrations := &migrationv1alpha1.LogicalClusterMigrationList{}
			if err := admin.List(ctx, logicalcluster.Root, kcpclient.LogicalClusterMigrations, migrations); err != nil {
				return err
			}
			var phases []string
			for _, m := range migrations.Items {
				if m.Spec.LogicalCluster != ws.Spec.Cluster {
					continue
				}
				if m.Labels[drain.ShardLabel] != "shard-1" || m.Spec.DestinationShard != corev1alpha1.RootShard {
					t.Errorf("migration %s: labels %v, destination %q; want shard-1's, to root", m.Name, m.Labels, m.Spec.DestinationShard)
				}
				if m.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhaseCompleted {
					return nil
				}
				phases = append(phases, string(m.Status.Phase))
			}
			return fmt.Errorf("migrations in phases %v", phases)
		}, "a Completed migration of workspace %s in root", ws.Name)
		framework.Eventually(t, func(ctx context.Context) error {
			got := &tenancyv1alpha1.Workspace{}
			if err := admin.Get(ctx, logicalcluster.Name(org.Spec.Cluster), workspacesGVR, ws.Name, got); err != nil {
				return err
			}
			if s := shardOf(got); s != corev1alpha1.RootShard {
				return fmt.Errorf("workspace %s is on %q", ws.Name, s)
			}
			return nil
		}, "workspace %s never named root", ws.Name)
		path := pathOf(ctx, t, cluster)
		if _, err := kube(t, sys.AdminConfig(t, path)).CoreV1().ConfigMaps("default").Get(ctx, "before-drain", metav1.GetOptions{}); err != nil {
			t.Errorf("workspace %s by its path %s after the drain: %v", ws.Name, path, err)
		}
	}
	if t.Failed() {
		return
	}

	t.Log("Remove the drained shard-1: stop it and delete its Shard")
	sys.StopProcess(t, "shard-1")
	defer func() {
		// A restarted shard registers its Shard again, without cordon.
		sys.RestartExited(t, "shard-1", sys.ShardURL(t, "shard-1")+"/readyz")
		eventuallyShardCondition(t, "shard-1", corev1alpha1.ShardSchedulable, corev1.ConditionTrue, "", "")
	}()
	if err := admin.Delete(ctx, logicalcluster.Root, kcpclient.Shards, "shard-1", nil); err != nil {
		t.Fatalf("delete the drained Shard shard-1: %v", err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		if _, err := shardGet(ctx, t, "shard-1"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get shard-1: %v, want 404", err)
		}
		list := &corev1alpha1.ShardList{}
		if err := admin.List(ctx, logicalcluster.Root, kcpclient.Shards, list); err != nil {
			return err
		}
		for _, s := range list.Items {
			if s.Name == "shard-1" {
				return fmt.Errorf("shard-1 is still listed")
			}
		}
		return nil
	}, "the removed Shard shard-1 is gone")
	framework.Eventually(t, func(context.Context) error {
		log, err := os.ReadFile(sys.ShardLog("front-proxy"))
		if err != nil {
			return err
		}
		if !strings.Contains(string(log), `"No longer routing to shard" shard="shard-1"`) {
			return fmt.Errorf("the front-proxy's log does not say it stopped routing to shard-1")
		}
		return nil
	}, "the front-proxy forgets the removed shard-1")
	// A front-proxy is ready once it listed every shard: one started
	// afresh would wait for shard-1 for good had it not forgotten it.
	sys.KillProcess(t, "front-proxy")
	sys.RestartExited(t, "front-proxy", sys.URL(t)+"/readyz")
	for _, ws := range moving {
		path := pathOf(ctx, t, logicalcluster.Name(ws.Spec.Cluster))
		for _, proxy := range sys.ProxyURLs(t) {
			cfg := sys.AdminConfig(t, path)
			cfg.Host = logicalcluster.Path(path).URL(proxy)
			framework.Eventually(t, func(ctx context.Context) error {
				_, err := kube(t, cfg).CoreV1().ConfigMaps("default").Get(ctx, "before-drain", metav1.GetOptions{})
				return err
			}, "workspace %s through %s with shard-1 removed", path, proxy)
		}
	}
}
