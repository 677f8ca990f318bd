//go:build faults

package faults

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

// movePhase is a point of a move at which a process is killed.
type movePhase struct {
	name string
	// reached tells whether the migration is at the point or past it.
	reached func(*migrationv1alpha1.LogicalClusterMigration) bool
}

var (
	bulkCopy = movePhase{"bulk copy", func(m *migrationv1alpha1.LogicalClusterMigration) bool {
		return m.Status.Phase != "" && m.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhasePreparing
	}}
	cutOver = movePhase{"cut-over", func(m *migrationv1alpha1.LogicalClusterMigration) bool {
		return m.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationWritesHeld) || ended(m)
	}}
	originCleanup = movePhase{"origin clean-up", func(m *migrationv1alpha1.LogicalClusterMigration) bool {
		switch m.Status.Phase {
		case migrationv1alpha1.LogicalClusterMigrationPhaseOriginCleanup, migrationv1alpha1.LogicalClusterMigrationPhaseDestinationFinalize:
			return true
		}
		return ended(m)
	}}
)

func ended(m *migrationv1alpha1.LogicalClusterMigration) bool {
	return m.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhaseCompleted || m.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhaseFailed
}

// describe is a migration's state in one line, for the log.
func describe(m *migrationv1alpha1.LogicalClusterMigration) string {
	var conds []string
	for _, c := range m.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	return fmt.Sprintf("phase %q [%s]", m.Status.Phase, strings.Join(conds, " "))
}

// TestMovesSurviveSIGKILLOfEveryProcessAtEveryPhase: a workspace of a few
// hundred objects moves from shard-1 to root while a client-go writer
// writes into it through the front-proxy; the origin, the destination or
// the front-proxy is killed with SIGKILL as soon as the move reaches its
// bulk copy, its cut-over (writes held) or the origin's clean-up, and
// started again. Every move ends, Completed or Failed, never stuck; the
// workspace serves reads and writes through the front-proxy afterwards,
// from the destination when Completed and from the origin when Failed;
// and every write the writer saw acknowledged is there.
func TestMovesSurviveSIGKILLOfEveryProcessAtEveryPhase(t *testing.T) {
	const origin, destination = "shard-1", corev1alpha1.RootShard
	for _, process := range []string{origin, destination, "front-proxy"} {
		for _, phase := range []movePhase{bulkCopy, cutOver, originCleanup} {
			t.Run(fmt.Sprintf("%s killed at the %s", process, phase.name), func(t *testing.T) {
				killMidMove(t, origin, destination, process, phase)
			})
		}
	}
}

func killMidMove(t *testing.T, origin, destination, process string, phase movePhase) {
	ctx := testContext(t)
	path, cluster := tenantWorkspace(ctx, t, origin, "user-1")
	fill(ctx, t, path, 300)
	w, stop := startWriter(ctx, t, "move-writer", sys.UserConfig(t, "user-1", path.String()))
	w.waitAcked(ctx, t, 5)

	// The migration lives in root, as a drain's do; it is read on root
	// directly, which the front-proxy's outage does not hide.
	onRoot, err := kcpclient.New(sys.ShardAdminConfig(t, corev1alpha1.RootShard, ""))
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueName("kill")
	m := &migrationv1alpha1.LogicalClusterMigration{
		TypeMeta:   metav1.TypeMeta{APIVersion: migrationv1alpha1.SchemeGroupVersion.String(), Kind: "LogicalClusterMigration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       migrationv1alpha1.LogicalClusterMigrationSpec{LogicalCluster: string(cluster), DestinationShard: destination},
	}
	if err := onRoot.Create(ctx, logicalcluster.Root, kcpclient.LogicalClusterMigrations, m, &migrationv1alpha1.LogicalClusterMigration{}); err != nil {
		t.Fatal(err)
	}
	get := func(ctx context.Context) (*migrationv1alpha1.LogicalClusterMigration, error) {
		got := &migrationv1alpha1.LogicalClusterMigration{}
		return got, onRoot.Get(ctx, logicalcluster.Root, kcpclient.LogicalClusterMigrations, name, got)
	}

	var atKill *migrationv1alpha1.LogicalClusterMigration
	framework.EventuallyEvery(t, 5*time.Millisecond, framework.EventuallyTimeout, func(ctx context.Context) error {
		got, err := get(ctx)
		if err != nil {
			return err
		}
		if !phase.reached(got) {
			return fmt.Errorf("%s", describe(got))
		}
		atKill = got
		return nil
	}, "migration %s reaches the %s", name, phase.name)
	sys.KillProcess(t, process)
	t.Logf("killed %s at %s", process, describe(atKill))
	time.Sleep(time.Second)
	sys.RestartExited(t, process, readyURL(t, process))

	var final *migrationv1alpha1.LogicalClusterMigration
	framework.Eventually(t, func(ctx context.Context) error {
		got, err := get(ctx)
		if err != nil {
			return err
		}
		if !ended(got) {
			return fmt.Errorf("%s", describe(got))
		}
		final = got
		return nil
	}, "migration %s ends after %s was killed", name, process)
	t.Logf("the move ended: %s", describe(final))

	// The workspace serves writes again, from where the move left it.
	w.waitAcked(ctx, t, 10)
	stop()
	want := destination
	if final.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhaseFailed {
		want = origin
	}
	servedBy(ctx, t, cluster, want)
	lost := checkAcked(ctx, t, w, sys.AdminConfig(t, path.String()))
	t.Logf("%s; %d lost", w.summary(), lost)
}

// fill creates n ConfigMaps of a few KiB in the workspace: a move of it
// takes long enough for each of its phases to be caught.
func fill(ctx context.Context, t *testing.T, path logicalcluster.Path, n int) {
	t.Helper()
	cms := kube(t, sys.AdminConfig(t, path.String())).CoreV1().ConfigMaps("default")
	payload := strings.Repeat("x", 4096)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	work := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				err := framework.Poll(ctx, time.Minute, func(ctx context.Context) error {
					_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bulk-%04d", i)}, Data: map[string]string{"payload": payload}}, metav1.CreateOptions{})
					if apierrors.IsAlreadyExists(err) {
						return nil
					}
					return err
				})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("fill %s: %v", path, err)
	}
}

// servedBy checks that exactly shard holds the cluster's LogicalCluster,
// unmarked, and the other shards nothing of it.
func servedBy(ctx context.Context, t *testing.T, cluster logicalcluster.Name, shard string) {
	t.Helper()
	framework.Eventually(t, func(ctx context.Context) error {
		for _, s := range []string{corev1alpha1.RootShard, "shard-1"} {
			c, err := kcpclient.New(sys.ShardAdminConfig(t, s, ""))
			if err != nil {
				return err
			}
			lc := &corev1alpha1.LogicalCluster{}
			err = c.Get(ctx, cluster, kcpclient.LogicalClusters, corev1alpha1.LogicalClusterName, lc)
			switch {
			case s == shard && err != nil:
				return fmt.Errorf("shard %s: %v", s, err)
			case s == shard && (lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] != "" || lc.Annotations[migrationv1alpha1.WritesHeldAnnotationKey] != "" || lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] != ""):
				return fmt.Errorf("shard %s still marks the cluster: %v", s, lc.Annotations)
			case s != shard && !apierrors.IsNotFound(err):
				return fmt.Errorf("shard %s still has the cluster: %v", s, err)
			}
		}
		return nil
	}, "logical cluster %s is served by %s alone", cluster, shard)
}
