package workspaceauth

import (
	"errors"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
)

// errSystemUsername refuses a token whose mapped username is a system one,
// as kcp does.
var errSystemUsername = errors.New("system usernames are not admitted")

// restrict makes a user of a workspace issuer harmless outside its
// workspace, as kcp does: a system: username is refused, system: groups and
// extras whose key contains "kcp.io" (scopes, warrants, cluster names) are
// dropped, and the user is scoped to the workspace, so elsewhere it is a
// plain authenticated user.
func restrict(resp *authenticator.Response, cluster logicalcluster.Name) (*authenticator.Response, error) {
	u := resp.User
	if strings.HasPrefix(u.GetName(), "system:") {
		return nil, errSystemUsername
	}
	groups := []string{user.AllAuthenticated}
	for _, g := range u.GetGroups() {
		if !strings.HasPrefix(g, "system:") && !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	extra := map[string][]string{}
	for k, v := range u.GetExtra() {
		if !strings.Contains(k, "kcp.io") {
			extra[k] = v
		}
	}
	scoped := scope.ScopeTo(&user.DefaultInfo{Name: u.GetName(), UID: u.GetUID(), Groups: groups, Extra: extra}, cluster)
	return &authenticator.Response{User: scoped, Audiences: resp.Audiences}, nil
}
