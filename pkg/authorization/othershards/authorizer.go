// Package othershards judges the permission checks admission makes in a
// workspace other than the request's own ("use" of a WorkspaceType, "bind"
// of an APIExport) when another shard hosts that workspace. Shards never
// ask each other: such a check is judged as the hosting shard would judge
// it, with that shard's RBAC replicated to the cache server.
package othershards

import (
	"context"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/shardplane/shardplane/pkg/authorization/warrants"
	"github.com/shardplane/shardplane/pkg/authorization/workspacecontent"
	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// New returns the authorizer of checks in other workspaces. Checks in a
// workspace this shard hosts (hosted) go to chain, the shard's own
// authorizer. In one it does not host, system:masters and system:kcp:admin
// may; everyone else needs "access" to the workspace (unless the check is
// a deep SubjectAccessReview, see workspacecontent.WithDeepSAR) and the
// permission itself, both by rbac, which holds the replicated RBAC, for
// the user as it counts in that workspace (its scopes and warrants, as the
// hosting shard's chain applies them: another workspace's service account
// is a plain user of its cluster's group there).
func New(chain, rbac authorizer.Authorizer, hosted func(logicalcluster.Name) bool) authorizer.Authorizer {
	return checks{chain: chain, rbac: warrants.New(rbac), hosted: hosted}
}

// checks judges requests in workspaces other shards host by their
// replicated RBAC.
type checks struct {
	chain, rbac authorizer.Authorizer
	hosted      func(logicalcluster.Name) bool
}

func (r checks) Authorize(ctx context.Context, attr authorizer.Attributes) (authorizer.Decision, string, error) {
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	if cluster == "" || r.hosted(cluster) {
		return r.chain.Authorize(ctx, attr)
	}
	u := attr.GetUser()
	if u == nil {
		return authorizer.DecisionDeny, workspacecontent.DenyReason, nil
	}
	for _, g := range u.GetGroups() {
		if g == user.SystemPrivilegedGroup || g == identities.KCPAdminGroup {
			return authorizer.DecisionAllow, "", nil
		}
	}
	if cluster.IsSystem() {
		return authorizer.DecisionDeny, workspacecontent.DenyReason, nil
	}
	access := authorizer.AttributesRecord{User: u, Verb: "access", Path: "/"}
	if workspacecontent.IsDeepSAR(ctx) {
		return r.rbac.Authorize(ctx, attr)
	}
	if d, _, err := r.rbac.Authorize(ctx, access); err != nil || d != authorizer.DecisionAllow {
		return authorizer.DecisionDeny, workspacecontent.DenyReason, err
	}
	return r.rbac.Authorize(ctx, attr)
}

// ConditionsAwareAuthorize converts the unconditional decision.
func (r checks) ConditionsAwareAuthorize(ctx context.Context, attr authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(r.Authorize(ctx, attr))
}

// EvaluateConditions is not supported.
func (checks) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}
