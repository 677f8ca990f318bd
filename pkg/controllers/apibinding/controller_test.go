package apibinding

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/permissionclaim"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// A bound binding is written once; reconciling what was written changes
// nothing, so status writes do not feed back into more writes.
func TestReconcileWritesStatusOnceAndSummarizesReady(t *testing.T) {
	w := happyWorld()
	stored := newBinding("b", "root:provider", "widgets")
	writes := 0
	c := &Controller{
		getAPIBinding: func(logicalcluster.Name, string) (*apisv1alpha2.APIBinding, error) { return stored, nil },
		updateStatus: func(_ context.Context, _ logicalcluster.Name, b *apisv1alpha2.APIBinding) error {
			writes++
			stored = b.DeepCopy()
			return nil
		},
		binding: w.reconciler(),
		claims:  &permissionClaimsReconciler{},
	}
	key := wildcardinformer.Key(consumer, "", "b")
	// A claim lasts until the binding's written status is seen.
	for i := 0; i < 3; i++ {
		if err := c.reconcile(context.Background(), key); err != nil {
			t.Fatal(err)
		}
	}
	if writes != 1 {
		t.Errorf("%d status writes, want 1", writes)
	}
	if claim, ok := c.binding.recent.get(consumer, "b"); ok {
		t.Errorf("claim %+v kept after its status was seen", claim)
	}
	if stored.Status.Phase != apisv1alpha2.APIBindingPhaseBound {
		t.Errorf("phase %q", stored.Status.Phase)
	}
	if ready := stored.Status.Conditions.Get(conditionsv1alpha1.ReadyCondition); ready == nil || ready.Status != corev1.ConditionTrue {
		t.Errorf("Ready = %+v", ready)
	}
}

// A gone binding releases what it had bound in memory.
func TestReconcileOfDeletedBindingForgetsItsClaim(t *testing.T) {
	w := happyWorld()
	r := w.reconciler()
	r.recent.record(consumer, "b", provider, []apisv1alpha2.BoundAPIResource{{Group: "example.io", Resource: "widgets"}})
	c := &Controller{
		getAPIBinding: func(logicalcluster.Name, string) (*apisv1alpha2.APIBinding, error) { return nil, nil },
		binding:       r,
		claims:        &permissionClaimsReconciler{},
	}
	if err := c.reconcile(context.Background(), wildcardinformer.Key(consumer, "", "b")); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.recent.get(consumer, "b"); ok {
		t.Error("claim of a deleted binding kept")
	}
}

// A binding written before admission set kcp's export label is written
// again (admission then sets it); one that has it is left alone.
func TestReconcileTouchesABindingWithoutTheExportLabel(t *testing.T) {
	w := happyWorld()
	stored := newBinding("b", "root:provider", "widgets")
	touches := 0
	c := &Controller{
		getAPIBinding: func(logicalcluster.Name, string) (*apisv1alpha2.APIBinding, error) { return stored, nil },
		updateStatus: func(_ context.Context, _ logicalcluster.Name, b *apisv1alpha2.APIBinding) error {
			// A status write keeps the stored metadata.
			labels := stored.Labels
			stored = b.DeepCopy()
			stored.Labels = labels
			return nil
		},
		touch: func(context.Context, logicalcluster.Name, string) error {
			touches++
			stored = stored.DeepCopy()
			if stored.Labels == nil {
				stored.Labels = map[string]string{}
			}
			stored.Labels[permissionclaim.ExportLabelKey] = permissionclaim.ExportLabelValue(provider, stored.Spec.Reference.Export.Name)
			return nil
		},
		binding: w.reconciler(),
		claims:  &permissionClaimsReconciler{},
	}
	key := wildcardinformer.Key(consumer, "", "b")
	for i := 0; i < 3; i++ {
		if err := c.reconcile(context.Background(), key); err != nil {
			t.Fatal(err)
		}
	}
	if touches != 1 {
		t.Errorf("%d touches, want 1", touches)
	}
}
