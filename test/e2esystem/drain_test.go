package e2esystem

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
// through the front-proxy, and shard-1 reports Drained True. Not parallel:
// it cordons a shard every other test uses, and opens it again.
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
	migrations := &migrationv1alpha1.LogicalClusterMigrationList{}
	if err := admin.List(ctx, logicalcluster.Root, kcpclient.LogicalClusterMigrations, migrations); err != nil {
		t.Fatal(err)
	}
	for _, ws := range moving {
		cluster := logicalcluster.Name(ws.Spec.Cluster)
		// A move whose copy changed under verification is tried again
		// (drain-shard-1-<cluster>-2, ...): one of them Completed.
		completed := false
		for _, m := range migrations.Items {
			if m.Spec.LogicalCluster != ws.Spec.Cluster {
				continue
			}
			if m.Labels[drain.ShardLabel] != "shard-1" || m.Spec.DestinationShard != corev1alpha1.RootShard {
				t.Errorf("migration %s: labels %v, destination %q; want shard-1's, to root", m.Name, m.Labels, m.Spec.DestinationShard)
			}
			completed = completed || m.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhaseCompleted
		}
		if !completed {
			t.Errorf("no Completed migration of workspace %s in root", ws.Name)
		}
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
}
