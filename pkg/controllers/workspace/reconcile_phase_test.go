package workspace

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
)

func TestWorkspaceMirrorsItsClusterPhaseOnceItLeavesScheduling(t *testing.T) {
	lcIn := func(phase corev1alpha1.LogicalClusterPhaseType, initializers ...corev1alpha1.LogicalClusterInitializer) *corev1alpha1.LogicalCluster {
		return &corev1alpha1.LogicalCluster{Status: corev1alpha1.LogicalClusterStatus{Phase: phase, Initializers: initializers}}
	}
	tests := []struct {
		name      string
		wsPhase   corev1alpha1.LogicalClusterPhaseType
		lc        *corev1alpha1.LogicalCluster
		want      phaseAction
		wantPhase corev1alpha1.LogicalClusterPhaseType
	}{
		{"cluster not seen yet", corev1alpha1.LogicalClusterPhaseScheduling, nil, phaseAwaitCluster, corev1alpha1.LogicalClusterPhaseScheduling},
		{"cluster being bootstrapped: no write", corev1alpha1.LogicalClusterPhaseScheduling, lcIn(corev1alpha1.LogicalClusterPhaseScheduling), phaseUnchanged, corev1alpha1.LogicalClusterPhaseScheduling},
		{"cluster created without a phase: no write", corev1alpha1.LogicalClusterPhaseScheduling, lcIn(""), phaseUnchanged, corev1alpha1.LogicalClusterPhaseScheduling},
		{"initializing", corev1alpha1.LogicalClusterPhaseScheduling, lcIn(corev1alpha1.LogicalClusterPhaseInitializing, "system:apibindings"), phaseWrite, corev1alpha1.LogicalClusterPhaseInitializing},
		{"ready straight from scheduling", corev1alpha1.LogicalClusterPhaseScheduling, lcIn(corev1alpha1.LogicalClusterPhaseReady), phaseWrite, corev1alpha1.LogicalClusterPhaseReady},
		{"cluster gone", corev1alpha1.LogicalClusterPhaseReady, nil, phaseWrite, corev1alpha1.LogicalClusterPhaseUnavailable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := &tenancyv1alpha1.Workspace{Status: tenancyv1alpha1.WorkspaceStatus{Phase: tc.wsPhase}}
			if got := mirrorPhase(ws, tc.lc, time.Now()); got != tc.want {
				t.Fatalf("mirrorPhase = %v, want %v", got, tc.want)
			}
			if ws.Status.Phase != tc.wantPhase {
				t.Errorf("phase %q, want %q", ws.Status.Phase, tc.wantPhase)
			}
			if tc.want == phaseWrite && !ws.Status.Conditions.IsTrue(tenancyv1alpha1.WorkspaceScheduled) {
				t.Errorf("written without WorkspaceScheduled=True")
			}
		})
	}

	// Written once, the same cluster state asks for nothing more.
	ws := &tenancyv1alpha1.Workspace{Status: tenancyv1alpha1.WorkspaceStatus{Phase: corev1alpha1.LogicalClusterPhaseScheduling}}
	ready := lcIn(corev1alpha1.LogicalClusterPhaseReady)
	mirrorPhase(ws, ready, time.Now())
	if got := mirrorPhase(ws, ready, time.Now()); got != phaseUnchanged {
		t.Errorf("second mirror = %v, want unchanged", got)
	}
	if c := ws.Status.Conditions.Get(tenancyv1alpha1.WorkspaceInitialized); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("WorkspaceInitialized %+v, want True", c)
	}
}

func TestWorkspaceStaysSchedulingBrieflyWhileItsClusterWaitsOnlyForItsDefaultBindings(t *testing.T) {
	now := time.Now()
	lcIn := func(age time.Duration, initializers ...corev1alpha1.LogicalClusterInitializer) *corev1alpha1.LogicalCluster {
		return &corev1alpha1.LogicalCluster{
			ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-age))},
			Status:     corev1alpha1.LogicalClusterStatus{Phase: corev1alpha1.LogicalClusterPhaseInitializing, Initializers: initializers},
		}
	}
	tests := []struct {
		name string
		lc   *corev1alpha1.LogicalCluster
		want phaseAction
	}{
		{"new cluster waiting for its default bindings: no write yet", lcIn(100*time.Millisecond, tenancyv1alpha1.WorkspaceAPIBindingsInitializer), phaseAwaitBindings},
		{"bindings taking longer: Initializing is written", lcIn(bindingsGrace, tenancyv1alpha1.WorkspaceAPIBindingsInitializer), phaseWrite},
		{"another initializer: Initializing is written at once", lcIn(100*time.Millisecond, "root:org:custom"), phaseWrite},
		{"another initializer beside the bindings: written at once", lcIn(100*time.Millisecond, "root:org:custom", tenancyv1alpha1.WorkspaceAPIBindingsInitializer), phaseWrite},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := &tenancyv1alpha1.Workspace{Status: tenancyv1alpha1.WorkspaceStatus{Phase: corev1alpha1.LogicalClusterPhaseScheduling}}
			if got := mirrorPhase(ws, tc.lc, now); got != tc.want {
				t.Fatalf("mirrorPhase = %v, want %v", got, tc.want)
			}
			wantPhase := corev1alpha1.LogicalClusterPhaseInitializing
			if tc.want == phaseAwaitBindings {
				wantPhase = corev1alpha1.LogicalClusterPhaseScheduling
			}
			if ws.Status.Phase != wantPhase {
				t.Errorf("phase %q, want %q", ws.Status.Phase, wantPhase)
			}
		})
	}
	// Once the bindings are bound the cluster is Ready, and the workspace
	// goes there in one write.
	ws := &tenancyv1alpha1.Workspace{Status: tenancyv1alpha1.WorkspaceStatus{Phase: corev1alpha1.LogicalClusterPhaseScheduling}}
	ready := lcIn(200 * time.Millisecond)
	ready.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
	if got := mirrorPhase(ws, ready, now); got != phaseWrite || ws.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
		t.Fatalf("mirrorPhase of a Ready cluster = %v, phase %q; want a write of Ready", got, ws.Status.Phase)
	}
}
