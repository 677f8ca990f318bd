package workspacemount

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
)

func mountObject(status map[string]interface{}) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "contrib.kcp.io/v1alpha1", "kind": "KubeCluster", "metadata": map[string]interface{}{"name": "proxy-cluster"}}}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

// kcp's workspaceStatusUpdater and workspaceSpecUpdater, with the phase
// its phase reconciler derives from a false Workspace* condition.
func TestObserveShowsTheMountObjectOnTheWorkspace(t *testing.T) {
	const url = "https://127.0.0.1:9443/clusters/root:dest"
	for _, tc := range []struct {
		name       string
		mount      *unstructured.Unstructured
		status     corev1.ConditionStatus
		reason     string
		message    string
		phase      corev1alpha1.LogicalClusterPhaseType
		wantURL    string
		initialURL string
	}{
		{"not found", nil, corev1.ConditionFalse, tenancyv1alpha1.MountObjectNotFoundReason, `KubeCluster "/proxy-cluster" not found`, corev1alpha1.LogicalClusterPhaseUnavailable, "", ""},
		{"no status", mountObject(nil), corev1.ConditionFalse, tenancyv1alpha1.MountObjectNotReadyReason,
			`Mount is not reporting ready. See KubeCluster "proxy-cluster" status for more details`, corev1alpha1.LogicalClusterPhaseUnavailable, "", ""},
		{"ready", mountObject(map[string]interface{}{"URL": url, "phase": "Ready"}), corev1.ConditionTrue, "", "", corev1alpha1.LogicalClusterPhaseReady, url, ""},
		{"connecting keeps the URL", mountObject(map[string]interface{}{"URL": url, "phase": "Connecting"}), corev1.ConditionFalse, tenancyv1alpha1.MountObjectNotReadyReason,
			`Mount is not reporting ready. See KubeCluster "proxy-cluster" status for more details`, corev1alpha1.LogicalClusterPhaseUnavailable, url, url},
		{"deleted keeps the last URL", nil, corev1.ConditionFalse, tenancyv1alpha1.MountObjectNotFoundReason, `KubeCluster "/proxy-cluster" not found`, corev1alpha1.LogicalClusterPhaseUnavailable, url, url},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := &tenancyv1alpha1.Workspace{Spec: tenancyv1alpha1.WorkspaceSpec{URL: tc.initialURL, Mount: &tenancyv1alpha1.Mount{
				Reference: tenancyv1alpha1.ObjectReference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "proxy-cluster"}}}}
			ws.Status.Phase = corev1alpha1.LogicalClusterPhaseScheduling
			observe(ws, tc.mount)
			c := ws.Status.Conditions.Get(tenancyv1alpha1.MountConditionReady)
			if c == nil || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message {
				t.Errorf("condition %+v, want %s %q %q", c, tc.status, tc.reason, tc.message)
			}
			if ws.Status.Phase != tc.phase || ws.Spec.URL != tc.wantURL {
				t.Errorf("phase %s URL %q, want %s %q", ws.Status.Phase, ws.Spec.URL, tc.phase, tc.wantURL)
			}
		})
	}
}

func TestRefResourceIsKcpsGuess(t *testing.T) {
	gvr := refResource(tenancyv1alpha1.ObjectReference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster"})
	if gvr.Group != "contrib.kcp.io" || gvr.Version != "v1alpha1" || gvr.Resource != "kubeclusters" {
		t.Errorf("refResource = %v", gvr)
	}
}
