// Package servercmd builds the command line of the project's servers
// (shard, front-proxy, cache-server) the way Kubernetes' servers have it:
// flags grouped by topic in --help, --version, the logging flags and
// feature gates, no positional arguments, and a context that ends on
// SIGTERM or SIGINT; and what their Run functions share (ProcessDefaults,
// StopCause).
package servercmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	genericapiserver "k8s.io/apiserver/pkg/server"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"

	"github.com/shardplane/shardplane/pkg/panics"
)

func init() {
	utilruntime.Must(logsapi.AddFeatureGates(utilfeature.DefaultMutableFeatureGate))
}

// Server describes one server binary.
type Server struct {
	// Use and Short name and describe the command.
	Use, Short string
	// AddFlags registers the server's flags by topic.
	AddFlags func(*cliflag.NamedFlagSets)
	// Logs are the logging options among those flags; they are applied
	// before Run.
	Logs *logsapi.LoggingConfiguration
	// Run serves until ctx ends.
	Run func(ctx context.Context) error
}

// New returns the command of s and its flag sets, for subcommands that take
// the same flags (see Alias).
func New(s Server) (*cobra.Command, cliflag.NamedFlagSets) {
	cmd := &cobra.Command{
		Use:          s.Use,
		Short:        s.Short,
		SilenceUsage: true,
		RunE: func(*cobra.Command, []string) error {
			verflag.PrintAndExitIfRequested()
			if err := logsapi.ValidateAndApply(s.Logs, utilfeature.DefaultFeatureGate); err != nil {
				return err
			}
			// Upstream's panic log would repeat every panic our handlers
			// recover and log once a minute per site.
			panics.SilenceRecoveredCrashLogs()
			return s.Run(genericapiserver.SetupSignalContext())
		},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("%q takes no arguments, got %q", cmd.CommandPath(), args)
			}
			return nil
		},
	}
	var fss cliflag.NamedFlagSets
	s.AddFlags(&fss)
	verflag.AddFlags(fss.FlagSet("global"))
	globalflag.AddGlobalFlags(fss.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	for _, f := range fss.FlagSets {
		cmd.Flags().AddFlagSet(f)
	}
	setHelp(cmd, fss)
	return cmd, fss
}

// Alias adds a subcommand of cmd that does what cmd does, with its flags.
func Alias(cmd *cobra.Command, fss cliflag.NamedFlagSets, use, short string) {
	sub := &cobra.Command{Use: use, Short: short, SilenceUsage: true, RunE: cmd.RunE, Args: cmd.Args}
	for _, f := range fss.FlagSets {
		sub.Flags().AddFlagSet(f)
	}
	setHelp(sub, fss)
	cmd.AddCommand(sub)
}

func setHelp(cmd *cobra.Command, fss cliflag.NamedFlagSets) {
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, fss, cols)
}
