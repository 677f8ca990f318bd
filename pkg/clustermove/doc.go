// Package clustermove copies one logical cluster's stored objects from the
// etcd of one shard to the etcd of another and checks the copy.
//
// A logical cluster has no key prefix of its own: its objects are spread
// over every resource prefix (<group>/<resource>/<cluster>/..., see
// storage.SplitClusterKey). Dump reads them at one etcd revision, so that
// what it returns is a consistent snapshot; Sync makes the destination
// hold exactly those entries (writing what differs and deleting what the
// origin no longer has), so that a first bulk copy taken while the origin
// still accepts writes is completed by a second, short one taken while
// writes are held. Digest sums entries per resource (object count and a
// SHA-256 of keys and values), and Verify compares the origin's digests
// with the destination's before the origin may be cleaned.
//
// Values are copied as stored (protobuf for built-in kinds, JSON for kcp's
// kinds and custom resources): both shards decode them the same way, the
// objects keep their UIDs and their kcp.io/cluster annotation, and only
// their resource versions change, which are etcd revisions of the
// destination once read there.
package clustermove
