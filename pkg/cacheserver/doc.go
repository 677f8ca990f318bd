// Package cacheserver assembles the cache server: the API server through
// which shards share what a workspace on one shard needs from a workspace
// on another (APIExports, APIResourceSchemas, WorkspaceTypes, Shards, the
// RBAC that grants bind and use, and the CachedObject copies that
// ClusterCachedResources publish). Shards never read each other; each writes
// replicas of its own objects here and reads everybody's.
//
// URL space: /services/cache/shards/<shard>/clusters/<cluster>/apis/<group>/<version>/<resource>,
// where the shard and the cluster are those the replica came from; either
// may be * for list and watch (every other verb answers 405). A path
// without /shards/<shard>/clusters/<cluster> answers 400, except the
// process-wide /healthz, /livez, /readyz and /metrics.
//
// Storage: every replica is kept under
// /cache/<group or core>/<resource>/<shard>/<cluster>/[<namespace>/]<name>
// (the etcd prefix /cache is --etcd-prefix). The served kinds are
// schema-less copies: no validation beyond object metadata, no admission,
// no status subresource, no conversion (each kind is served in the one
// version shards replicate). A replica keeps the uid, creationTimestamp and
// generation its writer sent, and reads back with the annotations
// kcp.io/shard and kcp.io/cluster naming its origin.
//
// Access: system:masters may do everything; members of the writer groups
// (--writer-group, default system:kcp:cache-writers) may write and read;
// members of the reader groups (--reader-group, default
// system:kcp:cache-readers) may read; everybody else is refused (403), and
// the reason names the groups. Health endpoints are open to everyone.
//
// The server is a generic API server: Options -> Config -> Server as the
// shard. Its handler (Server.Handler) is the whole chain from path parsing
// to storage, so a shard can mount it in-process below /services/cache/
// with its etcd and authenticator (NewEmbeddedConfig). What its clients
// share with it (kinds, shard names, URLs) is package cacheclient.
package cacheserver
