package framework

import (
	"fmt"
	"os"
	"testing"
)

// SharedSystemOptions shape the system a test package shares.
type SharedSystemOptions struct {
	// Shards is the number of shards, root included (default 2).
	Shards int
	// FrontProxies is the number of front-proxies (default 1).
	FrontProxies int
	// VirtualWorkspaces runs a virtual-workspaces process per shard instead
	// of the shards' in-process views.
	VirtualWorkspaces bool
	// AfterTests, when set, runs after the tests while the system still
	// runs and its logs exist (they go with it); false fails the package.
	AfterTests func(*System) bool
}

// RunWithSharedSystem is the body of a TestMain whose tests share one
// system: it builds the binaries, starts the system (named after the
// package, for its temporary directory), hands it to set, runs the tests,
// prints the system's log tail when they fail and stops it. It returns the
// exit code for os.Exit.
func RunWithSharedSystem(m *testing.M, name string, o SharedSystemOptions, set func(*System)) int {
	defer RemoveBinary()
	if o.Shards == 0 {
		o.Shards = 2
	}
	dir, err := os.MkdirTemp("", "shardplane-"+name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv("SHARDPLANE_E2E_KEEP_LOGS") == "" {
		defer os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "SHARDPLANE_E2E_KEEP_LOGS: the system's logs stay in %s\n", dir)
	}
	commands := []string{"run-system", "shard", "front-proxy", "cache-server"}
	if o.VirtualWorkspaces {
		commands = append(commands, "virtual-workspaces")
	}
	binaries := map[string]string{}
	for _, c := range commands {
		if binaries[c], err = BuildCommand(c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	sys, err := NewSystem(dir, o.Shards, binaries["run-system"], binaries["shard"], binaries["front-proxy"], binaries["cache-server"], KCPTestTokenUsers()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sys.FrontProxies = max(1, o.FrontProxies)
	sys.VirtualWorkspacesBinary = binaries["virtual-workspaces"]
	if err := sys.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "start system: %v\n%s\n", err, sys.LogTail(60))
		return 1
	}
	set(sys)
	code := m.Run()
	if o.AfterTests != nil && !o.AfterTests(sys) && code == 0 {
		code = 1
	}
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
