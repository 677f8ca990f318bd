package frontproxy

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/shardplane/shardplane/pkg/servercmd"
)

// NewCommand returns the front-proxy command.
func NewCommand() *cobra.Command {
	o := NewOptions()
	cmd, _ := servercmd.New(servercmd.Server{
		Use:      "front-proxy",
		Short:    "Route requests for workspaces to the shards that serve them",
		AddFlags: o.AddFlags,
		Logs:     o.Logs,
		Run:      func(ctx context.Context) error { return Run(ctx, o) },
	})
	return cmd
}
