// Package admin authenticates the administrators whose tokens a process
// keeps in its root directory: the users of admin.kubeconfig and the
// shard's own logical-cluster-admin identity.
package admin

import (
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/rootdir"
)

// Authenticator accepts the admin tokens: kcp-admin (system:kcp:admin),
// shard-admin (system:masters) and the logical-cluster-admin identity.
func Authenticator(t rootdir.AdminTokens) authenticator.Request {
	tokens := tokenfile.New(map[string]*user.DefaultInfo{
		t.KCPAdmin:            {Name: identities.KCPAdminUser, Groups: []string{identities.KCPAdminGroup}},
		t.ShardAdmin:          {Name: identities.ShardAdminUser, Groups: []string{user.SystemPrivilegedGroup}},
		t.LogicalClusterAdmin: {Name: identities.LogicalClusterAdminUser, Groups: []string{identities.LogicalClusterAdminGroup}},
	})
	return group.NewAuthenticatedGroupAdder(bearertoken.New(tokens))
}
