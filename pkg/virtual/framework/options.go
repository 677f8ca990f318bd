package framework

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	"github.com/shardplane/shardplane/pkg/exepages"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/rootdir"
	"github.com/shardplane/shardplane/pkg/servercmd"
)

// Options are the flags of the virtual-workspaces binary (kcp's
// `virtual-workspaces` flags where they exist).
type Options struct {
	SecureServing  *genericoptions.SecureServingOptionsWithLoopback
	Authentication *kubeoptions.BuiltInAuthenticationOptions
	Audit          *genericoptions.AuditOptions
	Logs           *logsapi.LoggingConfiguration

	// Kubeconfig reaches the one shard the server serves, with a
	// privileged (system:masters) credential that no caller ever sees.
	Kubeconfig string
	// Context selects a context of Kubeconfig; empty: its current one.
	Context string
	// ExternalLogicalClusterAdminKubeconfig reaches every workspace (the
	// front-proxy) with a credential that may create SubjectAccessReviews
	// and TokenReviews: callers are authorized there, and their service
	// account tokens verified, in workspaces of any shard. Empty: on the
	// shard of Kubeconfig, which knows only its own workspaces.
	ExternalLogicalClusterAdminKubeconfig string
	// CacheKubeconfig reaches the cache server, where the replication view
	// reads the copies ClusterCachedResources published; empty: that view
	// is not served.
	CacheKubeconfig string
	// RootDirectory keeps the generated serving certificate when no
	// --tls-cert-file is given.
	RootDirectory string
	// BaseURL is the server's URL, for its serving certificate's names
	// (default https://<bind address>:<secure port>).
	BaseURL string
	// ReleaseStartupPages gives back the executable's pages that start-up
	// read once the server is ready (see package exepages).
	ReleaseStartupPages bool
	// AuthenticationKubeconfig is kcp's --authentication-kubeconfig: bearer
	// tokens no local authenticator knows are reviewed (TokenReview) by the
	// server it reaches, the shard, whose identities the views then see.
	AuthenticationKubeconfig string
	// TokenReviewCacheTTL is how long the reviews' answers are kept.
	TokenReviewCacheTTL time.Duration

	// warnings are what kcp's flags accepted here but ignore, for the log.
	warnings []string
}

// ignoredKCPFlags are flags of kcp's virtual-workspaces server for what
// this one does not do: accepted, with a warning.
var ignoredKCPFlags = []servercmd.IgnoredFlag{
	{Name: "shard-external-url", Why: "the server has no workspaces view, the one that publishes it"},
	{Name: "authentication-skip-lookup", Why: "the request-header CA is read from --requestheader-client-ca-file, never looked up", Harmless: "true", Bool: true},
	{Name: "authentication-tolerate-lookup-failure", Why: "the request-header CA is never looked up", Bool: true},
	{Name: "authorization-kubeconfig", Why: "callers are authorized by SubjectAccessReviews on --kubeconfig's shard or --external-logical-cluster-admin-kubeconfig"},
	{Name: "authorization-always-allow-paths", Why: "/healthz, /livez and /readyz are always allowed", Harmless: "/healthz,/readyz,/livez"},
	{Name: "profiler-address", Why: "the server serves no profiler"},
}

// NewOptions returns the defaults: port 6444 on 127.0.0.1, client
// certificates, static tokens and requestheader authentication.
func NewOptions() *Options {
	o := &Options{
		SecureServing:  rootdir.SecureServing(6444),
		Authentication: kubeoptions.NewBuiltInAuthenticationOptions().WithClientCert().WithTokenFile().WithRequestHeader().WithAnonymous(),
		Audit:          genericoptions.NewAuditOptions(),
		Logs:           logs.NewOptions(),
		RootDirectory:  ".shardplane-virtual-workspaces",

		TokenReviewCacheTTL: 10 * time.Second,
		ReleaseStartupPages: true,
	}
	return o
}

// AddFlags registers the flags by topic.
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) {
	fs := fss.FlagSet("virtual workspaces")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig of the shard to serve, with a privileged (system:masters) credential; never exposed to callers. Required.")
	fs.StringVar(&o.Context, "context", o.Context, "Context of --kubeconfig to use (default: its current context).")
	fs.StringVar(&o.ExternalLogicalClusterAdminKubeconfig, "external-logical-cluster-admin-kubeconfig", o.ExternalLogicalClusterAdminKubeconfig,
		"Kubeconfig of a server reaching every workspace (the front-proxy) with a credential allowed to create SubjectAccessReviews and TokenReviews; callers are authorized and their service account tokens verified there. Default: the shard of --kubeconfig, which knows its own workspaces only.")
	fs.StringVar(&o.CacheKubeconfig, "cache-kubeconfig", o.CacheKubeconfig, "Kubeconfig of the cache server, where the replication view (/services/replication/...) reads the copies ClusterCachedResources published; without it that view is not served.")
	fs.StringVar(&o.RootDirectory, "root-directory", o.RootDirectory, "Directory for the generated serving certificate, used when --tls-cert-file is not given.")
	fs.StringVar(&o.BaseURL, "base-url", o.BaseURL, "URL the server is reached at, for the names of a generated serving certificate (default https://<bind-address>:<secure-port>).")
	exepages.AddFlag(fs, &o.ReleaseStartupPages)
	servercmd.AddIgnoredFlags(fs, &o.warnings, ignoredKCPFlags...)
	afs := fss.FlagSet("authentication")
	afs.StringVar(&o.AuthenticationKubeconfig, "authentication-kubeconfig", o.AuthenticationKubeconfig,
		"Kubeconfig of a server (the shard) that reviews bearer tokens the other authenticators do not know (TokenReview); as kcp's.")
	afs.DurationVar(&o.TokenReviewCacheTTL, "authentication-token-webhook-cache-ttl", o.TokenReviewCacheTTL, "How long the answers of token reviews are cached.")
	o.SecureServing.AddFlags(fss.FlagSet("secure serving"))
	o.Authentication.AddFlags(fss.FlagSet("authentication"))
	o.Audit.AddFlags(fss.FlagSet("auditing"))
	logsapi.AddFlags(o.Logs, fss.FlagSet("logs"))
}

// Warnings are what the command line set that this server ignores.
func (o *Options) Warnings() []string { return o.warnings }

// Validate checks the flags.
func (o *Options) Validate() error {
	var errs []error
	if o.Kubeconfig == "" {
		errs = append(errs, errors.New("--kubeconfig is required: the shard whose workspaces the views serve"))
	}
	if o.BaseURL != "" {
		if u, err := url.Parse(o.BaseURL); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--base-url %q must be an https URL", o.BaseURL))
		}
	}
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	errs = append(errs, o.Audit.Validate()...)
	return errors.Join(errs...)
}

// prepareServingCert generates a serving certificate in the root
// directory unless one is given.
func (o *Options) prepareServingCert() error {
	serving := &o.SecureServing.ServerCert
	if serving.CertKey.CertFile != "" || serving.CertKey.KeyFile != "" {
		return nil
	}
	dir, err := rootdir.Open(o.RootDirectory)
	if err != nil {
		return err
	}
	names := rootdir.ServingHosts(o.BaseURL, o.SecureServing.BindAddress)
	serving.CertKey.CertFile, serving.CertKey.KeyFile, err = dir.EnsureServingCert(names)
	return err
}

// baseURL is --base-url or https://<bind address>:<port>.
func (o *Options) baseURL() string {
	if o.BaseURL != "" {
		return strings.TrimSuffix(o.BaseURL, "/")
	}
	host := o.SecureServing.BindAddress.String()
	if o.SecureServing.BindAddress.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "https://" + net.JoinHostPort(host, strconv.Itoa(o.SecureServing.BindPort))
}

// loadKubeconfig reads a kubeconfig, with a context when one is named.
func loadKubeconfig(path, context string) (*rest.Config, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: path}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, err
	}
	// Views fan out: many watches and lists at once.
	cfg.QPS, cfg.Burst = 500, 1000
	// The views address every cluster themselves: a server that names one
	// (kcp's harness writes https://<shard>/clusters/system:admin) means
	// the shard's base URL, as kcp's cluster-aware clients take it.
	if u, err := url.Parse(cfg.Host); err == nil {
		if before, _, rest, found := logicalcluster.CutRequestPath(u.Path); found && rest == "/" {
			u.Path, u.RawPath = before, ""
			cfg.Host = u.String()
		}
	}
	return cfg, nil
}
