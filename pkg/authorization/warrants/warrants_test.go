package warrants

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
)

// policy allows users by name or group and denies users named "denied".
type policy struct {
	allowUsers  []string
	allowGroups []string
}

func (p policy) allows(u user.Info) bool {
	if slices.Contains(p.allowUsers, u.GetName()) {
		return true
	}
	for _, g := range u.GetGroups() {
		if slices.Contains(p.allowGroups, g) {
			return true
		}
	}
	return false
}

func (p policy) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	switch {
	case a.GetUser().GetName() == "denied":
		return authorizer.DecisionDeny, "denied by policy", nil
	case p.allows(a.GetUser()):
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "no rule for " + a.GetUser().GetName(), nil
}

func (p policy) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(p.Authorize(ctx, a))
}

func (p policy) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", nil
}

func (p policy) RulesFor(_ context.Context, u user.Info, _ string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	if !p.allows(u) {
		return nil, nil, false, nil
	}
	return []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{Verbs: []string{"get"}, Resources: []string{"rules-of-" + u.GetName()}}},
		[]authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{Verbs: []string{"get"}, NonResourceURLs: []string{"/common"}}}, false, nil
}

func warrant(t *testing.T, w scope.Warrant) string {
	t.Helper()
	raw, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func withWarrants(u *user.DefaultInfo, ws ...string) *user.DefaultInfo {
	if u.Extra == nil {
		u.Extra = map[string][]string{}
	}
	u.Extra[scope.WarrantExtraKey] = ws
	return u
}

func TestScopesAndWarrants(t *testing.T) {
	p := policy{allowUsers: []string{"alice", "bob", "system:serviceaccount:ns:sa", "system:serviceaccount:ns:warranted"}, allowGroups: []string{"everyone-authenticated"}}
	saExtra := func(c string) map[string][]string {
		return map[string][]string{scope.ServiceAccountClusterExtraKey: {c}}
	}
	scopedTo := func(c string) map[string][]string { return map[string][]string{scope.ScopeExtraKey: {"cluster:" + c}} }
	authenticated := []string{user.AllAuthenticated}
	for _, tc := range []struct {
		name       string
		user       *user.DefaultInfo
		policy     policy
		want       authorizer.Decision
		wantReason string
	}{
		{name: "unscoped user", user: &user.DefaultInfo{Name: "alice"}, want: authorizer.DecisionAllow},
		{name: "user scoped here", user: &user.DefaultInfo{Name: "alice", Extra: scopedTo("here")}, want: authorizer.DecisionAllow},
		{name: "user scoped elsewhere is not itself here", user: &user.DefaultInfo{Name: "alice", Groups: authenticated, Extra: scopedTo("there")},
			want: authorizer.DecisionNoOpinion, wantReason: "scoped to other logical clusters"},
		{name: "user scoped elsewhere keeps what authenticated users have",
			user:   &user.DefaultInfo{Name: "nobody", Groups: authenticated, Extra: scopedTo("there")},
			policy: policy{allowGroups: []string{user.AllAuthenticated}}, want: authorizer.DecisionAllow},
		{name: "own service account", user: &user.DefaultInfo{Name: "system:serviceaccount:ns:sa", Extra: saExtra("here")}, want: authorizer.DecisionAllow},
		{name: "foreign service account is not itself", user: &user.DefaultInfo{Name: "system:serviceaccount:ns:sa", Groups: authenticated, Extra: saExtra("there")},
			want: authorizer.DecisionNoOpinion, wantReason: `service accounts of logical cluster "there" act only in that cluster`},
		{name: "foreign service account has what authenticated users have",
			user:   &user.DefaultInfo{Name: "system:serviceaccount:ns:sa", Groups: authenticated, Extra: saExtra("there")},
			policy: policy{allowGroups: []string{user.AllAuthenticated}}, want: authorizer.DecisionAllow},
		{name: "foreign service account is allowed by its global name",
			user:   &user.DefaultInfo{Name: "system:serviceaccount:ns:sa", Groups: authenticated, Extra: saExtra("there")},
			policy: policy{allowUsers: []string{"system:kcp:serviceaccount:there:ns:sa"}}, want: authorizer.DecisionAllow},
		{name: "own service account is allowed by its global name",
			user:   &user.DefaultInfo{Name: "system:serviceaccount:ns:sa", Extra: saExtra("here")},
			policy: policy{allowUsers: []string{"system:kcp:serviceaccount:here:ns:sa"}}, want: authorizer.DecisionAllow},
		{name: "global name of another cluster's service account does not allow",
			user:   &user.DefaultInfo{Name: "system:serviceaccount:ns:sa", Groups: authenticated, Extra: saExtra("there")},
			policy: policy{allowUsers: []string{"system:kcp:serviceaccount:elsewhere:ns:sa"}}, want: authorizer.DecisionNoOpinion},
		{name: "global name keeps the service account's scopes",
			user: &user.DefaultInfo{Name: "system:serviceaccount:ns:sa", Groups: authenticated,
				Extra: map[string][]string{scope.ServiceAccountClusterExtraKey: {"there"}, scope.ScopeExtraKey: {"cluster:there"}}},
			policy: policy{allowUsers: []string{"system:kcp:serviceaccount:there:ns:sa"}}, want: authorizer.DecisionNoOpinion},
		{name: "service account without cluster has no global name",
			user:   &user.DefaultInfo{Name: "system:serviceaccount:ns:sa"},
			policy: policy{allowUsers: []string{"system:kcp:serviceaccount::ns:sa"}}, want: authorizer.DecisionNoOpinion},
		{name: "service account named without cluster is local", user: &user.DefaultInfo{Name: "system:serviceaccount:ns:sa"}, want: authorizer.DecisionAllow},
		{name: "warrant allows", user: withWarrants(&user.DefaultInfo{Name: "mallory"}, warrant(t, scope.Warrant{User: "bob"})), want: authorizer.DecisionAllow},
		{name: "warrant allows over a denied user", user: withWarrants(&user.DefaultInfo{Name: "denied"}, warrant(t, scope.Warrant{User: "bob"})), want: authorizer.DecisionAllow},
		{name: "denied user stays denied without an allowing warrant", user: withWarrants(&user.DefaultInfo{Name: "denied"}, warrant(t, scope.Warrant{User: "mallory"})),
			want: authorizer.DecisionDeny, wantReason: "warrants: [no rule for mallory]"},
		{name: "warrant scoped elsewhere does not allow", user: withWarrants(&user.DefaultInfo{Name: "mallory"}, warrant(t, scope.Warrant{User: "bob", Extra: scopedTo("there")})),
			want: authorizer.DecisionNoOpinion},
		{name: "warrant scoped here allows", user: withWarrants(&user.DefaultInfo{Name: "mallory"}, warrant(t, scope.Warrant{User: "bob", Extra: scopedTo("here")})),
			want: authorizer.DecisionAllow},
		{name: "warrant of a user scoped elsewhere still allows", user: withWarrants(&user.DefaultInfo{Name: "mallory", Extra: scopedTo("there")}, warrant(t, scope.Warrant{User: "bob"})),
			want: authorizer.DecisionAllow},
		{name: "warrant for a service account without cluster is ignored", user: withWarrants(&user.DefaultInfo{Name: "mallory"}, warrant(t, scope.Warrant{User: "system:serviceaccount:ns:warranted"})),
			want: authorizer.DecisionNoOpinion, wantReason: "names no logical cluster"},
		{name: "warrant for a local service account allows", user: withWarrants(&user.DefaultInfo{Name: "mallory"}, warrant(t, scope.Warrant{User: "system:serviceaccount:ns:warranted", Extra: saExtra("here")})),
			want: authorizer.DecisionAllow},
		{name: "warrant for a foreign service account does not allow", user: withWarrants(&user.DefaultInfo{Name: "mallory"}, warrant(t, scope.Warrant{User: "system:serviceaccount:ns:warranted", Extra: saExtra("there")})),
			want: authorizer.DecisionNoOpinion},
		{name: "invalid warrant is ignored", user: withWarrants(&user.DefaultInfo{Name: "mallory"}, "{"), want: authorizer.DecisionNoOpinion, wantReason: "invalid warrant"},
		{name: "warrant of a warrant allows", user: withWarrants(&user.DefaultInfo{Name: "mallory"},
			warrant(t, scope.Warrant{User: "eve", Extra: map[string][]string{scope.WarrantExtraKey: {warrant(t, scope.Warrant{User: "bob"})}}})),
			want: authorizer.DecisionAllow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := p
			if tc.policy.allowUsers != nil || tc.policy.allowGroups != nil {
				pol = tc.policy
			}
			ctx := logicalcluster.WithCluster(context.Background(), "here")
			got, reason, err := New(pol).Authorize(ctx, authorizer.AttributesRecord{User: tc.user, Verb: "get"})
			if err != nil || got != tc.want {
				t.Fatalf("decision %v (%q, err %v), want %v", got, reason, err, tc.want)
			}
			if !strings.Contains(reason, tc.wantReason) {
				t.Errorf("reason %q does not mention %q", reason, tc.wantReason)
			}
		})
	}
}

func TestRulesFollowScopesAndWarrants(t *testing.T) {
	p := policy{allowUsers: []string{"alice", "bob"}, allowGroups: []string{user.AllAuthenticated}}
	ctx := logicalcluster.WithCluster(context.Background(), "here")
	rulesOf := func(u user.Info) []string {
		resource, nonResource, _, err := NewRuleResolver(p).RulesFor(ctx, u, "default")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range resource {
			out = append(out, r.GetResources()...)
		}
		if len(nonResource) > 1 {
			t.Errorf("duplicate non-resource rules: %d", len(nonResource))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		user user.Info
		want []string
	}{
		{"user", &user.DefaultInfo{Name: "alice"}, []string{"rules-of-alice"}},
		{"user scoped elsewhere has the rules of authenticated users",
			&user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}, Extra: map[string][]string{scope.ScopeExtraKey: {"cluster:there"}}},
			[]string{"rules-of-" + user.Anonymous}},
		{"foreign service account has the rules of authenticated users and of its global name",
			&user.DefaultInfo{Name: "system:serviceaccount:a:b", Groups: []string{user.AllAuthenticated}, Extra: map[string][]string{scope.ServiceAccountClusterExtraKey: {"there"}}},
			[]string{"rules-of-" + user.Anonymous, "rules-of-system:kcp:serviceaccount:there:a:b"}},
		{"warrants add their rules", withWarrants(&user.DefaultInfo{Name: "alice"}, warrant(t, scope.Warrant{User: "bob"}), warrant(t, scope.Warrant{User: "bob", Extra: map[string][]string{scope.ScopeExtraKey: {"cluster:there"}}})),
			[]string{"rules-of-alice", "rules-of-bob"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rulesOf(tc.user); !slices.Equal(got, tc.want) {
				t.Errorf("rules %v, want %v", got, tc.want)
			}
		})
	}
}
