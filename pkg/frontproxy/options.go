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
	"time"

	genericoptions "k8s.io/apiserver/pkg/server/options"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/shardplane/shardplane/pkg/exepages"
	"github.com/shardplane/shardplane/pkg/features"
	"github.com/shardplane/shardplane/pkg/rootdir"
	"github.com/shardplane/shardplane/pkg/servercmd"
)

// Options are the front-proxy's flags.
type Options struct {
	SecureServing  *genericoptions.SecureServingOptions
	Authentication *kubeoptions.BuiltInAuthenticationOptions
	Logs           *logsapi.LoggingConfiguration
	// RootDirectory keeps the generated serving certificate when no
	// --tls-cert-file is given.
	RootDirectory string
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
	// CutOverHoldTimeout bounds how long a request a shard holds for a
	// move's cut-over is kept before its 429 is passed on; 0: passed on
	// at once.
	CutOverHoldTimeout time.Duration
	// CutOverHoldMaxBody is the largest request body kept to be sent
	// again after a cut-over's hold.
	CutOverHoldMaxBody int64
	// Profiling serves /debug/pprof without authentication, for local
	// profiling only (off by default).
	Profiling bool
	// ReleaseStartupPages gives back the executable's pages that start-up
	// read once the front-proxy is ready (see package exepages).
	ReleaseStartupPages bool

	// warnings are what kcp's flags accepted here but ignore, for the log.
	warnings []string
}

// droppedGroupsWhy says which groups never pass the proxy, for the warnings.
const droppedGroupsWhy = "the proxy passes every group but system:masters, system:kcp:logical-cluster-admin, system:kcp:external-logical-cluster-admin, system:kcp:initializer:* and system:kcp:terminator:*, which it always drops"

// ignoredKCPFlags are flags of kcp-front-proxy for what this proxy does not
// do or does fixed: accepted, with a warning.
var ignoredKCPFlags = []servercmd.IgnoredFlag{
	{Name: "authentication-drop-groups", Why: droppedGroupsWhy},
	{Name: "authentication-pass-on-groups", Why: droppedGroupsWhy},
	{Name: "shard-peer-kubeconfig", Why: "every shard is reached with --shards-kubeconfig"},
	{Name: "profiler-address", Why: "use --profiling"},
	{Name: "cors-allowed-origins", Why: "the proxy sends no CORS headers"},
}

// NewOptions returns the defaults: port 6443, client certificates, static
// tokens, OIDC and, from another authenticating proxy in front of this one,
// request headers (--requestheader-*) as kube-apiserver configures them.
func NewOptions() *Options {
	o := &Options{
		SecureServing:  genericoptions.NewSecureServingOptions(),
		Authentication: kubeoptions.NewBuiltInAuthenticationOptions().WithClientCert().WithTokenFile().WithOIDC().WithRequestHeader(),
		Logs:           logs.NewOptions(),
		RootDirectory:  ".shardplane-front-proxy",

		MaxWatchesPerUser:   DefaultMaxWatchesPerUser,
		CutOverHoldTimeout:  DefaultCutOverHoldTimeout,
		CutOverHoldMaxBody:  DefaultCutOverHoldMaxBody,
		ReleaseStartupPages: true,
	}
	o.SecureServing.BindPort = 6443
	// The serving certificate is generated in the root directory (see
	// PrepareRootDirectory) unless --cert-dir names another.
	o.SecureServing.ServerCert.CertDirectory = ""
	o.SecureServing.ServerCert.PairName = "front-proxy"
	return o
}

// AddFlags registers the flags by topic.
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) {
	fs := fss.FlagSet("front-proxy")
	fs.StringVar(&o.RootDirectory, "root-directory", o.RootDirectory, "Directory for the generated serving certificate, used when --tls-cert-file is not given.")
	fs.StringVar(&o.MappingFile, "mapping-file", o.MappingFile, "YAML file of path mappings: path, backend, backend_server_ca, proxy_client_cert, proxy_client_key, optional user_header, group_header, extra_header_prefix. Path /clusters/ routes to the shard of the request's workspace.")
	fs.StringVar(&o.RootKubeconfig, "root-kubeconfig", o.RootKubeconfig, "Kubeconfig of the root shard, whose Shard objects in root list the shards.")
	fs.StringVar(&o.ShardsKubeconfig, "shards-kubeconfig", o.ShardsKubeconfig, "Kubeconfig with the credentials used to watch Workspaces and LogicalClusters on every shard (its server is replaced by each shard's baseURL). Default: --root-kubeconfig.")
	fs.IntVar(&o.MaxWatchesPerUser, "max-watches-per-user", o.MaxWatchesPerUser, "Watches one user may hold open through this front-proxy; more are answered 429 with Retry-After. 0: no bound.")
	fs.DurationVar(&o.CutOverHoldTimeout, "cut-over-hold-timeout", o.CutOverHoldTimeout, "How long a request that a shard holds for the cut-over of a workspace's move is kept, and sent again once the workspace is served, before the shard's 429 with Retry-After is passed on. 0: passed on at once.")
	fs.Int64Var(&o.CutOverHoldMaxBody, "cut-over-hold-max-body", o.CutOverHoldMaxBody, "Largest request body, in bytes, kept to send a request again after a cut-over's hold; requests with larger bodies get the shard's 429.")
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "Serve Go profiles at /debug/pprof/ to anyone who can reach the port (no authentication); for local profiling only.")
	exepages.AddFlag(fs, &o.ReleaseStartupPages)
	fs.StringSliceVar(&o.ServiceAccountKeyFiles, "service-account-key-file", o.ServiceAccountKeyFiles, "Public keys (PEM) of the shards' service account tokens; such tokens are verified and passed on to the shard, which authenticates them. Repeatable.")
	servercmd.AddIgnoredFlags(fs, &o.warnings, ignoredKCPFlags...)
	features.AddFlag(fs)
	o.SecureServing.AddFlags(fss.FlagSet("secure serving"))
	o.Authentication.AddFlags(fss.FlagSet("authentication"))
	logsapi.AddFlags(o.Logs, fss.FlagSet("logs"))
}

// validateOwn checks the front-proxy's own flags.
func (o *Options) validateOwn() error {
	var errs []error
	if o.MappingFile == "" {
		errs = append(errs, errors.New("--mapping-file is required"))
	}
	if o.RootKubeconfig == "" {
		errs = append(errs, errors.New("--root-kubeconfig is required"))
	}
	if o.CutOverHoldTimeout < 0 || o.CutOverHoldMaxBody < 0 {
		errs = append(errs, errors.New("--cut-over-hold-timeout and --cut-over-hold-max-body must not be negative"))
	}
	return errors.Join(errs...)
}

// PrepareRootDirectory generates the serving certificate once, unless
// --tls-cert-file or --tls-private-key-file names one: in the root
// directory, or with --cert-dir in that directory as upstream servers do.
// It is the one step that writes files before the server runs.
func (o *Options) PrepareRootDirectory() error {
	serving := &o.SecureServing.ServerCert
	if serving.CertKey.CertFile != "" || serving.CertKey.KeyFile != "" {
		return nil
	}
	names := rootdir.ServingHosts("", o.SecureServing.BindAddress)
	if serving.CertDirectory != "" {
		if err := o.SecureServing.MaybeDefaultWithSelfSignedCerts(names.Host, names.DNSNames, names.IPs); err != nil {
			return fmt.Errorf("serving certificate: %w", err)
		}
		return nil
	}
	dir, err := rootdir.Open(o.RootDirectory)
	if err != nil {
		return err
	}
	o.RootDirectory = string(dir)
	serving.CertKey.CertFile, serving.CertKey.KeyFile, err = dir.EnsureServingCert(names)
	return err
}

// CompletedOptions are options with every default filled in.
type CompletedOptions struct {
	*Options
}

// Complete fills the defaults: the shards' kubeconfig is the root's unless
// given. It writes no files.
func (o *Options) Complete() (CompletedOptions, error) {
	if err := o.validateOwn(); err != nil {
		return CompletedOptions{}, err
	}
	serving := o.SecureServing.ServerCert
	if serving.CertKey.CertFile == "" && serving.CertKey.KeyFile == "" && serving.GeneratedCert == nil {
		return CompletedOptions{}, errors.New("no serving certificate: call PrepareRootDirectory first")
	}
	if o.ShardsKubeconfig == "" {
		o.ShardsKubeconfig = o.RootKubeconfig
	}
	return CompletedOptions{Options: o}, nil
}

// Validate checks the completed options.
func (o CompletedOptions) Validate() error {
	var errs []error
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	return errors.Join(errs...)
}
