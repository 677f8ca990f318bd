package othershards

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/shardplane/shardplane/pkg/authorization/workspacecontent"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// fixedAuthorizer allows what allow says, by user name and verb.
type fixedAuthorizer func(a authorizer.Attributes) bool

func (f fixedAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if f(a) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (f fixedAuthorizer) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(f.Authorize(ctx, a))
}

func (fixedAuthorizer) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", nil
}

func TestChecksInWorkspacesOfOtherShardsUseTheirReplicatedRBAC(t *testing.T) {
	chain := fixedAuthorizer(func(a authorizer.Attributes) bool { return a.GetUser().GetName() == "chain-user" })
	// The replicated RBAC: alice may enter root and use types; bob may use
	// types but not enter root.
	rbac := fixedAuthorizer(func(a authorizer.Attributes) bool {
		switch a.GetUser().GetName() {
		case "alice":
			return true
		case "bob":
			return a.GetVerb() == "use"
		}
		return false
	})
	checks := New(chain, rbac, func(c logicalcluster.Name) bool { return c == "local" })
	use := func(name string, groups ...string) authorizer.Attributes {
		return authorizer.AttributesRecord{User: &user.DefaultInfo{Name: name, Groups: groups}, Verb: "use", Resource: "workspacetypes", ResourceRequest: true}
	}
	for _, tc := range []struct {
		cluster logicalcluster.Name
		attr    authorizer.Attributes
		want    authorizer.Decision
	}{
		{"root", use("alice"), authorizer.DecisionAllow},
		{"root", use("bob"), authorizer.DecisionDeny}, // no access to root
		{"root", use("shard-admin", user.SystemPrivilegedGroup), authorizer.DecisionAllow},
		{"root", use("kcp-admin", "system:kcp:admin"), authorizer.DecisionAllow},
		{"root", use("chain-user"), authorizer.DecisionDeny}, // root is not judged by the chain here
		{"local", use("chain-user"), authorizer.DecisionAllow},
		{"local", use("alice"), authorizer.DecisionNoOpinion}, // hosted clusters: the chain alone
		{"other", use("alice"), authorizer.DecisionAllow},     // any cluster another shard hosts: its RBAC
		{"other", use("bob"), authorizer.DecisionDeny},
		{"system:admin", use("alice"), authorizer.DecisionDeny}, // system clusters are nobody's to use
	} {
		got, _, _ := checks.Authorize(logicalcluster.WithCluster(context.Background(), tc.cluster), tc.attr)
		if got != tc.want {
			t.Errorf("%s by %s: %v, want %v", tc.cluster, tc.attr.GetUser().GetName(), got, tc.want)
		}
	}
}

// TestDeepSARInAnotherShardsWorkspaceNeedsNoAccess: bob may bind in root by
// its replicated RBAC without entering it, when asked as kcp's deep
// SubjectAccessReview.
func TestDeepSARInAnotherShardsWorkspaceNeedsNoAccess(t *testing.T) {
	rbac := fixedAuthorizer(func(a authorizer.Attributes) bool { return a.GetVerb() == "bind" })
	checks := New(fixedAuthorizer(func(authorizer.Attributes) bool { return false }), rbac, func(logicalcluster.Name) bool { return false })
	bind := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "bob"}, Verb: "bind", Resource: "apiexports", ResourceRequest: true}
	ctx := logicalcluster.WithCluster(context.Background(), "root")
	if got, _, _ := checks.Authorize(ctx, bind); got != authorizer.DecisionDeny {
		t.Errorf("without access: %v, want Deny", got)
	}
	if got, _, _ := checks.Authorize(workspacecontent.WithDeepSAR(ctx), bind); got != authorizer.DecisionAllow {
		t.Errorf("deep SubjectAccessReview: %v, want Allow", got)
	}
}

// TestAnotherWorkspacesServiceAccountCountsByItsClusterGroup: the replicated
// RBAC of the other shard's workspace names a service account and a
// cluster group; a service account of workspace "consumer" is not the
// namesake there, only a member of system:cluster:consumer, as on the
// hosting shard.
func TestAnotherWorkspacesServiceAccountCountsByItsClusterGroup(t *testing.T) {
	rbac := fixedAuthorizer(func(a authorizer.Attributes) bool {
		u := a.GetUser()
		if u.GetName() == "system:serviceaccount:team:default" {
			return true
		}
		for _, g := range u.GetGroups() {
			if g == "system:cluster:consumer" && a.GetVerb() == "bind" {
				return true
			}
		}
		return false
	})
	checks := New(fixedAuthorizer(func(authorizer.Attributes) bool { return false }), rbac, func(logicalcluster.Name) bool { return false })
	sa := &user.DefaultInfo{Name: "system:serviceaccount:team:default", Groups: []string{user.AllAuthenticated}, Extra: map[string][]string{"authentication.kcp.io/cluster-name": {"consumer"}}}
	ctx := workspacecontent.WithDeepSAR(logicalcluster.WithCluster(context.Background(), "provider"))
	for verb, want := range map[string]authorizer.Decision{"bind": authorizer.DecisionAllow, "delete": authorizer.DecisionNoOpinion} {
		got, _, _ := checks.Authorize(ctx, authorizer.AttributesRecord{User: sa, Verb: verb, Resource: "apiexports", ResourceRequest: true})
		if got != want {
			t.Errorf("%s by the consumer's service account in the provider: %v, want %v", verb, got, want)
		}
	}
}
