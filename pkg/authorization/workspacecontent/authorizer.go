// Package workspacecontent decides who may enter a logical cluster at all,
// before RBAC decides what they may do inside it.
//
// A logical cluster exists only while its LogicalCluster object exists.
// Entering it requires verb "access" on the non-resource path "/" inside it
// (cluster-admin has it), and, when its LogicalCluster carries
// authorization.kcp.io/required-groups, membership in one of the listed
// alternatives. The logical cluster's own service accounts need neither:
// its RBAC alone judges them.
//
// The lifecycle groups system:kcp:initializer:<initializer> and
// system:kcp:terminator:<terminator> are let in with every right while the
// LogicalCluster still waits for that initializer (phase Initializing) or
// terminator (being deleted): only the initializing and terminating
// workspace views, which checked the user's right to the WorkspaceType,
// impersonate them (the impersonation gatekeeper refuses system:kcp:* groups
// to everyone else).
package workspacecontent

import (
	"context"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
)

const (
	// DenyReason is the message users get: it never tells whether the
	// workspace exists.
	DenyReason = "workspace access not permitted"
)

// InitializerGroup returns the group that acts for an initializer inside the
// logical clusters waiting for it.
func InitializerGroup(i corev1alpha1.LogicalClusterInitializer) string {
	return identities.InitializerGroupPrefix + string(i)
}

// TerminatorGroup returns the group that acts for a terminator inside the
// logical clusters waiting for it.
func TerminatorGroup(t corev1alpha1.LogicalClusterTerminator) string {
	return identities.TerminatorGroupPrefix + string(t)
}

// lifecycleMember tells whether u acts for an initializer or terminator that
// lc still waits for.
func lifecycleMember(u user.Info, lc *corev1alpha1.LogicalCluster) bool {
	for _, g := range u.GetGroups() {
		switch {
		case strings.HasPrefix(g, identities.InitializerGroupPrefix):
			i := corev1alpha1.LogicalClusterInitializer(strings.TrimPrefix(g, identities.InitializerGroupPrefix))
			if lc.DeletionTimestamp == nil && lc.Status.Phase == corev1alpha1.LogicalClusterPhaseInitializing && slices.Contains(lc.Status.Initializers, i) {
				return true
			}
		case strings.HasPrefix(g, identities.TerminatorGroupPrefix):
			t := corev1alpha1.LogicalClusterTerminator(strings.TrimPrefix(g, identities.TerminatorGroupPrefix))
			if lc.DeletionTimestamp != nil && slices.Contains(lc.Status.Terminators, t) {
				return true
			}
		}
	}
	return false
}

// LogicalClusterGetter returns the LogicalCluster of a cluster, or nil.
type LogicalClusterGetter func(cluster logicalcluster.Name) *corev1alpha1.LogicalCluster

// Authorizer is the workspace content authorizer.
type Authorizer struct {
	getLogicalCluster LogicalClusterGetter
	// rbac answers the "access" check inside the cluster.
	rbac authorizer.Authorizer
	// movedAway tells whether a cluster moved to another shard and this
	// shard holds its requests (pkg/clusterhold); may be nil. Only a
	// cluster whose LogicalCluster is gone or served elsewhere counts.
	movedAway func(logicalcluster.Name) bool
}

// New returns the authorizer. movedAway (may be nil) names the clusters
// that moved to another shard and whose requests this shard holds.
func New(get LogicalClusterGetter, rbac authorizer.Authorizer, movedAway func(logicalcluster.Name) bool) *Authorizer {
	return &Authorizer{getLogicalCluster: get, rbac: rbac, movedAway: movedAway}
}

func hasGroup(u user.Info, group string) bool {
	for _, g := range u.GetGroups() {
		if g == group {
			return true
		}
	}
	return false
}

// RequiredGroupsSatisfied tells whether u belongs to one of the alternatives
// of a required-groups annotation: ";" separates alternatives, "," groups
// that are all required.
func RequiredGroupsSatisfied(annotation string, u user.Info) bool {
	for _, alternative := range strings.Split(annotation, ";") {
		ok := true
		for _, g := range strings.Split(alternative, ",") {
			if g = strings.TrimSpace(g); g != "" && !hasGroup(u, g) {
				ok = false
				break
			}
		}
		if ok && strings.TrimSpace(alternative) != "" {
			return true
		}
	}
	return false
}

// Authorize denies entry into logical clusters that do not exist or that the
// user may not access, and has no opinion otherwise.
func (a *Authorizer) Authorize(ctx context.Context, attr authorizer.Attributes) (authorizer.Decision, string, error) {
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok || cluster.IsWildcard() || cluster.IsSystem() || IsDeepSAR(ctx) {
		return authorizer.DecisionNoOpinion, "", nil
	}
	u := attr.GetUser()
	if u == nil {
		return authorizer.DecisionDeny, DenyReason, nil
	}
	// The scheduler creates the LogicalCluster that makes a cluster exist;
	// the shards a move concerns write the status of its migration and
	// read the moving cluster's storage.
	if hasGroup(u, identities.LogicalClusterAdminGroup) && attr.IsResourceRequest() &&
		(attr.GetAPIGroup() == corev1alpha1.GroupName && attr.GetResource() == "logicalclusters" ||
			attr.GetAPIGroup() == migrationv1alpha1.GroupName) {
		return authorizer.DecisionAllow, "", nil
	}
	lc := a.getLogicalCluster(cluster)
	// A client routed here by a front-proxy that has not yet seen the
	// cluster move away is answered by the hold (429, retry), not told 403
	// by what the clean-up left or removed.
	if (lc == nil || lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] != "") &&
		a.movedAway != nil && attr.IsResourceRequest() && a.movedAway(cluster) {
		return authorizer.DecisionAllow, "", nil
	}
	if lc == nil {
		return authorizer.DecisionDeny, DenyReason, nil
	}
	if lifecycleMember(u, lc) {
		return authorizer.DecisionAllow, "", nil
	}
	// The workspace's own service accounts are judged by its RBAC alone.
	if home, ok := scope.ServiceAccountCluster(u); ok && home == cluster {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if groups, ok := lc.Annotations[corev1alpha1.RequiredGroupsAnnotationKey]; ok && !hasGroup(u, identities.KCPAdminGroup) && !RequiredGroupsSatisfied(groups, u) {
		return authorizer.DecisionDeny, DenyReason, nil
	}
	if hasGroup(u, identities.KCPAdminGroup) {
		return authorizer.DecisionNoOpinion, "", nil
	}
	access := authorizer.AttributesRecord{User: u, Verb: "access", Path: "/", ResourceRequest: false}
	if d, _, err := a.rbac.Authorize(ctx, access); err == nil && d == authorizer.DecisionAllow {
		return authorizer.DecisionNoOpinion, "", nil
	}
	return authorizer.DecisionDeny, DenyReason, nil
}

// ConditionsAwareAuthorize converts the unconditional decision.
func (a *Authorizer) ConditionsAwareAuthorize(ctx context.Context, attr authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attr))
}

// EvaluateConditions is not supported.
func (a *Authorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}
