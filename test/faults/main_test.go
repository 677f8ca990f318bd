// Package faults kills the system's processes under load and checks that
// nothing acknowledged is lost and that nobody is told a wrong 403 or 404
// meanwhile. The lean cases run with `make test`; the faults build tag
// (`make test-faults`) adds the heavy ones: every process killed in
// turn, an external etcd that disappears, a 3-member etcd losing its
// leader.
package faults

import (
	"os"
	"testing"

	"github.com/shardplane/shardplane/test/framework"
)

// sys is the system every test of the package shares; the tests kill its
// processes, so they do not run in parallel.
var sys *framework.System

// long tells whether the heavy cases run: the faults build tag (make
// test-faults) sets it.
var long bool

func TestMain(m *testing.M) {
	os.Exit(framework.RunWithSharedSystem(m, "faults", framework.SharedSystemOptions{}, func(s *framework.System) { sys = s }))
}
