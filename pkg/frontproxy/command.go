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
		Run: func(ctx context.Context) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(); err != nil {
				return err
			}
			s, err := New(ctx, o)
			if err != nil {
				return err
			}
			return s.Run(ctx)
		},
	})
	return cmd
}
