package logicalcluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/registry/content"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// fakeDeletion records what the deletion step wrote.
type fakeDeletion struct {
	remaining      content.Remaining
	statusWrites   []*corev1alpha1.LogicalCluster
	updates        []*corev1alpha1.LogicalCluster
	releasedNames  []logicalcluster.Name
	contentDeletes int
	// now is the reconciler's clock.
	now time.Time
	r   *deletionReconciler
}

// reconciler returns the fake's reconciler, the same one each time: it
// remembers since when content has been held.
func (f *fakeDeletion) reconciler() *deletionReconciler {
	if f.r != nil {
		return f.r
	}
	if f.now.IsZero() {
		f.now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	f.r = &deletionReconciler{
		now: func() time.Time { return f.now },
		deleteContent: func(context.Context, logicalcluster.Name, string) (content.Remaining, error) {
			f.contentDeletes++
			return f.remaining, nil
		},
		updateStatus: func(_ context.Context, _ logicalcluster.Name, lc *corev1alpha1.LogicalCluster) (*corev1alpha1.LogicalCluster, error) {
			f.statusWrites = append(f.statusWrites, lc.DeepCopy())
			return lc.DeepCopy(), nil
		},
		update: func(_ context.Context, _ logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
			f.updates = append(f.updates, lc.DeepCopy())
			return nil
		},
		released: func(c logicalcluster.Name) bool { return slices.Contains(f.releasedNames, c) },
		release:  func(c logicalcluster.Name) { f.releasedNames = append(f.releasedNames, c) },
	}
	return f.r
}

func deletingCluster() *corev1alpha1.LogicalCluster {
	now := metav1.Now()
	return &corev1alpha1.LogicalCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster", DeletionTimestamp: &now, Finalizers: []string{corev1alpha1.LogicalClusterDeletionFinalizer}},
		Status:     corev1alpha1.LogicalClusterStatus{Phase: corev1alpha1.LogicalClusterPhaseReady},
	}
}

func heldConfigMap() content.Remaining {
	return content.Remaining{
		Resources:  map[schema.GroupResource]int{{Resource: "configmaps"}: 1},
		Finalizers: map[string]int{"example.com/hold": 1},
	}
}

func TestDeletionReportsWhatFinalizersHoldOnceTheyHoldItAWhile(t *testing.T) {
	f := &fakeDeletion{remaining: heldConfigMap()}
	var requeue loop.RequeueAfter
	err := f.reconciler().reconcile(context.Background(), "abc", deletingCluster())
	if !errors.As(err, &requeue) {
		t.Fatalf("reconcile: %v, want a requeue while content remains", err)
	}
	if len(f.statusWrites) != 0 {
		t.Fatalf("%d status writes on first finding held content, want none (most finalizers go at once)", len(f.statusWrites))
	}

	f.now = f.now.Add(reportAfter)
	err = f.reconciler().reconcile(context.Background(), "abc", deletingCluster())
	if !errors.As(err, &requeue) {
		t.Fatalf("reconcile: %v, want a requeue while content remains", err)
	}
	if len(f.updates) != 0 || len(f.releasedNames) != 0 {
		t.Fatalf("released the LogicalCluster while content remains: updates %v", f.updates)
	}
	if len(f.statusWrites) != 1 {
		t.Fatalf("%d status writes, want 1 (phase Deleting with the condition)", len(f.statusWrites))
	}
	last := f.statusWrites[0]
	if last.Status.Phase != corev1alpha1.LogicalClusterPhaseDeleting {
		t.Errorf("phase %q, want Deleting", last.Status.Phase)
	}
	c := last.Status.Conditions.Get(tenancyv1alpha1.WorkspaceContentDeleted)
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != tenancyv1alpha1.WorkspaceContentDeletedSomeResourcesRemain ||
		!strings.Contains(c.Message, "configmaps") || !strings.Contains(c.Message, "example.com/hold") {
		t.Fatalf("condition %+v, want WorkspaceContentDeleted=False SomeResourcesRemain naming configmaps and example.com/hold", c)
	}

	// The same content still held: no further write.
	f.statusWrites = nil
	_ = f.reconciler().reconcile(context.Background(), "abc", last)
	if len(f.statusWrites) != 0 {
		t.Errorf("rewrote an unchanged status: %d writes", len(f.statusWrites))
	}

	// Other content held now: the report follows at once.
	f.remaining = content.Remaining{Resources: map[schema.GroupResource]int{{Resource: "secrets"}: 2}, Finalizers: map[string]int{"example.com/other": 2}}
	_ = f.reconciler().reconcile(context.Background(), "abc", last)
	if len(f.statusWrites) != 1 || !strings.Contains(f.statusWrites[0].Status.Conditions.Get(tenancyv1alpha1.WorkspaceContentDeleted).Message, "secrets") {
		t.Errorf("status writes %+v, want one naming secrets", f.statusWrites)
	}
}

func TestBrieflyHeldContentCostsNoStatusWrite(t *testing.T) {
	f := &fakeDeletion{remaining: content.Remaining{
		Resources:  map[schema.GroupResource]int{{Group: "apis.kcp.io", Resource: "apibindings"}: 1},
		Finalizers: map[string]int{"apis.kcp.io/apibinding-finalizer": 1},
	}}
	lc := deletingCluster()
	var requeue loop.RequeueAfter
	if err := f.reconciler().reconcile(context.Background(), "abc", lc); !errors.As(err, &requeue) {
		t.Fatalf("reconcile: %v, want a requeue while content remains", err)
	}
	// The binding's finalizer goes; its deletion brings the cluster back.
	f.remaining = content.Remaining{}
	if err := f.reconciler().reconcile(context.Background(), "abc", lc); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if len(f.statusWrites) != 0 {
		t.Errorf("%d status writes, want none: the cluster went from Ready to released", len(f.statusWrites))
	}
	if len(f.updates) != 1 || len(f.releasedNames) != 1 {
		t.Errorf("updates %d, released %v: want the finalizer removed in the pass that found the cluster empty", len(f.updates), f.releasedNames)
	}
}

func TestDeletionReleasesTheLogicalClusterOnceEmpty(t *testing.T) {
	f := &fakeDeletion{}
	lc := deletingCluster()
	lc.Status.Phase = corev1alpha1.LogicalClusterPhaseDeleting
	lc.Finalizers = append(lc.Finalizers, "example.com/mine")
	if err := f.reconciler().reconcile(context.Background(), "abc", lc); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if len(f.updates) != 1 || slices.Contains(f.updates[0].Finalizers, corev1alpha1.LogicalClusterDeletionFinalizer) ||
		!slices.Contains(f.updates[0].Finalizers, "example.com/mine") {
		t.Fatalf("updates %+v, want one that drops only the deletion finalizer", f.updates)
	}
	if !slices.Equal(f.releasedNames, []logicalcluster.Name{"abc"}) {
		t.Errorf("released %v, want [abc]", f.releasedNames)
	}
	// Queued events of a released cluster do nothing.
	f.updates = nil
	if err := f.reconciler().reconcile(context.Background(), "abc", deletingCluster()); err != nil || len(f.updates)+len(f.statusWrites) != 0 {
		t.Errorf("released cluster reconciled again: err %v, writes %d", err, len(f.updates)+len(f.statusWrites))
	}
}

func TestTerminatorsHoldTheContentOfADeletedCluster(t *testing.T) {
	f := &fakeDeletion{}
	lc := deletingCluster()
	lc.Finalizers = append(lc.Finalizers, corev1alpha1.LogicalClusterHasTerminatorsFinalizer)
	lc.Status.Terminators = []corev1alpha1.LogicalClusterTerminator{"root:a", "root:b"}
	if err := f.reconciler().reconcile(context.Background(), "abc", lc); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if len(f.statusWrites) != 1 || f.statusWrites[0].Status.Phase != corev1alpha1.LogicalClusterPhaseTerminating {
		t.Fatalf("status writes %+v, want one to phase Terminating", f.statusWrites)
	}
	if f.contentDeletes != 0 || len(f.updates) != 0 {
		t.Fatalf("deleted content (%d) or finalizers (%v) while terminators remain", f.contentDeletes, f.updates)
	}

	// Terminating already, one terminator left: nothing to do.
	f = &fakeDeletion{}
	lc.Status.Phase = corev1alpha1.LogicalClusterPhaseTerminating
	lc.Status.Terminators = lc.Status.Terminators[1:]
	if err := f.reconciler().reconcile(context.Background(), "abc", lc); err != nil || len(f.statusWrites)+len(f.updates)+f.contentDeletes != 0 {
		t.Fatalf("terminating cluster: err %v, %d status writes, %d updates, %d content deletions; want nothing", err, len(f.statusWrites), len(f.updates), f.contentDeletes)
	}

	// All released: the marker goes first, then the content.
	lc.Status.Terminators = nil
	if err := f.reconciler().reconcile(context.Background(), "abc", lc); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if len(f.updates) != 1 || slices.Contains(f.updates[0].Finalizers, corev1alpha1.LogicalClusterHasTerminatorsFinalizer) ||
		!slices.Contains(f.updates[0].Finalizers, corev1alpha1.LogicalClusterDeletionFinalizer) || f.contentDeletes != 0 {
		t.Fatalf("updates %+v (content deletions %d), want one that drops only %s", f.updates, f.contentDeletes, corev1alpha1.LogicalClusterHasTerminatorsFinalizer)
	}
	if err := f.reconciler().reconcile(context.Background(), "abc", f.updates[0]); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if f.contentDeletes != 1 || len(f.releasedNames) != 1 {
		t.Errorf("content deletions %d, released %v: want the content deleted and the cluster released", f.contentDeletes, f.releasedNames)
	}
}

func TestClusterDeletedWhileSchedulingStillWaitsForItsTerminators(t *testing.T) {
	f := &fakeDeletion{}
	lc := deletingCluster()
	lc.Status.Phase = corev1alpha1.LogicalClusterPhaseScheduling
	lc.Spec.Terminators = []corev1alpha1.LogicalClusterTerminator{"root:a"}
	if err := f.reconciler().reconcile(context.Background(), "abc", lc); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if len(f.statusWrites) != 1 || f.statusWrites[0].Status.Phase != corev1alpha1.LogicalClusterPhaseTerminating ||
		!slices.Equal(f.statusWrites[0].Status.Terminators, lc.Spec.Terminators) || f.contentDeletes != 0 {
		t.Fatalf("status writes %+v, content deletions %d: want Terminating with the spec's terminators, content kept", f.statusWrites, f.contentDeletes)
	}
}

func TestTerminatorsAreCopiedAndMarked(t *testing.T) {
	lc := &corev1alpha1.LogicalCluster{Spec: corev1alpha1.LogicalClusterSpec{Terminators: []corev1alpha1.LogicalClusterTerminator{"root:a"}}}
	if !startTerminators(lc) || !slices.Equal(lc.Status.Terminators, lc.Spec.Terminators) {
		t.Fatalf("status terminators %v, want the spec's", lc.Status.Terminators)
	}
	lc.Status.Terminators[0] = "changed:changed"
	if lc.Spec.Terminators[0] != "root:a" {
		t.Errorf("status shares its terminators with the spec")
	}
	if startTerminators(lc) {
		t.Errorf("copied terminators twice")
	}
	if !markTerminators(lc) || !slices.Contains(lc.Finalizers, corev1alpha1.LogicalClusterHasTerminatorsFinalizer) {
		t.Fatalf("finalizers %v, want %s", lc.Finalizers, corev1alpha1.LogicalClusterHasTerminatorsFinalizer)
	}
	if markTerminators(lc) {
		t.Errorf("marked twice")
	}
	lc.Status.Terminators = nil
	if !markTerminators(lc) || len(lc.Finalizers) != 0 {
		t.Errorf("finalizers %v, want none once the terminators are gone", lc.Finalizers)
	}
}

// TestDeletionWritesFinalizersInProcessWhenGivenTheMeans: with
// an InProcess client, the write that lets an emptied cluster go is made
// in-process, not through the API, and a reconcile of a copy older than it
// is skipped.
func TestDeletionWritesFinalizersInProcessWhenGivenTheMeans(t *testing.T) {
	f := &fakeDeletion{}
	c := &Controller{deletion: f.reconciler()}
	c.deletion.update = func(context.Context, logicalcluster.Name, *corev1alpha1.LogicalCluster) error {
		t.Error("the finalizer removal went through the API")
		return nil
	}
	var inProcess []*corev1alpha1.LogicalCluster
	c.useInProcess(fakeInProcess{update: func(_ context.Context, _ logicalcluster.Name, lc *corev1alpha1.LogicalCluster) (*corev1alpha1.LogicalCluster, error) {
		inProcess = append(inProcess, lc.DeepCopy())
		stored := lc.DeepCopy()
		stored.ResourceVersion = "11"
		return stored, nil
	}}, nil)
	lc := deletingCluster()
	lc.ResourceVersion = "10"
	if err := c.deletion.reconcile(context.Background(), "abc", lc); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if len(inProcess) != 1 || slices.Contains(inProcess[0].Finalizers, corev1alpha1.LogicalClusterDeletionFinalizer) {
		t.Fatalf("in-process writes %+v, want one that drops the deletion finalizer", inProcess)
	}
	if !slices.Equal(f.releasedNames, []logicalcluster.Name{"abc"}) {
		t.Errorf("released %v, want abc", f.releasedNames)
	}
	if !c.written.Stale(wildcardinformer.Key("abc", "", corev1alpha1.LogicalClusterName), "10") {
		t.Error("a copy older than the in-process write is not skipped")
	}
}
