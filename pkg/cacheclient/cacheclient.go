// Package cacheclient is what a client of the cache server needs to know:
// the kinds shards replicate (Kinds), how a shard is named, the annotation
// that records a replica's shard, and the URL of the replicas of one shard
// and one logical cluster. The server itself is package cacheserver;
// shards' controllers and informers import only this package.
package cacheclient

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

const (
	// ServicePrefix starts every URL of the cache server's API.
	ServicePrefix = "/services/cache"
	// ShardsPrefix follows ServicePrefix: /services/cache/shards/<shard>/...
	ShardsPrefix = "/shards/"
	// ShardAnnotationKey names the shard a replica came from; the cache
	// server sets it (with kcp.io/cluster) on every object it stores.
	ShardAnnotationKey = "kcp.io/shard"
)

// Shard names the shard a replica came from: a shard name, or
// WildcardShard for all shards (list and watch only).
type Shard string

// WildcardShard addresses the replicas of all shards.
const WildcardShard Shard = "*"

// IsWildcard tells whether s addresses all shards.
func (s Shard) IsWildcard() bool { return s == WildcardShard }

// shardName is kcp's shape of a shard name in a cache server path.
var shardName = regexp.MustCompile(`^[a-z0-9-:]{1,61}$`)

// ValidateShard returns an error a user can act on when s is neither a
// shard name nor the wildcard.
func ValidateShard(s string) error {
	if s == string(WildcardShard) || shardName.MatchString(s) {
		return nil
	}
	return fmt.Errorf("invalid shard %q: must be * or 1 to 61 lower-case alphanumerics, '-' or ':'", s)
}

// Path returns the URL path of the API of the replicas of one shard and one
// logical cluster (either may be the wildcard):
// /services/cache/shards/<shard>/clusters/<cluster>.
func Path(shard Shard, cluster logicalcluster.Name) string {
	return ServicePrefix + ShardsPrefix + string(shard) + cluster.RequestPath()
}

// URL returns base (a server URL, with or without a trailing slash)
// followed by Path(shard, cluster): the host of a client that reads or
// writes those replicas.
func URL(base string, shard Shard, cluster logicalcluster.Name) string {
	return strings.TrimSuffix(base, "/") + Path(shard, cluster)
}
