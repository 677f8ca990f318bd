package cacheserver

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/shardplane/shardplane/pkg/servercmd"
)

// NewCommand returns the cache-server command.
func NewCommand() *cobra.Command {
	o := NewOptions()
	cmd, _ := servercmd.New(servercmd.Server{
		Use:      "cache-server",
		Short:    "Keep the replicas shards share: what a workspace on one shard needs from a workspace on another",
		AddFlags: o.AddFlags,
		Logs:     o.Logs,
		Run:      func(ctx context.Context) error { return Run(ctx, o) },
	})
	return cmd
}
