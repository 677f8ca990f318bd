// Package e2evirtual tests the virtual workspaces with real processes: a
// system of two shards, each with its own virtual-workspaces process, the
// cache server and a front-proxy that routes /services/ and
// /shards/<shard>/ to them.
package e2evirtual

import (
	"os"
	"testing"

	"github.com/shardplane/shardplane/test/framework"
)

// sys is the system every test of the package shares.
var sys *framework.System

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithSharedSystem(m, "e2e-virtual", framework.SharedSystemOptions{VirtualWorkspaces: true},
		func(s *framework.System) { sys = s }))
}
