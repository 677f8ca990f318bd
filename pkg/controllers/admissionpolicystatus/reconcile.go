package admissionpolicystatus

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	applyv1 "k8s.io/client-go/applyconfigurations/admissionregistration/v1"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// reconciler writes the type-checking result of a policy generation once.
type reconciler struct {
	getPolicy   func(cluster logicalcluster.Name, name string) (*admissionregistrationv1.ValidatingAdmissionPolicy, error)
	typeCheck   func(cluster logicalcluster.Name, policy *admissionregistrationv1.ValidatingAdmissionPolicy) ([]admissionregistrationv1.ExpressionWarning, error)
	applyStatus func(ctx context.Context, cluster logicalcluster.Name, status *applyv1.ValidatingAdmissionPolicyApplyConfiguration) error
}

func (r reconciler) reconcile(ctx context.Context, key string) error {
	cluster, _, name, ok := wildcardinformer.SplitKey(key)
	if !ok {
		return nil
	}
	policy, err := r.getPolicy(cluster, name)
	if err != nil || policy == nil {
		return err
	}
	if policy.Generation <= policy.Status.ObservedGeneration {
		return nil
	}
	warnings, err := r.typeCheck(cluster, policy)
	if err != nil {
		return fmt.Errorf("type-check policy %s of logical cluster %s: %w", name, cluster, err)
	}
	return r.applyStatus(ctx, cluster, statusOf(policy, warnings))
}

// statusOf is the status apply configuration upstream's controller writes.
func statusOf(policy *admissionregistrationv1.ValidatingAdmissionPolicy, warnings []admissionregistrationv1.ExpressionWarning) *applyv1.ValidatingAdmissionPolicyApplyConfiguration {
	configs := make([]*applyv1.ExpressionWarningApplyConfiguration, 0, len(warnings))
	for _, w := range warnings {
		configs = append(configs, applyv1.ExpressionWarning().WithFieldRef(w.FieldRef).WithWarning(w.Warning))
	}
	return applyv1.ValidatingAdmissionPolicy(policy.Name).
		WithStatus(applyv1.ValidatingAdmissionPolicyStatus().
			WithObservedGeneration(policy.Generation).
			WithTypeChecking(applyv1.TypeChecking().WithExpressionWarnings(configs...)))
}
