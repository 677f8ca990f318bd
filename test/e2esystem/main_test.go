// Package e2esystem tests the whole system — shards and the front-proxy —
// started once per package by the project's launcher, as `make run-system`
// starts it.
package e2esystem

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/kplane-dev/kplane/test/e2e/framework"
)

// sys is the system every test of the package shares.
var sys *framework.System

// shards is the number of shards of the shared system (root included).
var shards = 2

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	defer framework.RemoveBinary()
	if v := os.Getenv("KPLANE_E2E_SYSTEM_SHARDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "KPLANE_E2E_SYSTEM_SHARDS must be a positive number")
			return 1
		}
		shards = n
	}
	dir, err := os.MkdirTemp("", "kplane-e2e-system-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binaries := map[string]string{}
	for _, name := range []string{"run-system", "shard", "front-proxy", "cache-server"} {
		if binaries[name], err = framework.BuildCommand(name); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	users := framework.KCPTestTokenUsers()
	sys, err = framework.NewSystem(dir, shards, binaries["run-system"], binaries["shard"], binaries["front-proxy"], binaries["cache-server"], users...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sys.FrontProxies = 2
	if err := sys.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "start system: %v\n%s\n", err, sys.LogTail(60))
		return 1
	}
	code := m.Run()
	if err := sys.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop system:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
