package frontproxy

import (
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
)

func TestOnlyWorkspaceIssuedUsersPassAWorkspaceReview(t *testing.T) {
	scoped := map[string]authenticationv1.ExtraValue{"authentication.kcp.io/scopes": {"cluster:team"}}
	for name, tc := range map[string]struct {
		u    authenticationv1.UserInfo
		want bool
	}{
		"issuer user":           {authenticationv1.UserInfo{Username: "oidc:a", Groups: []string{"system:authenticated", "oidc:dev"}, Extra: scoped}, true},
		"unscoped (admin)":      {authenticationv1.UserInfo{Username: "kcp-admin", Groups: []string{"system:kcp:admin", "system:authenticated"}}, false},
		"other workspace scope": {authenticationv1.UserInfo{Username: "oidc:a", Extra: map[string]authenticationv1.ExtraValue{"authentication.kcp.io/scopes": {"cluster:other"}}}, false},
		"system group":          {authenticationv1.UserInfo{Username: "oidc:a", Groups: []string{"system:masters"}, Extra: scoped}, false},
		"system user":           {authenticationv1.UserInfo{Username: "system:admin", Extra: scoped}, false},
	} {
		if got := workspaceIssued(tc.u, "team"); got != tc.want {
			t.Errorf("%s: workspaceIssued = %v, want %v", name, got, tc.want)
		}
	}
}
