// Package frontproxy is the system's front door: it authenticates clients,
// resolves /clusters/<path> to a logical cluster and its shard through an
// index fed by the shards' Workspaces and LogicalClusters, and proxies the
// request there with the user as authenticating-proxy headers over a client
// certificate the shards trust. Other paths go where the mapping file says
// (/services/... to the virtual workspaces).
package frontproxy

import (
	"errors"
	"fmt"
	"net"

	genericoptions "k8s.io/apiserver/pkg/server/options"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/shardplane/shardplane/pkg/exepages"
)

// Options are the front-proxy's flags.
type Options struct {
	SecureServing  *genericoptions.SecureServingOptions
	Authentication *kubeoptions.BuiltInAuthenticationOptions
	Logs           *logsapi.LoggingConfiguration
	// ServiceAccountKeyFiles verify the shards' service account tokens,
	// which are passed on to the shards.
	ServiceAccountKeyFiles []string
	// MappingFile routes paths to backends.
	MappingFile string
	// RootKubeconfig reaches the root shard, whose Shard objects list the
	// shards.
	RootKubeconfig string
	// ShardsKubeconfig holds the credentials the index watches every
	// shard with; its server is replaced by each shard's baseURL.
	ShardsKubeconfig string
	// MaxWatchesPerUser bounds the watches one user holds open through
	// this front-proxy; more are answered 429. 0: no bound.
	MaxWatchesPerUser int
	// Profiling serves /debug/pprof without authentication, for local
	// profiling only (off by default).
	Profiling bool
	// ReleaseStartupPages gives back the executable's pages that start-up
	// read once the front-proxy is ready (see package exepages).
	ReleaseStartupPages bool
}

// NewOptions returns the defaults: port 6443, client certificates, static
// tokens and OIDC as kube-apiserver configures them.
func NewOptions() *Options {
	o := &Options{
		SecureServing:  genericoptions.NewSecureServingOptions(),
		Authentication: kubeoptions.NewBuiltInAuthenticationOptions().WithClientCert().WithTokenFile().WithOIDC(),
		Logs:           logs.NewOptions(),

		MaxWatchesPerUser:   DefaultMaxWatchesPerUser,
		ReleaseStartupPages: true,
	}
	o.SecureServing.BindPort = 6443
	o.SecureServing.ServerCert.PairName = "front-proxy"
	return o
}

// AddFlags registers the flags by topic.
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) {
	fs := fss.FlagSet("front-proxy")
	fs.StringVar(&o.MappingFile, "mapping-file", o.MappingFile, "YAML file of path mappings: path, backend, backend_server_ca, proxy_client_cert, proxy_client_key, optional user_header, group_header, extra_header_prefix. Path /clusters/ routes to the shard of the request's workspace.")
	fs.StringVar(&o.RootKubeconfig, "root-kubeconfig", o.RootKubeconfig, "Kubeconfig of the root shard, whose Shard objects in root list the shards.")
	fs.StringVar(&o.ShardsKubeconfig, "shards-kubeconfig", o.ShardsKubeconfig, "Kubeconfig with the credentials used to watch Workspaces and LogicalClusters on every shard (its server is replaced by each shard's baseURL). Default: --root-kubeconfig.")
	fs.IntVar(&o.MaxWatchesPerUser, "max-watches-per-user", o.MaxWatchesPerUser, "Watches one user may hold open through this front-proxy; more are answered 429 with Retry-After. 0: no bound.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Serve Go profiles at /debug/pprof/ to anyone who can reach the port (no authentication); for local profiling only.")
	exepages.AddFlag(fs, &o.ReleaseStartupPages)
	fs.StringSliceVar(&o.ServiceAccountKeyFiles, "service-account-key-file", o.ServiceAccountKeyFiles, "Public keys (PEM) of the shards' service account tokens; such tokens are verified and passed on to the shard, which authenticates them. Repeatable.")
	o.SecureServing.AddFlags(fss.FlagSet("secure serving"))
	o.Authentication.AddFlags(fss.FlagSet("authentication"))
	logsapi.AddFlags(o.Logs, fss.FlagSet("logs"))
}

// Validate checks the flags.
func (o *Options) Validate() error {
	var errs []error
	if o.MappingFile == "" {
		errs = append(errs, errors.New("--mapping-file is required"))
	}
	if o.RootKubeconfig == "" {
		errs = append(errs, errors.New("--root-kubeconfig is required"))
	}
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	return errors.Join(errs...)
}

// Complete fills in defaults: a self-signed serving certificate when none
// is given.
func (o *Options) Complete() error {
	if o.ShardsKubeconfig == "" {
		o.ShardsKubeconfig = o.RootKubeconfig
	}
	if err := o.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	return nil
}
