// Package authorization assembles the shard's authorizer chain: first
// decision wins.
package authorization

import (
	"context"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/union"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	"github.com/shardplane/shardplane/pkg/authorization/impersonation"
	"github.com/shardplane/shardplane/pkg/authorization/warrants"
	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// RBAC is what the chain needs of the per-cluster RBAC authorizer: its
// rules, and kcp's three steps (bootstrap policy, the cluster's own RBAC,
// replicated RBAC), which the chain runs in order.
type RBAC interface {
	authorizer.RuleResolver
	Steps() (bootstrap, local, global authorizer.Authorizer)
}

// NewChain returns the authorizer and rule resolver: system:masters, the
// impersonation gatekeeper, the wildcard guard, the guard of the system's
// status of APIExports and APIBindings, the workspace content
// authorizer (may the user enter the logical cluster at all), the maximal
// permission policy of bound APIs (an upper bound, binding system:kcp:admin
// too, as in kcp), then kcp's RBAC steps: the bootstrap policy (with
// system:kcp:admin, which kcp's bootstrap policy binds to cluster-admin),
// the cluster's own RBAC and replicated RBAC.
// Scopes and warrants are evaluated around all of them: an identity counts
// as itself only where it is in scope (elsewhere, service accounts of other
// clusters included, as a plain authenticated user), and a request is
// allowed when the identity or one of its warrants is. The rule resolver
// knows no maximal permission policies (nor does kcp's): it may report
// rules on bound resources broader than the authorizer allows. When the
// request is audited, each step's decision is annotated under kcp's keys
// (audit.go).
func NewChain(content, maxPermission authorizer.Authorizer, rbac RBAC) (authorizer.Authorizer, authorizer.RuleResolver, error) {
	masters := authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)
	admins := authorizerfactory.NewPrivilegedGroups(identities.KCPAdminGroup)
	bootstrapRBAC, localRBAC, globalRBAC := rbac.Steps()
	bootstrap, err := union.New(
		union.NamedAuthorizer{AuthorizerName: "kcp-admin", Authorizer: admins},
		union.NamedAuthorizer{AuthorizerName: "bootstrap-policy", Authorizer: bootstrapRBAC})
	if err != nil {
		return nil, nil, err
	}
	steps := []union.NamedAuthorizer{
		{AuthorizerName: "system-masters", Authorizer: masters},
		{AuthorizerName: "impersonation-gatekeeper", Authorizer: impersonation.Authorizer{}},
		{AuthorizerName: "wildcard-guard", Authorizer: wildcardGuard{}},
		{AuthorizerName: "system-crd", Authorizer: systemStatus{}},
		{AuthorizerName: "workspace-content", Authorizer: content},
		{AuthorizerName: "maximal-permission-policy", Authorizer: maxPermission},
		{AuthorizerName: "bootstrap", Authorizer: bootstrap},
		{AuthorizerName: "local", Authorizer: localRBAC},
		{AuthorizerName: "global", Authorizer: globalRBAC},
	}
	for i, s := range steps {
		if step, ok := auditSteps[s.AuthorizerName]; ok {
			steps[i].Authorizer = auditedStep{step: step, Authorizer: s.Authorizer}
		}
	}
	authz, err := union.New(steps...)
	if err != nil {
		return nil, nil, err
	}
	resolver := union.NewRuleResolvers(privilegedRules{user.SystemPrivilegedGroup, identities.KCPAdminGroup}, rbac)
	return withAuditAnnotations(warrants.New(authz)), warrants.NewRuleResolver(resolver), nil
}

// wildcardGuard denies cross-cluster requests to everyone who got past the
// system:masters check.
type wildcardGuard struct{}

func (wildcardGuard) Authorize(ctx context.Context, _ authorizer.Attributes) (authorizer.Decision, string, error) {
	if c, ok := logicalcluster.ClusterFromContext(ctx); ok && c.IsWildcard() {
		return authorizer.DecisionDeny, "wildcard requests across logical clusters are reserved for system:masters", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (g wildcardGuard) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(g.Authorize(ctx, a))
}

func (wildcardGuard) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// systemStatus denies every verb on the status subresource of APIExports
// and APIBindings to everyone who got past the system:masters check, as
// kcp's system CRD authorizer does: an export's identityHash or a binding's bound export
// written by a tenant would let it claim another export's data.
type systemStatus struct{}

// StatusDenied is the reason of the denial, kcp's text.
const StatusDenied = "status update not permitted"

func (systemStatus) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.IsResourceRequest() && a.GetAPIGroup() == apisv1alpha1.GroupName && a.GetSubresource() == "status" &&
		(a.GetResource() == "apiexports" || a.GetResource() == "apibindings") {
		return authorizer.DecisionDeny, StatusDenied, nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (g systemStatus) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(g.Authorize(ctx, a))
}

func (systemStatus) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

// privilegedRules reports "everything" to SelfSubjectRulesReview for members
// of the privileged groups, as their authorizers allow everything.
type privilegedRules []string

func (p privilegedRules) RulesFor(_ context.Context, u user.Info, _ string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	for _, g := range u.GetGroups() {
		for _, pg := range p {
			if g == pg {
				return []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
					[]authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}, false, nil
			}
		}
	}
	return nil, nil, false, nil
}
