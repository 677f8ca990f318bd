package authorization

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
)

// decide answers one decision to everyone and has no rules.
type decide authorizer.Decision

func (d decide) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	return authorizer.Decision(d), "", nil
}
func (d decide) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(d.Authorize(ctx, a))
}
func (d decide) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", nil
}
func (d decide) Steps() (bootstrap, local, global authorizer.Authorizer) {
	return d, d, d
}
func (d decide) RulesFor(context.Context, user.Info, string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return nil, nil, false, nil
}

func TestChainScopesPrivilegedGroupsAndGatesImpersonation(t *testing.T) {
	authz, rules, err := NewChain(decide(authorizer.DecisionNoOpinion), decide(authorizer.DecisionNoOpinion), decide(authorizer.DecisionNoOpinion))
	if err != nil {
		t.Fatal(err)
	}
	scopedTo := func(c string) map[string][]string { return map[string][]string{scope.ScopeExtraKey: {"cluster:" + c}} }
	kcpAdmin := &user.DefaultInfo{Name: "a", Groups: []string{identities.KCPAdminGroup, user.AllAuthenticated}, Extra: scopedTo("here")}
	masters := &user.DefaultInfo{Name: "m", Groups: []string{user.SystemPrivilegedGroup}, Extra: scopedTo("here")}
	foreignSA := &user.DefaultInfo{Name: "system:serviceaccount:ns:sa", Groups: []string{identities.KCPAdminGroup}, Extra: map[string][]string{scope.ServiceAccountClusterExtraKey: {"there"}}}
	get := authorizer.AttributesRecord{Verb: "get", Resource: "configmaps", ResourceRequest: true}
	impersonateMasters := authorizer.AttributesRecord{Verb: "impersonate", Resource: "groups", Name: user.SystemPrivilegedGroup, ResourceRequest: true}
	for _, tc := range []struct {
		name    string
		user    user.Info
		attr    authorizer.AttributesRecord
		cluster logicalcluster.Name
		want    authorizer.Decision
	}{
		{"kcp admin scoped here", kcpAdmin, get, "here", authorizer.DecisionAllow},
		{"kcp admin scoped elsewhere", kcpAdmin, get, "there", authorizer.DecisionNoOpinion},
		{"system:masters scoped here", masters, get, "here", authorizer.DecisionAllow},
		{"system:masters scoped elsewhere", masters, get, "there", authorizer.DecisionNoOpinion},
		{"foreign service account loses its groups", foreignSA, get, "here", authorizer.DecisionNoOpinion},
		{"service account keeps its groups at home", foreignSA, get, "there", authorizer.DecisionAllow},
		{"kcp admin may not impersonate system:masters", &user.DefaultInfo{Name: "a", Groups: []string{identities.KCPAdminGroup}}, impersonateMasters, "here", authorizer.DecisionDeny},
		{"system:masters may", &user.DefaultInfo{Name: "m", Groups: []string{user.SystemPrivilegedGroup}}, impersonateMasters, "here", authorizer.DecisionAllow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attr := tc.attr
			attr.User = tc.user
			got, reason, _ := authz.Authorize(logicalcluster.WithCluster(context.Background(), tc.cluster), attr)
			if got != tc.want {
				t.Errorf("decision %v (%s), want %v", got, reason, tc.want)
			}
		})
	}

	resource, _, _, err := rules.RulesFor(logicalcluster.WithCluster(context.Background(), "there"), kcpAdmin, "")
	if err != nil || len(resource) != 0 {
		t.Errorf("rules of a kcp admin scoped elsewhere: %v (err %v), want none", resource, err)
	}
	resource, _, _, _ = rules.RulesFor(logicalcluster.WithCluster(context.Background(), "here"), kcpAdmin, "")
	if len(resource) == 0 {
		t.Error("kcp admin in its scope has no rules")
	}
}

// TestMaximalPermissionPolicyBindsEveryoneButSystemMasters: the policy of a
// bound API comes before system:kcp:admin and RBAC, after system:masters.
func TestMaximalPermissionPolicyBindsEveryoneButSystemMasters(t *testing.T) {
	authz, _, err := NewChain(decide(authorizer.DecisionNoOpinion), decide(authorizer.DecisionDeny), decide(authorizer.DecisionAllow))
	if err != nil {
		t.Fatal(err)
	}
	ctx := logicalcluster.WithCluster(context.Background(), "here")
	for _, tc := range []struct {
		user user.Info
		want authorizer.Decision
	}{
		{&user.DefaultInfo{Name: "m", Groups: []string{user.SystemPrivilegedGroup}}, authorizer.DecisionAllow},
		{&user.DefaultInfo{Name: "a", Groups: []string{identities.KCPAdminGroup}}, authorizer.DecisionDeny},
		{&user.DefaultInfo{Name: "u", Groups: []string{user.AllAuthenticated}}, authorizer.DecisionDeny},
	} {
		attr := authorizer.AttributesRecord{User: tc.user, Verb: "create", APIGroup: "widgets.example.io", Resource: "widgets", ResourceRequest: true}
		if got, reason, _ := authz.Authorize(ctx, attr); got != tc.want {
			t.Errorf("%s: decision %v (%s), want %v", tc.user.GetName(), got, reason, tc.want)
		}
	}
}

// TestStatusOfExportsAndBindingsIsTheSystems: kcp's system CRD authorizer
// denies the status of APIExports and APIBindings to workspace admins and
// kcp-admin alike; only system:masters (the shard's controllers) passes.
func TestStatusOfExportsAndBindingsIsTheSystems(t *testing.T) {
	authz, _, err := NewChain(decide(authorizer.DecisionNoOpinion), decide(authorizer.DecisionNoOpinion), decide(authorizer.DecisionAllow))
	if err != nil {
		t.Fatal(err)
	}
	ctx := logicalcluster.WithCluster(context.Background(), "here")
	admin := &user.DefaultInfo{Name: "a", Groups: []string{identities.KCPAdminGroup}}
	owner := &user.DefaultInfo{Name: "u", Groups: []string{user.AllAuthenticated}}
	masters := &user.DefaultInfo{Name: "m", Groups: []string{user.SystemPrivilegedGroup}}
	for _, tc := range []struct {
		user                user.Info
		verb, resource, sub string
		want                authorizer.Decision
	}{
		{owner, "patch", "apiexports", "status", authorizer.DecisionDeny},
		{owner, "update", "apibindings", "status", authorizer.DecisionDeny},
		{admin, "update", "apiexports", "status", authorizer.DecisionDeny},
		{owner, "get", "apiexports", "status", authorizer.DecisionDeny},
		{masters, "update", "apiexports", "status", authorizer.DecisionAllow},
		{owner, "update", "apiexports", "", authorizer.DecisionAllow},
		{owner, "update", "apiresourceschemas", "status", authorizer.DecisionAllow},
	} {
		attr := authorizer.AttributesRecord{User: tc.user, Verb: tc.verb, APIGroup: "apis.kcp.io", Resource: tc.resource, Subresource: tc.sub, ResourceRequest: true}
		got, reason, _ := authz.Authorize(ctx, attr)
		if got != tc.want {
			t.Errorf("%s %s %s/%s: decision %v (%s), want %v", tc.user.GetName(), tc.verb, tc.resource, tc.sub, got, reason, tc.want)
		}
		if got == authorizer.DecisionDeny && reason != StatusDenied {
			t.Errorf("%s %s %s/%s: reason %q, want kcp's %q", tc.user.GetName(), tc.verb, tc.resource, tc.sub, reason, StatusDenied)
		}
	}
}
