// Package e2ereplication tests what travels between shards through the
// cache server: exports bound, types used and bind permission revoked
// across shards, and the cache server killed and wiped under a running
// system. The package starts its own system (root shard, one more shard,
// the cache server, a front-proxy) because it kills the cache server.
package e2ereplication

import (
	"os"
	"testing"

	"github.com/shardplane/shardplane/test/framework"
)

// sys is the system every test of the package shares.
var sys *framework.System

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithSharedSystem(m, "e2e-replication", framework.SharedSystemOptions{}, func(s *framework.System) { sys = s }))
}
