// Package e2evirtual tests the virtual workspaces with real processes: a
// system of two shards, each with its own virtual-workspaces process, the
// cache server and a front-proxy that routes /services/ and
// /shards/<shard>/ to them.
package e2evirtual

import (
	"fmt"
	"os"
	"testing"

	"github.com/kplane-dev/kplane/test/e2e/framework"
)

// sys is the system every test of the package shares.
var sys *framework.System

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	defer framework.RemoveBinary()
	dir, err := os.MkdirTemp("", "kplane-e2e-virtual-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binaries := map[string]string{}
	for _, name := range []string{"run-system", "shard", "front-proxy", "cache-server", "virtual-workspaces"} {
		if binaries[name], err = framework.BuildCommand(name); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	sys, err = framework.NewSystem(dir, 2, binaries["run-system"], binaries["shard"], binaries["front-proxy"], binaries["cache-server"], framework.KCPTestTokenUsers()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	args := sys.Args
	sys.Args = func() []string { return append(args(), "--virtual-workspaces-binary="+binaries["virtual-workspaces"]) }
	if err := sys.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "start system: %v\n%s\n", err, sys.LogTail(60))
		return 1
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "system logs:\n%s\n", sys.LogTail(80))
	}
	if err := sys.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stop system:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
