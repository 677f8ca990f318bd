package workspace

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// fakeWorkspaceDeletion serves one LogicalCluster (nil: gone) and records
// writes.
type fakeWorkspaceDeletion struct {
	lc           *corev1alpha1.LogicalCluster
	deleted      int
	statusWrites []*tenancyv1alpha1.Workspace
	updates      []*tenancyv1alpha1.Workspace
}

func (f *fakeWorkspaceDeletion) reconciler() *deletionReconciler {
	return &deletionReconciler{
		getLogicalCluster: func(context.Context, *tenancyv1alpha1.Workspace) (*corev1alpha1.LogicalCluster, error) {
			if f.lc == nil {
				return nil, apierrors.NewNotFound(corev1alpha1.Resource("logicalclusters"), "cluster")
			}
			return f.lc, nil
		},
		deleteLogicalCluster: func(context.Context, *tenancyv1alpha1.Workspace) error { f.deleted++; return nil },
		updateStatus: func(_ context.Context, _ logicalcluster.Name, ws *tenancyv1alpha1.Workspace) (*tenancyv1alpha1.Workspace, error) {
			f.statusWrites = append(f.statusWrites, ws.DeepCopy())
			return ws.DeepCopy(), nil
		},
		update: func(_ context.Context, _ logicalcluster.Name, ws *tenancyv1alpha1.Workspace) error {
			f.updates = append(f.updates, ws.DeepCopy())
			return nil
		},
		remote: func(*tenancyv1alpha1.Workspace) bool { return false },
	}
}

func deletedWorkspace() *tenancyv1alpha1.Workspace {
	now := metav1.Now()
	return &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: "doomed", DeletionTimestamp: &now, Finalizers: []string{tenancyv1alpha1.LogicalClusterFinalizer}},
		Spec:       tenancyv1alpha1.WorkspaceSpec{Cluster: "abc"},
		Status:     tenancyv1alpha1.WorkspaceStatus{Phase: corev1alpha1.LogicalClusterPhaseReady},
	}
}

func TestDeletedWorkspaceMirrorsWhatHoldsItsContent(t *testing.T) {
	now := metav1.Now()
	held := conditionsv1alpha1.Condition{
		Type: tenancyv1alpha1.WorkspaceContentDeleted, Status: corev1.ConditionFalse, Severity: conditionsv1alpha1.ConditionSeverityInfo,
		Reason:  tenancyv1alpha1.WorkspaceContentDeletedSomeResourcesRemain,
		Message: "Some resources are remaining: configmaps has 1 resource instances; Some content in the workspace has finalizers remaining: example.com/hold in 1 resource instances",
	}
	f := &fakeWorkspaceDeletion{lc: &corev1alpha1.LogicalCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster", DeletionTimestamp: &now},
		Status:     corev1alpha1.LogicalClusterStatus{Phase: corev1alpha1.LogicalClusterPhaseDeleting, Conditions: conditionsv1alpha1.Conditions{held}},
	}}
	if err := f.reconciler().reconcile(context.Background(), "root", deletedWorkspace()); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if f.deleted != 0 {
		t.Errorf("deleted a LogicalCluster that is being deleted already")
	}
	if len(f.statusWrites) != 1 || len(f.updates) != 0 {
		t.Fatalf("%d status writes and %d updates, want one status write", len(f.statusWrites), len(f.updates))
	}
	ws := f.statusWrites[0]
	if ws.Status.Phase != corev1alpha1.LogicalClusterPhaseTerminating {
		t.Errorf("phase %q, want Terminating", ws.Status.Phase)
	}
	if c := ws.Status.Conditions.Get(tenancyv1alpha1.WorkspaceContentDeleted); c == nil || c.Status != corev1.ConditionFalse || c.Reason != held.Reason || c.Message != held.Message {
		t.Errorf("condition %+v, want %+v", c, held)
	}
}

func TestWorkspaceDeletionDeletesTheLogicalClusterFirst(t *testing.T) {
	f := &fakeWorkspaceDeletion{lc: &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}}
	if err := f.reconciler().reconcile(context.Background(), "root", deletedWorkspace()); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if f.deleted != 1 {
		t.Errorf("LogicalCluster deleted %d times, want 1", f.deleted)
	}
	if len(f.updates) != 0 {
		t.Errorf("released the workspace while its LogicalCluster exists")
	}
	// Terminating while the LogicalCluster exists, as kcp shows it.
	if len(f.statusWrites) != 1 || f.statusWrites[0].Status.Phase != corev1alpha1.LogicalClusterPhaseTerminating {
		t.Errorf("status writes %+v, want one to phase Terminating", f.statusWrites)
	}
}

func TestDeletedWorkspaceIsTerminatingWhileItsClusterTerminates(t *testing.T) {
	now := metav1.Now()
	f := &fakeWorkspaceDeletion{lc: &corev1alpha1.LogicalCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster", DeletionTimestamp: &now},
		Status: corev1alpha1.LogicalClusterStatus{Phase: corev1alpha1.LogicalClusterPhaseTerminating,
			Terminators: []corev1alpha1.LogicalClusterTerminator{"root:cleanup"}},
	}}
	if err := f.reconciler().reconcile(context.Background(), "root", deletedWorkspace()); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if len(f.statusWrites) != 1 || f.statusWrites[0].Status.Phase != corev1alpha1.LogicalClusterPhaseTerminating {
		t.Fatalf("status writes %+v, want one to phase Terminating", f.statusWrites)
	}
}

func TestWorkspaceWhoseClusterWentQuietlyIsReleasedInOneWrite(t *testing.T) {
	f := &fakeWorkspaceDeletion{}
	if err := f.reconciler().reconcile(context.Background(), "root", deletedWorkspace()); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if len(f.statusWrites) != 0 {
		t.Errorf("%d status writes, want none: nobody saw WorkspaceContentDeleted False and the workspace goes", len(f.statusWrites))
	}
	if len(f.updates) != 1 || len(f.updates[0].Finalizers) != 0 {
		t.Errorf("updates %+v, want one that drops the finalizer", f.updates)
	}
}

func TestWorkspaceWithoutPlacementLooksForItsClusterAnyway(t *testing.T) {
	// reconcileScheduling creates a LogicalCluster on this shard before it
	// records the placement: a workspace deleted in between still has one.
	f := &fakeWorkspaceDeletion{lc: &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}}
	ws := deletedWorkspace()
	ws.Spec.Cluster = ""
	if err := f.reconciler().reconcile(context.Background(), "root", ws); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if f.deleted != 1 || len(f.updates) != 0 {
		t.Errorf("deleted %d, updates %d: want the LogicalCluster deleted and the workspace kept", f.deleted, len(f.updates))
	}
}

func TestWorkspaceIsReleasedWithContentDeletedTrueOnceItsClusterIsGone(t *testing.T) {
	f := &fakeWorkspaceDeletion{}
	ws := deletedWorkspace()
	// Held content was reported, and another finalizer keeps the workspace.
	conditionsv1alpha1.Set(ws, conditionsv1alpha1.Condition{Type: tenancyv1alpha1.WorkspaceContentDeleted, Status: corev1.ConditionFalse})
	ws.Finalizers = append(ws.Finalizers, "example.com/mine")
	if err := f.reconciler().reconcile(context.Background(), "root", ws); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if len(f.statusWrites) != 1 || !f.statusWrites[0].Status.Conditions.IsTrue(tenancyv1alpha1.WorkspaceContentDeleted) {
		t.Fatalf("status writes %+v, want one with WorkspaceContentDeleted=True", f.statusWrites)
	}
	if len(f.updates) != 1 || slices.Contains(f.updates[0].Finalizers, tenancyv1alpha1.LogicalClusterFinalizer) ||
		!slices.Contains(f.updates[0].Finalizers, "example.com/mine") {
		t.Fatalf("updates %+v, want one that drops only %s", f.updates, tenancyv1alpha1.LogicalClusterFinalizer)
	}
	if !f.updates[0].Status.Conditions.IsTrue(tenancyv1alpha1.WorkspaceContentDeleted) {
		t.Errorf("finalizer removed from a workspace read before its status write")
	}
}

// TestLogicalClusterOnThisShardIsDeletedInProcess: the LogicalCluster of
// a deleted workspace on this shard (or not yet placed, whose cluster this
// shard may have created) is deleted in-process, one already gone is no
// error, and one on another shard is deleted through that shard's client.
func TestLogicalClusterOnThisShardIsDeletedInProcess(t *testing.T) {
	errRemote := errors.New("through the shard's client")
	var local []logicalcluster.Name
	gone := false
	c := &Controller{
		shardName: "root",
		shards: staticShards{
			{ObjectMeta: metav1.ObjectMeta{Name: "root"}},
			{ObjectMeta: metav1.ObjectMeta{Name: "beta"}},
		},
		deleteLocalLogicalCluster: func(_ context.Context, cluster logicalcluster.Name) error {
			local = append(local, cluster)
			if gone {
				return apierrors.NewNotFound(corev1alpha1.Resource("logicalclusters"), corev1alpha1.LogicalClusterName)
			}
			return nil
		},
		shardClient: func(*corev1alpha1.Shard) (*kcpclient.Client, error) { return nil, errRemote },
	}
	onShard := func(shard string) *tenancyv1alpha1.Workspace {
		ws := deletedWorkspace()
		setScheduledAnnotations(ws, shard, "abc")
		return ws
	}
	unplaced := deletedWorkspace()
	unplaced.UID, unplaced.Spec.Cluster = "uid-1", ""

	if err := c.deleteLogicalCluster(context.Background(), onShard("root")); err != nil {
		t.Fatalf("on this shard: %v", err)
	}
	if err := c.deleteLogicalCluster(context.Background(), unplaced); err != nil {
		t.Fatalf("not placed: %v", err)
	}
	gone = true
	if err := c.deleteLogicalCluster(context.Background(), onShard("root")); err != nil {
		t.Errorf("already gone: %v, want no error", err)
	}
	if want := []logicalcluster.Name{"abc", ClusterName("uid-1"), "abc"}; !slices.Equal(local, want) {
		t.Errorf("deleted in-process %q, want %q", local, want)
	}

	if err := c.deleteLogicalCluster(context.Background(), onShard("beta")); !errors.Is(err, errRemote) {
		t.Errorf("on another shard: %v, want the shard's client used", err)
	}
	if len(local) != 3 {
		t.Errorf("deleted in-process on another shard: %q", local)
	}

	// Without the means, this shard is reached through its client too.
	c.deleteLocalLogicalCluster = nil
	if err := c.deleteLogicalCluster(context.Background(), onShard("root")); !errors.Is(err, errRemote) {
		t.Errorf("without deleteLocalLogicalCluster: %v, want the shard's client used", err)
	}
}

func TestDeletedWorkspaceWaitsForTheMoveOfItsCluster(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lc     *corev1alpha1.LogicalCluster
		moving string
		want   string
	}{
		{name: "cut-over running", lc: &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}, moving: "root:org:move", want: "root:org:move"},
		{name: "cleaned from the origin, workspace not repointed yet", moving: "root:org:move", want: "root:org:move"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeWorkspaceDeletion{lc: tc.lc}
			r := f.reconciler()
			r.moving = func(*tenancyv1alpha1.Workspace, bool) string { return tc.moving }
			err := r.reconcile(context.Background(), "root", deletedWorkspace())
			var requeue loop.RequeueAfter
			if !errors.As(err, &requeue) {
				t.Fatalf("reconcile returned %v, want a requeue", err)
			}
			if f.deleted != 0 || len(f.updates) != 0 {
				t.Fatalf("deleted %d LogicalClusters and wrote %d finalizer updates mid-move, want none", f.deleted, len(f.updates))
			}
			if len(f.statusWrites) != 1 {
				t.Fatalf("%d status writes, want 1", len(f.statusWrites))
			}
			c := f.statusWrites[0].Status.Conditions.Get(tenancyv1alpha1.WorkspaceContentDeleted)
			if c == nil || c.Status != corev1.ConditionFalse || c.Reason != ReasonLogicalClusterMoving || !strings.Contains(c.Message, tc.want) {
				t.Errorf("WorkspaceContentDeleted = %+v, want False %s naming %s", c, ReasonLogicalClusterMoving, tc.want)
			}
		})
	}
}

func TestDeletedWorkspaceIsDeletedWhenNoMoveRuns(t *testing.T) {
	f := &fakeWorkspaceDeletion{lc: &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}}
	r := f.reconciler()
	r.moving = func(*tenancyv1alpha1.Workspace, bool) string { return "" }
	if err := r.reconcile(context.Background(), "root", deletedWorkspace()); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if f.deleted != 1 {
		t.Errorf("deleted %d LogicalClusters, want 1", f.deleted)
	}
}
