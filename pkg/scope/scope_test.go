package scope

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func scoped(values ...string) map[string][]string { return map[string][]string{ScopeExtraKey: values} }

func sa(cluster ...string) *user.DefaultInfo {
	u := &user.DefaultInfo{Name: "system:serviceaccount:ns:default", Groups: []string{user.AllAuthenticated}}
	if len(cluster) > 0 {
		u.Extra = map[string][]string{ServiceAccountClusterExtraKey: cluster}
	}
	return u
}

func TestInScope(t *testing.T) {
	for _, tc := range []struct {
		name    string
		user    user.Info
		cluster logicalcluster.Name
		want    bool
	}{
		{"unscoped user is in scope everywhere", &user.DefaultInfo{Name: "alice"}, "a", true},
		{"scoped user in its cluster", &user.DefaultInfo{Name: "alice", Extra: scoped("cluster:a")}, "a", true},
		{"scoped user elsewhere", &user.DefaultInfo{Name: "alice", Extra: scoped("cluster:a")}, "b", false},
		{"alternatives in one value are or'ed", &user.DefaultInfo{Name: "alice", Extra: scoped("cluster:a,cluster:b")}, "b", true},
		{"values are and'ed", &user.DefaultInfo{Name: "alice", Extra: scoped("cluster:a", "cluster:b")}, "a", false},
		{"values are and'ed, both admit", &user.DefaultInfo{Name: "alice", Extra: scoped("cluster:a,cluster:b", "cluster:b")}, "b", true},
		{"a prefix of the name is not the name", &user.DefaultInfo{Name: "alice", Extra: scoped("cluster:a")}, "ab", false},
		{"unknown scope kinds admit nothing", &user.DefaultInfo{Name: "alice", Extra: scoped("namespace:a")}, "a", false},
		{"empty scope value admits nothing", &user.DefaultInfo{Name: "alice", Extra: scoped("")}, "a", false},
		{"service account in its cluster", sa("a"), "a", true},
		{"service account in another cluster", sa("a"), "b", false},
		{"service account with two clusters is foreign", sa("a", "b"), "a", false},
		{"service account without cluster is local", sa(), "b", true},
		{"service account in its cluster but scoped elsewhere", &user.DefaultInfo{Name: "system:serviceaccount:ns:x", Extra: map[string][]string{ServiceAccountClusterExtraKey: {"a"}, ScopeExtraKey: {"cluster:b"}}}, "a", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := InScope(tc.user, tc.cluster); got != tc.want {
				t.Errorf("InScope = %v, want %v", got, tc.want)
			}
		})
	}
}

// Out of scope an identity is kcp's plain authenticated user in the group
// system:cluster:<cluster> of each cluster it comes from.
func TestEffectiveOutOfScopeIsAPlainUserOfItsClusters(t *testing.T) {
	admin := &user.DefaultInfo{Name: "alice", Groups: []string{"system:kcp:admin", user.AllAuthenticated}, Extra: scoped("cluster:a")}
	if got := Effective(admin, "a"); got != admin {
		t.Errorf("in scope: %v, want the user itself", got)
	}
	want := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllAuthenticated, "system:cluster:a"}}
	if got := Effective(admin, "b"); !reflect.DeepEqual(got, want) {
		t.Errorf("out of scope: %+v, want %+v", got, want)
	}
	for _, tc := range []struct {
		name string
		u    user.Info
		want []string
	}{
		{"service account of a", &user.DefaultInfo{Name: "system:serviceaccount:ns:x", Groups: []string{user.AllAuthenticated}, Extra: map[string][]string{ServiceAccountClusterExtraKey: {"a"}}}, []string{user.AllAuthenticated, "system:cluster:a"}},
		{"alternatives", &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}, Extra: scoped("cluster:a,cluster:c")}, []string{user.AllAuthenticated, "system:cluster:a", "system:cluster:c"}},
		{"and'ed values keep what all admit", &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}, Extra: scoped("cluster:a,cluster:c", "cluster:c")}, []string{user.AllAuthenticated, "system:cluster:c"}},
		{"scopes that admit nothing together", &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}, Extra: scoped("cluster:a", "cluster:c")}, []string{user.AllAuthenticated}},
		{"service account scoped away from its cluster", &user.DefaultInfo{Name: "system:serviceaccount:ns:x", Groups: []string{user.AllAuthenticated}, Extra: map[string][]string{ServiceAccountClusterExtraKey: {"a"}, ScopeExtraKey: {"cluster:c"}}}, []string{user.AllAuthenticated}},
		{"unscoped user", &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}, []string{user.AllAuthenticated}},
	} {
		if got := OutOfScope(tc.u).GetGroups(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: groups %v, want %v", tc.name, got, tc.want)
		}
	}
	anon := &user.DefaultInfo{Name: "x", Groups: []string{"system:masters"}, Extra: scoped("cluster:a")}
	want = &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	if got := Effective(anon, "b"); !reflect.DeepEqual(got, want) {
		t.Errorf("unauthenticated out of scope: %+v, want %+v", got, want)
	}
}

func warrant(t *testing.T, w Warrant) string {
	t.Helper()
	raw, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestWarrantsSkipInvalidOnesAndUnscopedServiceAccounts(t *testing.T) {
	u := &user.DefaultInfo{Name: "alice", Extra: map[string][]string{WarrantExtraKey: {
		warrant(t, Warrant{User: "bob", Groups: []string{"g"}}),
		"{not json",
		warrant(t, Warrant{User: "system:serviceaccount:ns:sa"}),
		warrant(t, Warrant{User: "system:serviceaccount:ns:sa", Extra: map[string][]string{ServiceAccountClusterExtraKey: {"a"}}}),
	}}}
	got, errs := Warrants(u)
	if len(errs) != 2 {
		t.Errorf("errors %v, want 2", errs)
	}
	var names []string
	for _, w := range got {
		names = append(names, w.GetName())
	}
	if !reflect.DeepEqual(names, []string{"bob", "system:serviceaccount:ns:sa"}) {
		t.Errorf("warrants %v", names)
	}
}

func TestScopeToScopesTheUserAndItsWarrants(t *testing.T) {
	inner := warrant(t, Warrant{User: "carol"})
	u := &user.DefaultInfo{Name: "alice", Groups: []string{"g"}, UID: "1", Extra: map[string][]string{
		"other":         {"x"},
		ScopeExtraKey:   {"cluster:a,cluster:b"},
		WarrantExtraKey: {warrant(t, Warrant{User: "bob", Extra: map[string][]string{WarrantExtraKey: {inner}}}), "{bad"},
	}}
	s := ScopeTo(u, "b")
	if s.GetName() != "alice" || s.GetUID() != "1" || !reflect.DeepEqual(s.GetGroups(), []string{"g"}) || !reflect.DeepEqual(s.GetExtra()["other"], []string{"x"}) {
		t.Errorf("identity changed: %+v", s)
	}
	if got := s.GetExtra()[ScopeExtraKey]; !reflect.DeepEqual(got, []string{"cluster:a,cluster:b", "cluster:b"}) {
		t.Errorf("scopes %v", got)
	}
	if !reflect.DeepEqual(u.Extra[ScopeExtraKey], []string{"cluster:a,cluster:b"}) {
		t.Errorf("the original user was changed: %v", u.Extra[ScopeExtraKey])
	}
	for _, c := range []logicalcluster.Name{"a", "c"} {
		if InScope(s, c) {
			t.Errorf("scoped user is in scope in %s", c)
		}
	}
	ws, errs := Warrants(s)
	if len(ws) != 1 || len(errs) != 0 {
		t.Fatalf("warrants %v errors %v, want bob only", ws, errs)
	}
	if InScope(ws[0], "a") || !InScope(ws[0], "b") {
		t.Errorf("warrant bob not scoped to b: %v", ws[0].GetExtra())
	}
	nested, _ := Warrants(ws[0])
	if len(nested) != 1 || InScope(nested[0], "a") || !InScope(nested[0], "b") {
		t.Errorf("nested warrant not scoped to b: %v", nested)
	}
}

func TestGlobalServiceAccountNamesTheClusterAndKeepsOnlyScopes(t *testing.T) {
	account := &user.DefaultInfo{Name: "system:serviceaccount:ns:sa", Groups: []string{user.AllAuthenticated, "system:serviceaccounts", "system:serviceaccounts:ns"},
		Extra: map[string][]string{ServiceAccountClusterExtraKey: {"home"}, ScopeExtraKey: {"cluster:home"}, WarrantExtraKey: {`{"user":"bob"}`}}}
	g, ok := GlobalServiceAccount(account)
	if !ok || g.GetName() != "system:kcp:serviceaccount:home:ns:sa" || len(g.GetGroups()) != 1 || g.GetGroups()[0] != user.AllAuthenticated {
		t.Fatalf("global identity %+v, %v", g, ok)
	}
	if len(g.GetExtra()) != 1 || g.GetExtra()[ScopeExtraKey][0] != "cluster:home" {
		t.Errorf("extra %v, want the scopes only", g.GetExtra())
	}
	for _, u := range []user.Info{&user.DefaultInfo{Name: "system:serviceaccount:ns:sa"}, &user.DefaultInfo{Name: "alice", Extra: map[string][]string{ServiceAccountClusterExtraKey: {"home"}}}} {
		if _, ok := GlobalServiceAccount(u); ok {
			t.Errorf("%+v has a global identity", u)
		}
	}
}
