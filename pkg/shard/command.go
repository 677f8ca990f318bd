package shard

import (
	"fmt"

	"github.com/spf13/cobra"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	genericapiserver "k8s.io/apiserver/pkg/server"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/metrics/prometheus/workqueue" // workqueue metrics
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"
	_ "k8s.io/kubernetes/pkg/features" // Kubernetes feature gates
)

func init() {
	utilruntime.Must(logsapi.AddFeatureGates(utilfeature.DefaultMutableFeatureGate))
}

// NewCommand returns the shard command.
func NewCommand() *cobra.Command {
	o := NewOptions()
	cmd := &cobra.Command{
		Use:          "shard",
		Short:        "Serve many logical clusters (workspaces) from one etcd",
		SilenceUsage: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			// The shard's own loopback clients should not log warnings it issued.
			rest.SetDefaultWarningHandler(rest.NoWarnings{})
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			verflag.PrintAndExitIfRequested()
			if err := logsapi.ValidateAndApply(o.ControlPlane.Logs, utilfeature.DefaultFeatureGate); err != nil {
				return err
			}
			return Run(genericapiserver.SetupSignalContext(), o)
		},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%q takes no arguments, got %q", cmd.CommandPath(), args)
			}
			return nil
		},
	}

	var fss cliflag.NamedFlagSets
	o.AddFlags(&fss)
	verflag.AddFlags(fss.FlagSet("global"))
	globalflag.AddGlobalFlags(fss.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	for _, f := range fss.FlagSets {
		cmd.Flags().AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)

	// `shard start [flags]` is `shard [flags]`, so command lines and test
	// harnesses written for `kcp start` run the shard unchanged.
	start := &cobra.Command{
		Use:          "start",
		Short:        "Start the shard (the same as running shard without a subcommand, as `kcp start`)",
		SilenceUsage: true,
		RunE:         cmd.RunE,
		Args:         cmd.Args,
	}
	for _, f := range fss.FlagSets {
		start.Flags().AddFlagSet(f)
	}
	cliflag.SetUsageAndHelpFunc(start, fss, cols)
	cmd.AddCommand(start)
	return cmd
}
