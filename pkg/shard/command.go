package shard

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	_ "k8s.io/component-base/metrics/prometheus/workqueue" // workqueue metrics
	_ "k8s.io/kubernetes/pkg/features"                     // Kubernetes feature gates

	"github.com/shardplane/shardplane/pkg/servercmd"
)

// NewCommand returns the shard command.
func NewCommand() *cobra.Command {
	o := NewOptions()
	cmd, fss := servercmd.New(servercmd.Server{
		Use:      "shard",
		Short:    "Serve many logical clusters (workspaces) from one etcd",
		AddFlags: o.AddFlags,
		Logs:     o.ControlPlane.Logs,
		Run: func(ctx context.Context) error {
			// The shard's own loopback clients should not log warnings it issued.
			rest.SetDefaultWarningHandler(rest.NoWarnings{})
			return Run(ctx, o)
		},
	})
	// `shard start [flags]` is `shard [flags]`, so command lines and test
	// harnesses written for `kcp start` run the shard unchanged.
	servercmd.Alias(cmd, fss, "start", "Start the shard (the same as running shard without a subcommand, as `kcp start`)")
	return cmd
}
