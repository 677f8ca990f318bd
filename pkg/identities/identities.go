// Package identities names the privileged groups and the system users of kcp
// and of shardplane's own processes: the one place that spells them, for
// authentication (who is given them), authorization (what they may do), the
// front-proxy (which of them never come from outside) and the launcher (which
// credentials it writes). Kubernetes' own names (system:masters,
// system:authenticated, system:serviceaccount:, ...) are upstream's constants
// in k8s.io/apiserver/pkg/authentication/user and .../serviceaccount and are
// not repeated here.
package identities

import (
	"slices"

	"k8s.io/apiserver/pkg/authentication/user"
)

// Groups kcp's authorizers trust. The front-proxy drops the ones a shard
// grants only to itself before a request reaches a shard, and impersonating
// any of them requires membership (pkg/authorization/impersonation).
const (
	// KCPGroupPrefix prefixes every group kcp defines; impersonating a group
	// under it requires being in that group.
	KCPGroupPrefix = "system:kcp:"

	// KCPAdminGroup is cluster-admin in every logical cluster the user may
	// enter (kcp's system:kcp:admin, the group of kcp-admin), bounded only by
	// the maximal permission policies of bound APIs.
	KCPAdminGroup = "system:kcp:admin"

	// LogicalClusterAdminGroup may create, update and delete LogicalClusters
	// and write their status: the workspace scheduler of a parent
	// workspace's shard acts in it on the child's shard (kcp's
	// --logical-cluster-admin-kubeconfig identity). Dropped by the
	// front-proxy.
	LogicalClusterAdminGroup = "system:kcp:logical-cluster-admin"

	// ExternalLogicalClusterAdminGroup is kcp's group for the same work done
	// through the front-proxy (--external-logical-cluster-admin-kubeconfig).
	// Shards grant it nothing of their own; the front-proxy drops it so that
	// no outside identity arrives carrying it.
	ExternalLogicalClusterAdminGroup = "system:kcp:external-logical-cluster-admin"

	// InitializerGroupPrefix prefixes the group of an initializer,
	// system:kcp:initializer:<initializer>, which enters the logical clusters
	// still waiting for it; only the initializing and terminating views grant
	// it, and the front-proxy drops it from outside identities.
	InitializerGroupPrefix = "system:kcp:initializer:"

	// TerminatorGroupPrefix prefixes the group of a terminator,
	// system:kcp:terminator:<terminator>, as InitializerGroupPrefix does for
	// initializers.
	TerminatorGroupPrefix = "system:kcp:terminator:"

	// CacheWriterGroup is the cache server's default writer group: its
	// members (the shards) may write replicas and read everything there.
	CacheWriterGroup = "system:kcp:cache-writers"

	// CacheReaderGroup is the cache server's default reader group: its
	// members may read replicas without writing them.
	CacheReaderGroup = "system:kcp:cache-readers"
)

// Users that processes create credentials for.
const (
	// KCPAdminUser is the user of admin.kubeconfig's kcp-admin token, in
	// KCPAdminGroup; kcp's name, which its tools and test harnesses expect.
	KCPAdminUser = "kcp-admin"

	// ShardAdminUser is the user of admin.kubeconfig's shard-admin token, in
	// system:masters: it may do anything on its shard, wildcard requests
	// across logical clusters included. kcp's name.
	ShardAdminUser = "shard-admin"

	// SystemAdminUser is the launcher's (pkg/system) system:masters user,
	// shared by every process it starts to reach the shards and the cache
	// server directly.
	SystemAdminUser = "system-admin"

	// LogicalClusterAdminUser is the user of a shard's
	// LogicalClusterAdminGroup token; it bears the group's name.
	LogicalClusterAdminUser = LogicalClusterAdminGroup

	// CacheWriterUser is the common name of the client certificate a cache
	// server issues in CacheWriterGroup for the shards.
	CacheWriterUser = "system:kcp:cache-writer"

	// FrontProxyUser is the common name of the front-proxy's client
	// certificate: the shards accept request headers (user, groups) only from
	// it (--requestheader-allowed-names), so it may assert any identity.
	FrontProxyUser = "front-proxy"

	// ShardForwarderUser is the common name of the client certificate
	// (system:masters) a shard forwards /services/ to its virtual-workspaces
	// server with, impersonating the caller.
	ShardForwarderUser = "shardplane-shard-forwarder"
)

// SystemGroups are the groups of the system's own identities: only the
// operator and the shards hold them (the front-proxy drops them from
// outside identities, workspace issuers may not mint them).
var SystemGroups = []string{
	KCPAdminGroup, LogicalClusterAdminGroup, ExternalLogicalClusterAdminGroup,
	CacheWriterGroup, CacheReaderGroup,
}

// IsSystem tells whether u is one of the system's own identities, the
// operator's included: in system:masters or in a group of SystemGroups.
func IsSystem(u user.Info) bool {
	return slices.ContainsFunc(u.GetGroups(), func(g string) bool {
		return g == user.SystemPrivilegedGroup || slices.Contains(SystemGroups, g)
	})
}

// IsShard tells whether u is a shard or the launcher acting as itself (in
// system:masters or LogicalClusterAdminGroup), not an operator.
func IsShard(u user.Info) bool {
	return slices.ContainsFunc(u.GetGroups(), func(g string) bool {
		return g == user.SystemPrivilegedGroup || g == LogicalClusterAdminGroup
	})
}
