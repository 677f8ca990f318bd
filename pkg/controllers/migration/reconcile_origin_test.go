package migration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/clusterhold"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

const claim = "orgcluster:move"

// fakeOrigin is an origin shard "root" hosting lc, whose annotations
// setAnnotations changes.
func fakeOrigin(lc *corev1alpha1.LogicalCluster) (*originReconciler, *int) {
	writes := 0
	holds := clusterhold.New()
	return &originReconciler{
		hold:        holds.Hold,
		releaseHold: holds.Release,
		setServedElsewhere: func(context.Context, logicalcluster.Name) error {
			lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] = "true"
			return nil
		},
		deleteAll: func(context.Context, logicalcluster.Name) error { lc = nil; return nil },
		shardName: "root",
		getLogicalCluster: func(cluster logicalcluster.Name) *corev1alpha1.LogicalCluster {
			if lc == nil || cluster != "movingcluster" {
				return nil
			}
			return lc
		},
		setAnnotations: func(_ context.Context, _ logicalcluster.Name, values map[string]string) error {
			writes++
			for k, v := range values {
				if v == "" {
					delete(lc.Annotations, k)
				} else {
					lc.Annotations[k] = v
				}
			}
			return nil
		},
	}, &writes
}

func readyLC() *corev1alpha1.LogicalCluster {
	lc := &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster", Annotations: map[string]string{}}}
	lc.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
	return lc
}

func moveTo(shard string) *migrationv1alpha1.LogicalClusterMigration {
	return &migrationv1alpha1.LogicalClusterMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "move"},
		Spec:       migrationv1alpha1.LogicalClusterMigrationSpec{LogicalCluster: "movingcluster", DestinationShard: shard},
	}
}

func TestOriginClaimsTheClusterAndHandsOver(t *testing.T) {
	lc := readyLC()
	r, writes := fakeOrigin(lc)
	m := moveTo("shard-1")
	ctx := context.Background()
	if !r.isOrigin(m) {
		t.Fatal("the shard serving the cluster is not its origin")
	}
	if err := r.reconcile(ctx, claim, m); err != nil {
		t.Fatal(err)
	}
	if m.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhasePreparing || m.Status.OriginShard != "root" ||
		!m.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationOriginPreparing) {
		t.Fatalf("after the first step: %+v", m.Status)
	}
	if err := r.reconcile(ctx, claim, m); err != nil {
		t.Fatal(err)
	}
	if m.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseMigrating || !m.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationOriginReady) {
		t.Fatalf("after preparing: %+v", m.Status)
	}
	if lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] != claim || *writes != 1 {
		t.Fatalf("annotations %v after %d writes, want the claim written once", lc.Annotations, *writes)
	}
	// The destination's part is not the origin's.
	if err := r.reconcile(ctx, claim, m); err != nil || m.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseMigrating {
		t.Fatalf("the origin acted in phase Migrating: %v %+v", err, m.Status)
	}
}

func TestOriginRefusesWhatCannotMove(t *testing.T) {
	for name, tc := range map[string]struct {
		lc     func() *corev1alpha1.LogicalCluster
		m      *migrationv1alpha1.LogicalClusterMigration
		phase  migrationv1alpha1.LogicalClusterMigrationPhaseType
		reason string
	}{
		"being deleted": {
			lc: func() *corev1alpha1.LogicalCluster {
				lc := readyLC()
				lc.DeletionTimestamp = &metav1.Time{}
				return lc
			},
			m: moveTo("shard-1"), reason: ReasonLogicalClusterDeleting,
		},
		"being deleted, to where it is": {
			lc: func() *corev1alpha1.LogicalCluster {
				lc := readyLC()
				lc.Status.Phase = corev1alpha1.LogicalClusterPhaseDeleting
				return lc
			},
			m: moveTo("root"), reason: ReasonLogicalClusterDeleting,
		},
		"terminating": {
			lc: func() *corev1alpha1.LogicalCluster {
				lc := readyLC()
				lc.Status.Phase = corev1alpha1.LogicalClusterPhaseTerminating
				return lc
			},
			m: moveTo("shard-1"), reason: ReasonLogicalClusterDeleting,
		},
		"already there": {lc: readyLC, m: moveTo("root"), reason: ReasonAlreadyOnDestination},
		"claimed by another migration": {
			lc: func() *corev1alpha1.LogicalCluster {
				lc := readyLC()
				lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] = "orgcluster:other"
				return lc
			},
			m: func() *migrationv1alpha1.LogicalClusterMigration {
				m := moveTo("shard-1")
				m.Status.Phase, m.Status.OriginShard = migrationv1alpha1.LogicalClusterMigrationPhasePreparing, "root"
				return m
			}(),
			reason: ReasonAlreadyMigrating,
		},
	} {
		t.Run(name, func(t *testing.T) {
			lc := tc.lc()
			r, writes := fakeOrigin(lc)
			before := lc.Annotations[migrationv1alpha1.MigratingAnnotationKey]
			if err := r.reconcile(context.Background(), claim, tc.m); err != nil {
				t.Fatal(err)
			}
			cond := tc.m.Status.Conditions.Get(migrationv1alpha1.LCMigrationOriginReady)
			if tc.m.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseFailed || cond == nil || cond.Reason != tc.reason || cond.Message == "" {
				t.Fatalf("status %+v, want Failed with OriginReady False, reason %s and a message", tc.m.Status, tc.reason)
			}
			if *writes != 0 || lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] != before {
				t.Fatalf("the logical cluster was changed: %v", lc.Annotations)
			}
		})
	}
}

func TestAFailedOrCancelledMoveGivesTheClusterBack(t *testing.T) {
	lc := readyLC()
	lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] = claim
	lc.Annotations[migrationv1alpha1.WritesHeldAnnotationKey] = claim
	r, writes := fakeOrigin(lc)
	m := moveTo("shard-1")
	m.Status.Phase, m.Status.OriginShard = migrationv1alpha1.LogicalClusterMigrationPhaseFailed, "root"
	if err := r.reconcile(context.Background(), claim, m); err != nil {
		t.Fatal(err)
	}
	if _, ok := lc.Annotations[migrationv1alpha1.MigratingAnnotationKey]; ok {
		t.Fatal("a failed move left its claim")
	}
	if _, ok := lc.Annotations[migrationv1alpha1.WritesHeldAnnotationKey]; ok || *writes != 1 {
		t.Fatalf("a failed move left its stored hold, or removed it apart from its claim (%d writes)", *writes)
	}

	// Cancelled: the migration is gone, its claim goes.
	lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] = claim
	if err := r.release(context.Background(), claim, "movingcluster"); err != nil {
		t.Fatal(err)
	}
	if _, ok := lc.Annotations[migrationv1alpha1.MigratingAnnotationKey]; ok {
		t.Fatal("a cancelled move left its claim")
	}
	// Another migration's claim is not ours to remove; nor is a copy
	// another shard serves.
	lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] = "orgcluster:other"
	_ = r.release(context.Background(), claim, "movingcluster")
	lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] = "true"
	_ = r.release(context.Background(), "orgcluster:other", "movingcluster")
	if lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] != "orgcluster:other" {
		t.Fatalf("annotations %v, want the other claim kept", lc.Annotations)
	}
}

func TestOriginHoldsWritesThenSwitchesAndCleansUp(t *testing.T) {
	lc := readyLC()
	lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] = claim
	r, _ := fakeOrigin(lc)
	held := map[logicalcluster.Name]bool{}
	hold := r.hold
	r.hold = func(c logicalcluster.Name) <-chan struct{} { held[c] = true; return hold(c) }
	m := migrating()
	m.Spec.DestinationShard, m.Status.OriginShard = "shard-1", "root"
	ctx := context.Background()

	if err := r.reconcile(ctx, claim, m); err != nil || held["movingcluster"] {
		t.Fatalf("writes held before the bulk copy: %v", err)
	}
	conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{Type: migrationv1alpha1.LCMigrationStarted, Status: corev1.ConditionTrue})
	if err := r.reconcile(ctx, claim, m); err != nil {
		t.Fatal(err)
	}
	if !held["movingcluster"] || !m.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationWritesHeld) {
		t.Fatalf("after the bulk copy: held %v, conditions %+v", held, m.Status.Conditions)
	}
	// Held in storage too: a restarted origin holds from it.
	if lc.Annotations[migrationv1alpha1.WritesHeldAnnotationKey] != claim {
		t.Fatalf("the hold is not stored: %v", lc.Annotations)
	}

	m.Status.Phase = migrationv1alpha1.LogicalClusterMigrationPhaseOriginCleanup
	if err := r.reconcile(ctx, claim, m); err != nil {
		t.Fatal(err)
	}
	if lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] == "" {
		t.Fatalf("the origin did not hand over before cleaning: %v", lc.Annotations)
	}
	if m.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseDestinationFinalize || !m.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationOriginCleaned) {
		t.Fatalf("status %+v, want DestinationFinalize with OriginCleaned", m.Status)
	}
	if r.getLogicalCluster("movingcluster") != nil {
		t.Fatal("the origin still holds the cluster")
	}
}

func TestDeletingTheClusterBeforeTheCutOverAbortsTheMove(t *testing.T) {
	now := metav1.Now()
	lc := readyLC()
	lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] = claim
	lc.DeletionTimestamp = &now
	r, _ := fakeOrigin(lc)
	m := moveTo("shard-1")
	m.Status.Phase, m.Status.OriginShard = migrationv1alpha1.LogicalClusterMigrationPhaseMigrating, "root"
	if err := r.reconcile(context.Background(), claim, m); err != nil {
		t.Fatal(err)
	}
	if c := m.Status.Conditions.Get(migrationv1alpha1.LCMigrationAborted); m.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseFailed || c == nil || c.Status != corev1.ConditionTrue {
		t.Fatalf("status %+v, want Failed with Aborted True", m.Status)
	}

	// From the cut-over on the move goes on: the deletion waits for it.
	m = moveTo("shard-1")
	m.Status.Phase, m.Status.OriginShard = migrationv1alpha1.LogicalClusterMigrationPhaseMigrating, "root"
	m.Status.Conditions = conditionsv1alpha1.Conditions{{Type: migrationv1alpha1.LCMigrationStarted, Status: corev1.ConditionTrue}}
	if err := r.reconcile(context.Background(), claim, m); err != nil {
		t.Fatal(err)
	}
	if m.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseMigrating || !m.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationWritesHeld) {
		t.Fatalf("status %+v, want the cut-over to go on", m.Status)
	}
}
