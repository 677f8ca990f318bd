// Command kubectl-ws is the kubectl plugin `kubectl ws`: it moves between
// workspaces by rewriting the kubeconfig, creates workspaces and prints the
// workspace tree.
package main

import (
	"os"

	"github.com/shardplane/shardplane/pkg/cliplugins/workspace"
)

func main() {
	cmd := workspace.NewWorkspaceCommand(workspace.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := cmd.Execute(); err != nil {
		os.Exit(1)
	}
}
