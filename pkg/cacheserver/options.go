package cacheserver

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/shardplane/shardplane/pkg/exepages"
	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/rootdir"
	"github.com/shardplane/shardplane/pkg/servercmd"
	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd"
)

// DefaultEtcdPrefix is the etcd prefix of the cache server's keys, so that
// it may share an etcd with shards (whose prefix is /registry).
const DefaultEtcdPrefix = "/cache"

// Options are the cache server's command-line options.
type Options struct {
	SecureServing  *genericoptions.SecureServingOptionsWithLoopback
	Authentication *AuthenticationOptions
	Etcd           *genericoptions.EtcdOptions
	Logs           *logsapi.LoggingConfiguration

	// RootDirectory keeps the generated serving certificate, client CA,
	// admin token, the kubeconfigs and (with embedded etcd) the data.
	RootDirectory string
	// EmbeddedEtcdClientPort and EmbeddedEtcdPeerPort are used when no
	// --etcd-servers are given.
	EmbeddedEtcdClientPort int
	EmbeddedEtcdPeerPort   int
	// BaseURL is how shards reach the cache server; it is the server of
	// the kubeconfigs written to the root directory. Default
	// https://<bind address>:<secure port>.
	BaseURL string
	// Access names the writer and reader groups.
	Access Access
	// SyntheticDelay holds every request this long before serving it
	// (kcp's --synthetic-delay, for tests).
	SyntheticDelay time.Duration
	// EmbeddedEtcdDirectory keeps the embedded etcd's data (default
	// <root-directory>/etcd); EmbeddedEtcdTuning are kcp's other
	// --embedded-etcd-* flags.
	EmbeddedEtcdDirectory string
	EmbeddedEtcdTuning    embeddedetcd.TuningFlags
	// warnings are what kcp's flags accepted here but ignore, for the log.
	warnings []string
	// ReleaseStartupPages gives back the executable's pages that start-up
	// read once the server is ready (see package exepages).
	ReleaseStartupPages bool

	// tokens are the admin token (shard-admin: system:masters), from the
	// root directory.
	tokens rootdir.AdminTokens
	// writerCert and writerKey are the writer's client certificate, when
	// the client CA was generated in the root directory.
	writerCert, writerKey string
}

// NewOptions returns the defaults: port 6443 on 127.0.0.1, embedded etcd
// in .shardplane-cache, client certificates, static tokens, the default writer
// and reader groups.
func NewOptions() *Options {
	o := &Options{
		SecureServing:          rootdir.SecureServing(6443),
		Authentication:         NewAuthenticationOptions(),
		Etcd:                   genericoptions.NewEtcdOptions(storagebackend.NewDefaultConfig(DefaultEtcdPrefix, nil)),
		Logs:                   logs.NewOptions(),
		RootDirectory:          ".shardplane-cache",
		EmbeddedEtcdClientPort: 2381,
		EmbeddedEtcdPeerPort:   2382,
		Access:                 Access{WriterGroups: []string{identities.CacheWriterGroup}, ReaderGroups: []string{identities.CacheReaderGroup}},
		ReleaseStartupPages:    true,
	}
	return o
}

// AddFlags registers the flags by topic.
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) {
	fs := fss.FlagSet("cache server")
	fs.StringVar(&o.RootDirectory, "root-directory", o.RootDirectory, "Directory for the generated serving certificate, client CA, admin token, admin.kubeconfig, cache-writer.kubeconfig and embedded etcd data.")
	fs.IntVar(&o.EmbeddedEtcdClientPort, "embedded-etcd-client-port", o.EmbeddedEtcdClientPort, "Client port of the embedded etcd (on 127.0.0.1), used when --etcd-servers is empty.")
	fs.IntVar(&o.EmbeddedEtcdPeerPort, "embedded-etcd-peer-port", o.EmbeddedEtcdPeerPort, "Peer port of the embedded etcd (on 127.0.0.1), used when --etcd-servers is empty.")
	fs.StringVar(&o.BaseURL, "base-url", o.BaseURL, "URL shards reach the cache server at, written into the kubeconfigs of the root directory (default https://<bind-address>:<secure-port>).")
	fs.StringSliceVar(&o.Access.WriterGroups, "writer-group", o.Access.WriterGroups, "Groups whose members (the shards) may write replicas, and read them. Repeatable.")
	fs.StringSliceVar(&o.Access.ReaderGroups, "reader-group", o.Access.ReaderGroups, "Groups whose members may read replicas (get, list, watch, discovery, metrics). Repeatable.")
	fs.DurationVar(&o.SyntheticDelay, "synthetic-delay", o.SyntheticDelay, "Hold every request this long before serving it, to test how clients cope with a slow cache server (kcp's flag). 0: no delay.")
	fs.StringVar(&o.EmbeddedEtcdDirectory, "embedded-etcd-directory", o.EmbeddedEtcdDirectory, "Directory of the embedded etcd's data (default <root-directory>/etcd).")
	o.EmbeddedEtcdTuning.AddFlags(fs)
	servercmd.AddIgnoredFlags(fs, &o.warnings, servercmd.IgnoredFlag{Name: "authorization-always-allow-paths",
		Why: "/healthz, /livez and /readyz are always allowed; everything else by the writer and reader groups", Harmless: "/healthz,/readyz,/livez"})
	exepages.AddFlag(fs, &o.ReleaseStartupPages)
	o.SecureServing.AddFlags(fss.FlagSet("secure serving"))
	o.Authentication.AddFlags(fss.FlagSet("authentication"))
	o.Etcd.AddFlags(fss.FlagSet("etcd"))
	logsapi.AddFlags(o.Logs, fss.FlagSet("logs"))
}

// EmbeddedEtcd tells whether the cache server runs its own etcd.
func (o *Options) EmbeddedEtcd() bool { return len(o.Etcd.StorageConfig.Transport.ServerList) == 0 }

// EtcdDirectory is where embedded etcd keeps its data.
func (o *Options) EtcdDirectory() string {
	if o.EmbeddedEtcdDirectory != "" {
		return o.EmbeddedEtcdDirectory
	}
	return filepath.Join(o.RootDirectory, "etcd")
}

// AdminKubeconfigPath is the kubeconfig of the cache server's admin
// (system:masters).
func (o *Options) AdminKubeconfigPath() string {
	return filepath.Join(o.RootDirectory, rootdir.AdminKubeconfigFile)
}

// WriterKubeconfigPath is a kubeconfig with a client certificate in the
// first writer group: what a shard is given to write replicas.
func (o *Options) WriterKubeconfigPath() string {
	return filepath.Join(o.RootDirectory, WriterKubeconfigFile)
}

// WriterKubeconfigFile is the name of the writer kubeconfig in the root
// directory.
const WriterKubeconfigFile = "cache-writer.kubeconfig"

const (
	// writerCertName names the writer's client certificate in the root
	// directory.
	writerCertName = "cache-writer"
)

// validateOwn checks the cache server's own flags.
func (o *Options) validateOwn() error {
	var errs []error
	if o.RootDirectory == "" {
		errs = append(errs, errors.New("--root-directory must not be empty"))
	}
	if len(o.Access.WriterGroups) == 0 || slicesHasEmpty(o.Access.WriterGroups) {
		errs = append(errs, errors.New("--writer-group must name at least one group, none empty: without writers no shard can replicate"))
	}
	if slicesHasEmpty(o.Access.ReaderGroups) {
		errs = append(errs, errors.New("--reader-group must not be empty"))
	}
	if o.SyntheticDelay < 0 {
		errs = append(errs, fmt.Errorf("--synthetic-delay must not be negative, got %s", o.SyntheticDelay))
	}
	if o.EmbeddedEtcd() {
		for name, p := range map[string]int{"--embedded-etcd-client-port": o.EmbeddedEtcdClientPort, "--embedded-etcd-peer-port": o.EmbeddedEtcdPeerPort} {
			if p <= 0 || p > 65535 {
				errs = append(errs, fmt.Errorf("%s must be a port between 1 and 65535, got %d", name, p))
			}
		}
		if o.EmbeddedEtcdClientPort == o.EmbeddedEtcdPeerPort {
			errs = append(errs, errors.New("--embedded-etcd-client-port and --embedded-etcd-peer-port must differ"))
		}
	}
	if o.BaseURL != "" {
		if u, err := url.Parse(o.BaseURL); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--base-url %q must be an https URL", o.BaseURL))
		}
	}
	return errors.Join(errs...)
}

func slicesHasEmpty(s []string) bool {
	for _, v := range s {
		if strings.TrimSpace(v) == "" {
			return true
		}
	}
	return false
}

// PrepareRootDirectory creates the root directory and, on first start, the
// files the cache server generates there (serving certificate, client CA,
// the writer's client certificate, the admin token), and points the options
// at them.
func (o *Options) PrepareRootDirectory() error {
	dir, err := rootdir.Open(o.RootDirectory)
	if err != nil {
		return err
	}
	o.RootDirectory = string(dir)
	serving := &o.SecureServing.ServerCert
	if serving.CertKey.CertFile == "" && serving.CertKey.KeyFile == "" {
		names := rootdir.ServingHosts(o.BaseURL, o.SecureServing.BindAddress)
		if serving.CertKey.CertFile, serving.CertKey.KeyFile, err = dir.EnsureServingCert(names); err != nil {
			return err
		}
	}
	if o.Authentication.ClientCert.ClientCA == "" {
		if o.Authentication.ClientCert.ClientCA, err = dir.EnsureClientCA(); err != nil {
			return err
		}
		// The certificate keeps the writer group of its first start.
		ca := strings.TrimSuffix(rootdir.ClientCACertFile, ".crt")
		if o.writerCert, o.writerKey, err = dir.EnsureClientCert(writerCertName, ca, identities.CacheWriterUser, o.Access.WriterGroups[0]); err != nil {
			return err
		}
	}
	o.tokens, err = dir.EnsureAdminTokens()
	return err
}

// CompletedOptions are options with every default filled in.
type CompletedOptions struct {
	*Options
}

// Complete fills the defaults that depend on the prepared root directory
// and the embedded etcd (embeddedEtcdURL, if one runs). It writes no files.
func (o *Options) Complete(embeddedEtcdURL string) (CompletedOptions, error) {
	if err := o.validateOwn(); err != nil {
		return CompletedOptions{}, err
	}
	if o.tokens == (rootdir.AdminTokens{}) {
		return CompletedOptions{}, fmt.Errorf("root directory %s was not prepared: call PrepareRootDirectory first", o.RootDirectory)
	}
	if embeddedEtcdURL != "" {
		o.Etcd.StorageConfig.Transport.ServerList = []string{embeddedEtcdURL}
	}
	if o.BaseURL == "" {
		host := o.SecureServing.BindAddress.String()
		if o.SecureServing.BindAddress.IsUnspecified() {
			host = "127.0.0.1"
		}
		o.BaseURL = "https://" + net.JoinHostPort(host, strconv.Itoa(o.SecureServing.BindPort))
	}
	o.BaseURL = strings.TrimSuffix(o.BaseURL, "/")
	return CompletedOptions{Options: o}, nil
}

// Validate checks the completed options.
func (o CompletedOptions) Validate() error {
	var errs []error
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	errs = append(errs, o.Etcd.Validate()...)
	return errors.Join(errs...)
}
