package impersonation

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/shardplane/shardplane/pkg/scope"
)

func TestImpersonatingPrivilegedGroupsRequiresMembership(t *testing.T) {
	admin := &user.DefaultInfo{Name: "ws-admin", Groups: []string{"team", user.AllAuthenticated}}
	kcpAdmin := &user.DefaultInfo{Name: "kcp-admin", Groups: []string{"system:kcp:admin", user.AllAuthenticated}}
	masters := &user.DefaultInfo{Name: "root", Groups: []string{user.SystemPrivilegedGroup}}
	anonymous := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	groups := func(u user.Info, verb, group string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, Resource: "groups", Name: group, ResourceRequest: true}
	}
	withGroup := func(a authorizer.AttributesRecord, apiGroup string) authorizer.AttributesRecord {
		a.APIGroup = apiGroup
		return a
	}
	warrantOf := func(groups ...string) string {
		raw, _ := json.Marshal(scope.Warrant{User: "w", Groups: groups})
		return string(raw)
	}
	extra := func(u user.Info, key, value string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: "impersonate", APIGroup: "authentication.k8s.io", Resource: "userextras", Subresource: key, Name: value, ResourceRequest: true}
	}
	nested, _ := json.Marshal(scope.Warrant{User: "w", Extra: map[string][]string{scope.WarrantExtraKey: {warrantOf(user.SystemPrivilegedGroup)}}})
	for _, tc := range []struct {
		name string
		attr authorizer.AttributesRecord
		deny bool
	}{
		{"system:masters by a workspace admin", groups(admin, "impersonate", user.SystemPrivilegedGroup), true},
		{"system:masters through constrained impersonation", groups(admin, "impersonate:user-info", user.SystemPrivilegedGroup), true},
		{"system:kcp:admin through constrained impersonation", withGroup(groups(admin, "impersonate:user-info", "system:kcp:admin"), "authentication.k8s.io"), true},
		{"system:kcp:admin by a workspace admin", groups(admin, "impersonate", "system:kcp:admin"), true},
		{"system:kcp:logical-cluster-admin by a workspace admin", groups(admin, "impersonate", "system:kcp:logical-cluster-admin"), true},
		{"any system:kcp: group by a workspace admin", groups(admin, "impersonate", "system:kcp:initializer:root:x"), true},
		{"every group at once", groups(admin, "impersonate:user-info", "*"), true},
		{"system:authenticated by an anonymous user", groups(anonymous, "impersonate", user.AllAuthenticated), true},
		{"system:authenticated by an authenticated user", groups(admin, "impersonate", user.AllAuthenticated), false},
		{"an ordinary group", groups(admin, "impersonate", "team-2"), false},
		{"system:kcp:admin by its member", groups(kcpAdmin, "impersonate", "system:kcp:admin"), false},
		{"system:masters by system:kcp:admin", groups(kcpAdmin, "impersonate", user.SystemPrivilegedGroup), true},
		{"system:kcp:logical-cluster-admin by system:kcp:admin", groups(kcpAdmin, "impersonate", "system:kcp:logical-cluster-admin"), true},
		{"anything by system:masters", groups(masters, "impersonate", "system:kcp:logical-cluster-admin"), false},
		{"a warrant with system:masters", extra(admin, scope.WarrantExtraKey, warrantOf(user.SystemPrivilegedGroup)), true},
		{"a warrant nesting system:masters", extra(admin, scope.WarrantExtraKey, string(nested)), true},
		{"a warrant with ordinary groups", extra(admin, scope.WarrantExtraKey, warrantOf("team-2")), false},
		{"all extras at once", extra(admin, "*", "*"), true},
		{"an ordinary extra", extra(admin, "example.com/x", "y"), false},
		{"not impersonation", authorizer.AttributesRecord{User: admin, Verb: "get", Resource: "groups", Name: user.SystemPrivilegedGroup, ResourceRequest: true}, false},
		{"groups of another API group", authorizer.AttributesRecord{User: admin, Verb: "impersonate", APIGroup: "example.com", Resource: "groups", Name: user.SystemPrivilegedGroup, ResourceRequest: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason, err := Authorizer{}.Authorize(context.Background(), tc.attr)
			if err != nil {
				t.Fatal(err)
			}
			if tc.deny {
				if got != authorizer.DecisionDeny || !strings.HasPrefix(reason, NotAllowed) {
					t.Errorf("got %v %q, want a denial starting with %q", got, reason, NotAllowed)
				}
			} else if got != authorizer.DecisionNoOpinion {
				t.Errorf("got %v %q, want no opinion", got, reason)
			}
		})
	}
}
