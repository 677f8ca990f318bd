package workspacetype

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func controllerFor(wt *tenancyv1alpha1.WorkspaceType, written *[]*tenancyv1alpha1.WorkspaceType) *Controller {
	return &Controller{
		getWorkspaceType: func(logicalcluster.Name, string) (*tenancyv1alpha1.WorkspaceType, error) { return wt, nil },
		updateStatus: func(_ context.Context, _ logicalcluster.Name, wt *tenancyv1alpha1.WorkspaceType) error {
			*written = append(*written, wt.DeepCopy())
			return nil
		},
		steps: []step{readyReconciler{}},
	}
}

func TestEveryWorkspaceTypeBecomesReady(t *testing.T) {
	wt := &tenancyv1alpha1.WorkspaceType{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	var written []*tenancyv1alpha1.WorkspaceType
	if err := controllerFor(wt, &written).reconcile(context.Background(), "root|team"); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if len(written) != 1 {
		t.Fatalf("%d status writes, want 1", len(written))
	}
	if c := written[0].Status.Conditions.Get(conditionsv1alpha1.ReadyCondition); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("condition Ready = %+v, want True", c)
	}
	if len(wt.Status.Conditions) != 0 {
		t.Errorf("reconcile changed the informer's object")
	}

	// Ready already: nothing to write.
	written = nil
	if err := controllerFor(readyCopy(t, wt), &written).reconcile(context.Background(), "root|team"); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	if len(written) != 0 {
		t.Errorf("rewrote the status of a Ready type")
	}
}

// readyCopy returns wt as Ready, as stored after the first reconcile.
func readyCopy(t *testing.T, wt *tenancyv1alpha1.WorkspaceType) *tenancyv1alpha1.WorkspaceType {
	t.Helper()
	ready := wt.DeepCopy()
	readyReconciler{}.reconcile(ready)
	return ready
}
