// Package workspace implements the kubectl plugins `kubectl ws` and
// `kubectl create workspace`: moving between workspaces by rewriting the
// kubeconfig's server URL (<base>/clusters/<path>), creating workspaces and
// printing the workspace tree. Its output and the kubeconfig entries it
// writes (contexts workspace.kcp.io/current and workspace.kcp.io/previous)
// are those of kcp's plugin, so that scripts written for kcp keep working.
package workspace

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// IOStreams are where a command reads and writes.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Options are the connection settings every command shares: the kubeconfig
// and kubectl's overrides (--context, --user, --server, ...).
type Options struct {
	IOStreams

	// Kubeconfig is the --kubeconfig flag; when empty, KUBECONFIG or
	// ~/.kube/config are used, as kubectl does.
	Kubeconfig string
	// Overrides are kubectl's connection flags.
	Overrides clientcmd.ConfigOverrides

	// HomeDir returns the user's home directory, to read a shell-expanded ~
	// back as ~.
	HomeDir func() (string, error)

	loadingRules   *clientcmd.ClientConfigLoadingRules
	startingConfig *clientcmdapi.Config
	clientConfig   clientcmd.ClientConfig
}

// NewOptions returns Options that write to streams.
func NewOptions(streams IOStreams) *Options {
	return &Options{IOStreams: streams, HomeDir: os.UserHomeDir}
}

// AddFlags adds --kubeconfig and kubectl's connection overrides to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to the kubeconfig file to use and update.")
	flags := clientcmd.RecommendedConfigOverrideFlags("")
	// Flags that make no sense for switching workspaces are left out.
	flags.ContextOverrideFlags.ClusterName.LongName = ""
	flags.AuthOverrideFlags.Impersonate.LongName = ""
	flags.AuthOverrideFlags.ImpersonateUID.LongName = ""
	flags.AuthOverrideFlags.ImpersonateGroups.LongName = ""
	flags.Timeout.LongName = ""
	clientcmd.BindOverrideFlags(&o.Overrides, fs, flags)
}

// Complete loads the kubeconfig.
func (o *Options) Complete() error {
	if o.clientConfig != nil {
		return nil
	}
	o.loadingRules = clientcmd.NewDefaultClientConfigLoadingRules()
	o.loadingRules.ExplicitPath = o.Kubeconfig
	cfg, err := o.loadingRules.GetStartingConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	o.startingConfig = cfg
	o.clientConfig = clientcmd.NewDefaultClientConfig(*cfg, &o.Overrides)
	return nil
}

// contextName is the context the command acts as: --context or the
// kubeconfig's current context.
func (o *Options) contextName() string {
	if o.Overrides.CurrentContext != "" {
		return o.Overrides.CurrentContext
	}
	return o.startingConfig.CurrentContext
}

// restConfig returns the client configuration of the current context.
func (o *Options) restConfig() (*rest.Config, error) {
	cfg, err := o.clientConfig.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}

// current returns the client configuration and the parsed server URL of
// the current context.
func (o *Options) current() (*rest.Config, ServerURL, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, ServerURL{}, err
	}
	u, err := ParseServerURL(cfg.Host)
	if err != nil {
		return nil, ServerURL{}, err
	}
	return cfg, u, nil
}

// writeConfig stores config in the kubeconfig file(s) it was loaded from.
// Entries that did not change are not rewritten.
func (o *Options) writeConfig(config *clientcmdapi.Config) error {
	if err := clientcmd.ModifyConfig(o.loadingRules, *config, true); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// homeDir returns the user's home directory, or "" when it is unknown.
func (o *Options) homeDir() string {
	if o.HomeDir == nil {
		return ""
	}
	dir, err := o.HomeDir()
	if err != nil {
		return ""
	}
	return dir
}
