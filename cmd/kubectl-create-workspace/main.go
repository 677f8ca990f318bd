// Command kubectl-create-workspace is the kubectl plugin
// `kubectl create workspace <name>`: it creates a workspace in the current
// one and waits until it is ready.
package main

import (
	"os"

	"github.com/shardplane/shardplane/pkg/cliplugins/workspace"
)

func main() {
	cmd := workspace.NewCreateWorkspaceCommand(workspace.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
