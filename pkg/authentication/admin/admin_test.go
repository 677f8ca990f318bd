package admin

import (
	"net/http"
	"slices"
	"testing"

	"github.com/shardplane/shardplane/pkg/rootdir"
)

func TestAdminTokensAuthenticateWithTheirGroups(t *testing.T) {
	a := Authenticator(rootdir.AdminTokens{KCPAdmin: "k", ShardAdmin: "s", LogicalClusterAdmin: "l"})
	for _, tc := range []struct {
		token, user, group string
		ok                 bool
	}{
		{"k", "kcp-admin", "system:kcp:admin", true},
		{"s", "shard-admin", "system:masters", true},
		{"l", "system:kcp:logical-cluster-admin", "system:kcp:logical-cluster-admin", true},
		{"nope", "", "", false},
		{"", "", "", false},
	} {
		req, _ := http.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("Authorization", "Bearer "+tc.token)
		resp, ok, _ := a.AuthenticateRequest(req)
		if ok != tc.ok {
			t.Errorf("token %q: authenticated %t, want %t", tc.token, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		u := resp.User
		if u.GetName() != tc.user || !slices.Contains(u.GetGroups(), tc.group) || !slices.Contains(u.GetGroups(), "system:authenticated") {
			t.Errorf("token %q: user %q groups %v, want %q in %q and system:authenticated", tc.token, u.GetName(), u.GetGroups(), tc.user, tc.group)
		}
	}
}
