package workspaceauth

import (
	"slices"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
)

func TestRestrictStripsSystemGroupsAndKcpExtrasAndScopes(t *testing.T) {
	in := &authenticator.Response{User: &user.DefaultInfo{
		Name:   "oidc:alice",
		Groups: []string{"system:masters", "system:kcp:admin", "oidc:dev"},
		Extra: map[string][]string{
			scope.ScopeExtraKey:                 {"cluster:other"},
			scope.ServiceAccountClusterExtraKey: {"other"},
			"example.com/team":                  {"a"},
		},
	}}
	out, err := restrict(in, logicalcluster.Name("team"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.User.GetGroups(), []string{user.AllAuthenticated, "oidc:dev"}; !slices.Equal(got, want) {
		t.Errorf("groups %v, want %v", got, want)
	}
	extra := out.User.GetExtra()
	if got, want := extra[scope.ScopeExtraKey], []string{"cluster:team"}; !slices.Equal(got, want) {
		t.Errorf("scopes %v, want %v", got, want)
	}
	if _, ok := extra[scope.ServiceAccountClusterExtraKey]; ok {
		t.Errorf("cluster-name extra kept: %v", extra)
	}
	if got := extra["example.com/team"]; !slices.Equal(got, []string{"a"}) {
		t.Errorf("other extra %v, want [a]", got)
	}
}

func TestRestrictRefusesSystemUsernames(t *testing.T) {
	if _, err := restrict(&authenticator.Response{User: &user.DefaultInfo{Name: "system:admin"}}, "team"); err == nil {
		t.Error("system:admin admitted")
	}
}
