// Package e2esystem tests the whole system — shards and the front-proxy —
// started once per package by the project's launcher, as `make run-system`
// starts it.
package e2esystem

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/shardplane/shardplane/test/framework"
)

// sys is the system every test of the package shares.
var sys *framework.System

// shards is the number of shards of the shared system (root included).
var shards = 2

func TestMain(m *testing.M) {
	if v := os.Getenv("SHARDPLANE_E2E_SYSTEM_SHARDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "SHARDPLANE_E2E_SYSTEM_SHARDS must be a positive number")
			os.Exit(1)
		}
		shards = n
	}
	os.Exit(framework.RunWithSharedSystem(m, "e2e-system", framework.SharedSystemOptions{Shards: shards, FrontProxies: 2},
		func(s *framework.System) { sys = s }))
}
