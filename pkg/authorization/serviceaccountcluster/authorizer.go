// Package serviceaccountcluster denies service accounts every request outside
// the logical cluster their token was issued in.
package serviceaccountcluster

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/kplane-dev/kplane/pkg/authentication/serviceaccount"
	"github.com/kplane-dev/kplane/pkg/logicalcluster"
)

// Authorizer denies a service account user whose cluster (the
// authentication.kcp.io/cluster-name extra) is not the request's cluster,
// and has no opinion otherwise.
type Authorizer struct{}

// Authorize implements authorizer.Authorizer.
func (Authorizer) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	home, ok := serviceaccount.ClusterOf(a.GetUser())
	if !ok {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if cluster, ok := logicalcluster.ClusterFromContext(ctx); ok && cluster == home {
		return authorizer.DecisionNoOpinion, "", nil
	}
	return authorizer.DecisionDeny, fmt.Sprintf("service accounts of logical cluster %q act only in that cluster", home), nil
}

// ConditionsAwareAuthorize converts the unconditional decision.
func (a Authorizer) ConditionsAwareAuthorize(ctx context.Context, attr authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attr))
}

// EvaluateConditions is not supported.
func (Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}
