// Package impersonation is the impersonation gatekeeper: whatever RBAC
// grants, a requester may impersonate a privileged group (system:masters,
// system:authenticated and the system:kcp:* groups the system trusts) only if
// it is a member of that group itself. system:masters may impersonate
// anything.
//
// It is an authorizer in the chain, so the upstream impersonation filter's
// checks and SubjectAccessReviews of the verb "impersonate" both see it.
// The scoping of impersonated identities to the request's logical cluster is
// the HTTP filter in pkg/authentication/impersonation.
package impersonation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/scope"
)

// NotAllowed starts the reason of every refusal.
const NotAllowed = "impersonation is not allowed"

// Privileged tells whether impersonating group requires membership in it.
func Privileged(group string) bool {
	return group == user.SystemPrivilegedGroup || group == user.AllAuthenticated || strings.HasPrefix(group, identities.KCPGroupPrefix)
}

// Authorizer denies impersonating privileged groups, directly or in a
// warrant, to non-members, and has no opinion otherwise.
type Authorizer struct{}

func isImpersonation(verb string) bool {
	return verb == "impersonate" || strings.HasPrefix(verb, "impersonate:")
}

// Authorize implements authorizer.Authorizer.
func (Authorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	u := a.GetUser()
	if u == nil || !a.IsResourceRequest() || !isImpersonation(a.GetVerb()) || slices.Contains(u.GetGroups(), user.SystemPrivilegedGroup) {
		return authorizer.DecisionNoOpinion, "", nil
	}
	switch {
	// Legacy impersonation names groups in the core group, constrained
	// impersonation (impersonate:<mode>) in authentication.k8s.io.
	case (a.GetAPIGroup() == "" || a.GetAPIGroup() == authenticationv1.GroupName) && a.GetResource() == "groups":
		if reason := refuseGroups(u, []string{a.GetName()}); reason != "" {
			return authorizer.DecisionDeny, reason, nil
		}
	case a.GetAPIGroup() == authenticationv1.GroupName && a.GetResource() == "userextras":
		switch a.GetSubresource() {
		case "*":
			return authorizer.DecisionDeny, fmt.Sprintf("%s: extras are impersonated one by one, %s among them", NotAllowed, scope.WarrantExtraKey), nil
		case scope.WarrantExtraKey:
			if reason := refuseWarrant(u, a.GetName(), 0); reason != "" {
				return authorizer.DecisionDeny, reason, nil
			}
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// refuseGroups returns why u may not impersonate one of groups, or "".
func refuseGroups(u user.Info, groups []string) string {
	for _, g := range groups {
		if g == "*" {
			return fmt.Sprintf("%s: groups are impersonated one by one, privileged ones only by their members", NotAllowed)
		}
		if Privileged(g) && !slices.Contains(u.GetGroups(), g) {
			return fmt.Sprintf("%s: only members of group %q may impersonate it", NotAllowed, g)
		}
	}
	return ""
}

// refuseWarrant applies refuseGroups to the groups of a warrant and of the
// warrants it carries.
func refuseWarrant(u user.Info, raw string, depth int) string {
	if depth > 5 {
		return fmt.Sprintf("%s: warrants nest too deep", NotAllowed)
	}
	var w scope.Warrant
	if err := json.Unmarshal([]byte(raw), &w); err != nil {
		return "" // never evaluated: it grants nothing
	}
	if reason := refuseGroups(u, w.Groups); reason != "" {
		return reason + " (in a warrant)"
	}
	for _, nested := range w.Extra[scope.WarrantExtraKey] {
		if reason := refuseWarrant(u, nested, depth+1); reason != "" {
			return reason
		}
	}
	return ""
}

// ConditionsAwareAuthorize converts the unconditional decision.
func (a Authorizer) ConditionsAwareAuthorize(ctx context.Context, attr authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attr))
}

// EvaluateConditions is not supported.
func (Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}
