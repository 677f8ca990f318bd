package workspace

import (
	goflag "flag"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

const wsExample = `  # print the workspace you are in
  kubectl ws .

  # enter a workspace below the current one (rewrites the kubeconfig's current context)
  kubectl ws use my-workspace
  kubectl ws my-workspace

  # enter a workspace by its absolute path
  kubectl ws :root:org:team

  # enter the top-level workspace of the current path
  kubectl ws :

  # enter the parent, the grandparent
  kubectl ws ..
  kubectl ws ..:..

  # go back to the previous workspace
  kubectl ws -

  # go to your home workspace
  kubectl ws

  # create a workspace and enter it once it is ready
  kubectl ws create my-workspace --enter

  # print the workspaces below the current one
  kubectl ws tree`

// NewWorkspaceCommand returns `kubectl ws`.
func NewWorkspaceCommand(streams IOStreams) *cobra.Command {
	opts := NewOptions(streams)
	use := &UseOptions{Options: opts}

	cmd := &cobra.Command{
		Use:          "kubectl-ws [use|create|tree|current|<workspace>|..|.|-|~|:<absolute:path>]",
		Short:        "Moves between, creates and lists kcp workspaces",
		Example:      wsExample,
		Args:         cobra.MaximumNArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			arg := ""
			if len(args) == 1 {
				arg = args[0]
			}
			return use.Use(cmd.Context(), arg)
		},
	}
	// A workspace may be called "completion"; kcp's plugin has no such command.
	cmd.CompletionOptions.DisableDefaultCmd = true
	opts.AddFlags(cmd.PersistentFlags())
	cmd.PersistentFlags().BoolVar(&use.Short, "short", false, "Print only the path of the workspace, e.g. for a shell prompt.")
	addKlogFlags(cmd)

	cmd.AddCommand(&cobra.Command{
		Use:          "use <workspace>|..|.|-|~|:<absolute:path>|<relative:path>",
		Aliases:      []string{"cd"},
		Short:        "Makes the given workspace the current one: - is the previous workspace, .. the parent, . the current one, ~ your home",
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return use.Use(cmd.Context(), args[0])
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:          "current",
		Short:        "Prints the current workspace. Same as 'kubectl ws .'.",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return use.Use(cmd.Context(), ".")
		},
	})

	tree := &TreeOptions{Options: opts}
	treeCmd := &cobra.Command{
		Use:          "tree",
		Short:        "Prints the tree of workspaces below the current one.",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return tree.Tree(cmd.Context())
		},
	}
	treeCmd.Flags().BoolVarP(&tree.Full, "full", "f", false, "Print full workspace paths.")
	cmd.AddCommand(treeCmd)

	create := &CreateOptions{Options: opts, ReadyTimeout: DefaultReadyTimeout}
	createCmd := newCreateCommand("create <name>", create)
	createCmd.PreRun = func(*cobra.Command, []string) { create.Short = use.Short }
	cmd.AddCommand(createCmd)
	return cmd
}

// NewCreateWorkspaceCommand returns `kubectl create workspace`.
func NewCreateWorkspaceCommand(streams IOStreams) *cobra.Command {
	opts := NewOptions(streams)
	create := &CreateOptions{Options: opts, ReadyTimeout: DefaultReadyTimeout}
	cmd := newCreateCommand("kubectl-create-workspace <name>", create)
	cmd.Example = "  kubectl create workspace my-workspace [--type=<type>] [--enter] [--ignore-existing]"
	opts.AddFlags(cmd.PersistentFlags())
	addKlogFlags(cmd)
	return cmd
}

func newCreateCommand(use string, create *CreateOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:          use,
		Short:        "Creates a workspace in the current one and waits until it is ready",
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return create.Create(cmd.Context(), args[0])
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&create.Type, "type", "", "The workspace type, name or path:name (e.g. root:team). By default the parent's type decides.")
	fs.BoolVar(&create.Enter, "enter", false, "Enter the workspace once it is ready.")
	fs.BoolVar(&create.IgnoreExisting, "ignore-existing", false, "Succeed if the workspace exists already. --type must then be absolute (root:...).")
	fs.DurationVar(&create.ReadyTimeout, "ready-timeout", create.ReadyTimeout, "How long to wait for the workspace to become ready; 0 fails at once when it is not.")
	return cmd
}

// addKlogFlags adds klog's -v, the verbosity of client-go's request
// logging (-v=6 shows every request).
func addKlogFlags(cmd *cobra.Command) {
	fs := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(fs)
	cmd.PersistentFlags().AddFlag(pflag.PFlagFromGoFlag(fs.Lookup("v")))
}
