package admissionpolicystatus

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	applyv1 "k8s.io/client-go/applyconfigurations/admissionregistration/v1"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

func TestReconcileWritesTypeCheckingOncePerGenerationInThePolicysCluster(t *testing.T) {
	warning := admissionregistrationv1.ExpressionWarning{FieldRef: "spec.validations[0].expression", Warning: "undefined field 'spec'"}
	for _, tc := range []struct {
		name      string
		policy    *admissionregistrationv1.ValidatingAdmissionPolicy
		wantApply bool
	}{
		{name: "gone"},
		{
			name:      "new generation",
			policy:    &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 2}, Status: admissionregistrationv1.ValidatingAdmissionPolicyStatus{ObservedGeneration: 1}},
			wantApply: true,
		},
		{
			name:   "already observed",
			policy: &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 2}, Status: admissionregistrationv1.ValidatingAdmissionPolicyStatus{ObservedGeneration: 2}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var checkedIn, appliedIn logicalcluster.Name
			var applied *applyv1.ValidatingAdmissionPolicyApplyConfiguration
			r := reconciler{
				getPolicy: func(cluster logicalcluster.Name, name string) (*admissionregistrationv1.ValidatingAdmissionPolicy, error) {
					if cluster != "a" || name != "p" {
						t.Errorf("read policy %s|%s, want a|p", cluster, name)
					}
					return tc.policy, nil
				},
				typeCheck: func(cluster logicalcluster.Name, _ *admissionregistrationv1.ValidatingAdmissionPolicy) ([]admissionregistrationv1.ExpressionWarning, error) {
					checkedIn = cluster
					return []admissionregistrationv1.ExpressionWarning{warning}, nil
				},
				applyStatus: func(_ context.Context, cluster logicalcluster.Name, status *applyv1.ValidatingAdmissionPolicyApplyConfiguration) error {
					appliedIn, applied = cluster, status
					return nil
				},
			}
			if err := r.reconcile(context.Background(), wildcardinformer.Key("a", "", "p")); err != nil {
				t.Fatal(err)
			}
			if !tc.wantApply {
				if applied != nil {
					t.Fatalf("applied status %+v, want none", applied)
				}
				return
			}
			if checkedIn != "a" || appliedIn != "a" {
				t.Fatalf("type-checked in %q and applied in %q, want the policy's cluster a", checkedIn, appliedIn)
			}
			st := applied.Status
			if *applied.Name != "p" || *st.ObservedGeneration != 2 || len(st.TypeChecking.ExpressionWarnings) != 1 ||
				*st.TypeChecking.ExpressionWarnings[0].Warning != warning.Warning {
				t.Errorf("applied %+v, want observedGeneration 2 and the warning", applied)
			}
		})
	}
}
