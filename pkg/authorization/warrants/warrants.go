// Package warrants evaluates scopes and warrants around an authorizer: the
// requester counts as itself only in the logical clusters it is scoped to
// (a plain authenticated user elsewhere, see package scope), and a request
// is allowed when the requester, its global service account name (kcp's
// GlobalServiceAccount, see scope.GlobalServiceAccount) or one of its
// warrants, each scoped the same way, is allowed.
package warrants

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
)

// maxDepth bounds warrants of warrants.
const maxDepth = 5

// Authorizer applies scopes and warrants around Delegate.
type Authorizer struct {
	Delegate authorizer.Authorizer
}

// New returns the scope and warrant evaluating wrapper of delegate.
func New(delegate authorizer.Authorizer) *Authorizer {
	return &Authorizer{Delegate: delegate}
}

func clusterOf(ctx context.Context) logicalcluster.Name {
	c, _ := logicalcluster.ClusterFromContext(ctx)
	return c
}

// Authorize implements authorizer.Authorizer.
func (a *Authorizer) Authorize(ctx context.Context, attr authorizer.Attributes) (authorizer.Decision, string, error) {
	if attr.GetUser() == nil {
		return a.Delegate.Authorize(ctx, attr)
	}
	return a.authorize(ctx, attr, attr.GetUser(), clusterOf(ctx), 0)
}

func (a *Authorizer) authorize(ctx context.Context, attr authorizer.Attributes, u user.Info, cluster logicalcluster.Name, depth int) (authorizer.Decision, string, error) {
	decision, reason, err := a.Delegate.Authorize(ctx, withUser{attr, scope.Effective(u, cluster)})
	if decision == authorizer.DecisionAllow {
		return decision, reason, err
	}
	// A service account is also its global name, in any cluster.
	if global, ok := scope.GlobalServiceAccount(u); ok && scope.InScope(global, cluster) {
		if d, r, e := a.Delegate.Authorize(ctx, withUser{attr, global}); d == authorizer.DecisionAllow {
			return d, r, e
		}
	}
	if !scope.InScope(u, cluster) {
		reason = joinReasons(reason, outOfScopeReason(u))
	}
	if depth >= maxDepth {
		return decision, reason, err
	}
	warrants, errs := scope.Warrants(u)
	var warrantReasons []string
	for _, e := range errs {
		warrantReasons = append(warrantReasons, e.Error())
	}
	for _, w := range warrants {
		d, r, _ := a.authorize(ctx, attr, w, cluster, depth+1)
		if d == authorizer.DecisionAllow {
			return d, r, nil
		}
		if r != "" {
			warrantReasons = append(warrantReasons, r)
		}
	}
	if len(warrantReasons) > 0 {
		reason = fmt.Sprintf("%s; warrants: [%s]", reason, strings.Join(warrantReasons, "; "))
	}
	return decision, reason, err
}

// outOfScopeReason explains why an identity counted as a plain user.
func outOfScopeReason(u user.Info) string {
	as := "a plain authenticated user"
	if origins := scope.Origins(u); len(origins) > 0 {
		groups := make([]string, 0, len(origins))
		for _, c := range origins {
			groups = append(groups, scope.ClusterGroup(c))
		}
		as += " of " + strings.Join(groups, ", ")
	}
	if scope.IsServiceAccount(u) {
		if home, ok := scope.ServiceAccountCluster(u); ok {
			return fmt.Sprintf("service accounts of logical cluster %q act only in that cluster; here they count as %s", home, as)
		}
		return "service account of another logical cluster; here it counts as " + as
	}
	return fmt.Sprintf("user %q is scoped to other logical clusters (%s); here it counts as %s", u.GetName(), strings.Join(u.GetExtra()[scope.ScopeExtraKey], ";"), as)
}

func joinReasons(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// ConditionsAwareAuthorize converts the unconditional decision.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attr authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attr))
}

// EvaluateConditions is not supported.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

type withUser struct {
	authorizer.Attributes
	user user.Info
}

func (w withUser) GetUser() user.Info { return w.user }

// RuleResolver applies scopes and warrants around Delegate: the rules of a
// user are those of its effective identity in the cluster plus those of its
// warrants.
type RuleResolver struct {
	Delegate authorizer.RuleResolver
}

// NewRuleResolver returns the scope and warrant evaluating wrapper of
// delegate.
func NewRuleResolver(delegate authorizer.RuleResolver) *RuleResolver {
	return &RuleResolver{Delegate: delegate}
}

// RulesFor implements authorizer.RuleResolver.
func (r *RuleResolver) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	rules := &ruleSet{seen: map[string]bool{}}
	err := r.collect(ctx, u, namespace, clusterOf(ctx), 0, rules)
	return rules.resource, rules.nonResource, rules.incomplete, err
}

func (r *RuleResolver) collect(ctx context.Context, u user.Info, namespace string, cluster logicalcluster.Name, depth int, rules *ruleSet) error {
	resource, nonResource, incomplete, err := r.Delegate.RulesFor(ctx, scope.Effective(u, cluster), namespace)
	if err != nil {
		return err
	}
	rules.add(resource, nonResource, incomplete)
	if global, ok := scope.GlobalServiceAccount(u); ok && scope.InScope(global, cluster) {
		resource, nonResource, incomplete, err := r.Delegate.RulesFor(ctx, global, namespace)
		if err != nil {
			return err
		}
		rules.add(resource, nonResource, incomplete)
	}
	if depth >= maxDepth {
		return nil
	}
	// Warrants the authorizer ignores add no rules: nothing is missing.
	warrants, _ := scope.Warrants(u)
	for _, w := range warrants {
		if err := r.collect(ctx, w, namespace, cluster, depth+1, rules); err != nil {
			return err
		}
	}
	return nil
}

// ruleSet accumulates rules without duplicates.
type ruleSet struct {
	seen        map[string]bool
	resource    []authorizer.ResourceRuleInfo
	nonResource []authorizer.NonResourceRuleInfo
	incomplete  bool
}

func (s *ruleSet) add(resource []authorizer.ResourceRuleInfo, nonResource []authorizer.NonResourceRuleInfo, incomplete bool) {
	s.incomplete = s.incomplete || incomplete
	for _, rule := range resource {
		key, _ := json.Marshal([]any{"r", rule.GetVerbs(), rule.GetAPIGroups(), rule.GetResources(), rule.GetResourceNames()})
		if !s.seen[string(key)] {
			s.seen[string(key)] = true
			s.resource = append(s.resource, rule)
		}
	}
	for _, rule := range nonResource {
		key, _ := json.Marshal([]any{"n", rule.GetVerbs(), rule.GetNonResourceURLs()})
		if !s.seen[string(key)] {
			s.seen[string(key)] = true
			s.nonResource = append(s.nonResource, rule)
		}
	}
}
