// Package shard assembles the shard binary: a Kubernetes-style API server
// that serves many logical clusters from one etcd.
package shard

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	mutatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingadmissionpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	mutatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	validatingwebhook "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	cliflag "k8s.io/component-base/cli/flag"
	controlplaneoptions "k8s.io/kubernetes/pkg/controlplane/apiserver/options"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/authentication/serviceaccount"
	"github.com/shardplane/shardplane/pkg/bootstrap"
	"github.com/shardplane/shardplane/pkg/exepages"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/rootdir"
	"github.com/shardplane/shardplane/pkg/servercmd"
	kstorage "github.com/shardplane/shardplane/pkg/storage"
	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd"
)

// Options are the shard's command-line options: Kubernetes' generic control
// plane options plus the shard's own.
type Options struct {
	ControlPlane *controlplaneoptions.Options

	// RootDirectory keeps generated certificates, keys, tokens, the admin
	// kubeconfig and (with embedded etcd) the data.
	RootDirectory string
	// ShardName names this shard.
	ShardName string
	// EmbeddedEtcdClientPort and EmbeddedEtcdPeerPort are used when no
	// --etcd-servers are given.
	EmbeddedEtcdClientPort int
	EmbeddedEtcdPeerPort   int
	// BaseURL is how other components reach this shard; ExternalURL is
	// written into Workspace URLs (usually the front-proxy). Both default to
	// https://<bind address>:<secure port>.
	BaseURL     string
	ExternalURL string
	// LogicalClusterAdminKubeconfig holds the credentials (group
	// system:kcp:logical-cluster-admin) this shard uses to create and delete
	// LogicalClusters on other shards; the server of each request is the
	// Shard's baseURL. Empty: this shard's own logical-cluster-admin token,
	// trusting its own serving certificate, which only this shard accepts:
	// workspaces can then be placed on this shard alone.
	LogicalClusterAdminKubeconfig string
	// RootIdentitiesFile is kcp's --root-identities-file: YAML
	// {identities: [{export, identity}]} whose keys become the identities of
	// root's APIExports on the first start (an identity never changes).
	RootIdentitiesFile string
	// WorkspaceSoftLimit and WorkspaceHardLimit, when above 0, are written
	// into spec.resourceLimits of this shard's Shard whenever it registers
	// (each start); 0 leaves the limits an operator set with kubectl.
	WorkspaceSoftLimit, WorkspaceHardLimit int64
	// HeartbeatInterval is how often the shard reports its status on its
	// Shard object.
	HeartbeatInterval time.Duration
	// HeartbeatTimeout, on the root shard, is how old a Shard's last
	// heartbeat may grow before the Shard is marked not Ready.
	HeartbeatTimeout time.Duration
	// RootShardKubeconfig reaches the root shard from a shard that does not
	// host root: it registers this shard's Shard object there and reads
	// root's Shards, WorkspaceTypes and APIExports (kept in the root
	// directory, so later starts do without root). Required unless this is
	// the root shard.
	RootShardKubeconfig string
	// CacheKubeconfig reaches the cache server (its base URL, with the
	// credentials of a cache writer): the shard replicates its APIExports,
	// schemas, WorkspaceTypes, Shards and marked RBAC there and reads
	// everybody's. Empty: the shard serves the cache itself below
	// /services/cache (the only choice of a shard that runs alone).
	// Required unless this is the root shard.
	CacheKubeconfig string
	// ReleaseStartupPages gives back the executable's pages that start-up
	// read once the shard is ready (see package exepages).
	ReleaseStartupPages bool
	// MaxWatchesPerUser bounds the watches one user of a workspace holds
	// open on the shard (0: none); a LogicalCluster's
	// limits.shardplane.io/max-watches-per-user overrides it.
	MaxWatchesPerUser int64
	// MaxRequestsInFlightPerWorkspace bounds the requests of one workspace
	// running at once on the shard, watches aside (0: none); a
	// LogicalCluster's limits.shardplane.io/max-requests-in-flight
	// overrides it.
	MaxRequestsInFlightPerWorkspace int64
	// MaxRequestTimeSharePerWorkspace bounds the seconds of request time
	// per second one workspace's requests, watches aside, take on the shard
	// on average (0: none); a LogicalCluster's
	// limits.shardplane.io/max-request-time-share overrides it.
	MaxRequestTimeSharePerWorkspace float64

	// kcpStart are the flags of `kcp start` accepted with kcp's meaning.
	kcpStart kcpStartOptions
	// home are the flags of the home workspaces (home.go).
	home homeWorkspacesOptions
	// virtual are the flags of the in-process virtual workspaces
	// (virtual.go).
	virtual virtualWorkspacesOptions
	// rootIdentities are the identities of RootIdentitiesFile.
	rootIdentities []bootstrap.Identity
	// tokens are the admin users' tokens, from the root directory.
	tokens rootdir.AdminTokens

	// serviceAccountTokenGetter gets its loopback client once the server
	// configuration exists.
	serviceAccountTokenGetter *serviceaccount.TokenGetter
}

// NewOptions returns options with the shard's defaults.
func NewOptions() *Options {
	cp := controlplaneoptions.NewOptions()
	cp.SecureServing.BindAddress = net.ParseIP("127.0.0.1")
	cp.SecureServing.BindPort = 6443
	// The serving certificate is generated in the root directory (see
	// PrepareRootDirectory), not by the generic server.
	cp.SecureServing.ServerCert.CertDirectory = ""
	// Authorization is the shard's own chain (system:masters, kcp admins,
	// per-cluster RBAC), not configurable by flags.
	cp.Authorization = nil
	// Upstream admission plugins keep per-server caches that are not aware of
	// logical clusters; the shard adds its own cluster-aware plugins instead.
	cp.Admission.GenericAdmission.DefaultOffPlugins = sets.New(kubeoptions.AllOrderedPlugins...)
	// --enable-priority-and-fairness turns on the shard's own APF, keyed by
	// workspace (pkg/fairness), never upstream's.
	cp.Features.EnablePriorityAndFairness = true
	// Other shards and the front-proxy keep watches open on a shard: end
	// them as it shuts down, instead of the HTTP server waiting up to a
	// minute for them.
	cp.GenericServerRunOptions.ShutdownWatchTerminationGracePeriod = 5 * time.Second
	// Deleted objects stay in etcd's index and database until compacted:
	// compact every minute (upstream: 5), so that the memory of deleted
	// workspaces comes back soon after (--etcd-compaction-interval).
	cp.Etcd.StorageConfig.CompactionInterval = time.Minute
	// kcp's issuer, which is also the audience of its clients' TokenRequests.
	cp.Authentication.ServiceAccounts.Issuers = []string{"https://kcp.default.svc"}
	tokenGetter := &serviceaccount.TokenGetter{}
	cp.Authentication.ServiceAccounts.OptionalTokenGetter = tokenGetter.Factory
	return &Options{
		serviceAccountTokenGetter: tokenGetter,
		ControlPlane:              cp,
		RootDirectory:             ".shardplane",
		ShardName:                 "root",
		EmbeddedEtcdClientPort:    2379,
		EmbeddedEtcdPeerPort:      2380,
		ReleaseStartupPages:       true,
		HeartbeatInterval:         2 * time.Second,
		HeartbeatTimeout:          8 * time.Second,
	}
}

// AddFlags registers all flags, grouped by topic for --help.
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) {
	fs := fss.FlagSet("shard")
	fs.StringVar(&o.RootDirectory, "root-directory", o.RootDirectory, "Directory for generated certificates, keys, tokens, admin.kubeconfig and embedded etcd data.")
	fs.StringVar(&o.ShardName, "shard-name", o.ShardName, "Name of this shard.")
	fs.IntVar(&o.EmbeddedEtcdClientPort, "embedded-etcd-client-port", o.EmbeddedEtcdClientPort, "Client port of the embedded etcd (on 127.0.0.1), used when --etcd-servers is empty.")
	fs.IntVar(&o.EmbeddedEtcdPeerPort, "embedded-etcd-peer-port", o.EmbeddedEtcdPeerPort, "Peer port of the embedded etcd (on 127.0.0.1), used when --etcd-servers is empty.")
	fs.StringVar(&o.BaseURL, "shard-base-url", o.BaseURL, "URL other components use to reach this shard (default https://<bind-address>:<secure-port>).")
	fs.StringVar(&o.ExternalURL, "shard-external-url", o.ExternalURL, "URL written into Workspace spec.URL, usually the front-proxy's (default: --shard-base-url).")
	fs.StringVar(&o.LogicalClusterAdminKubeconfig, "logical-cluster-admin-kubeconfig", o.LogicalClusterAdminKubeconfig,
		"Kubeconfig with the system:kcp:logical-cluster-admin credentials used to create LogicalClusters on other shards (its server is replaced by each Shard's baseURL). Default: this shard's own token and serving CA, which reach this shard only.")
	fs.StringVar(&o.RootShardKubeconfig, "root-shard-kubeconfig", o.RootShardKubeconfig,
		"Kubeconfig of the root shard, for a shard other than root: it registers its Shard there. kcp: --root-shard-kubeconfig-file.")
	fs.StringVar(&o.CacheKubeconfig, "cache-kubeconfig", o.CacheKubeconfig,
		"Kubeconfig of the cache server (base URL and a cache writer's credentials): the shard replicates its APIExports, APIResourceSchemas, WorkspaceTypes, Shards and marked RBAC there and reads every shard's (copies kept in the root directory let it start without the cache later). Empty: the shard serves the cache in-process below /services/cache, for itself and other shards. Required for shards other than root.")
	fs.Int64Var(&o.WorkspaceSoftLimit, "shard-workspace-soft-limit", o.WorkspaceSoftLimit,
		"Soft limit of logical clusters on this shard, written into its Shard's spec.resourceLimits.soft at every start: at it, the scheduler prefers other shards. 0: leave the Shard's limits as they are (kubectl edit shard).")
	fs.Int64Var(&o.WorkspaceHardLimit, "shard-workspace-hard-limit", o.WorkspaceHardLimit,
		"Hard limit of logical clusters on this shard, written into its Shard's spec.resourceLimits.hard at every start: at it, the scheduler places no new workspace here. 0: leave the Shard's limits as they are (kubectl edit shard).")
	fs.DurationVar(&o.HeartbeatInterval, "shard-heartbeat-interval", o.HeartbeatInterval,
		"How often the shard reports its status (logical clusters hosted, heartbeat) on its Shard object in root.")
	fs.DurationVar(&o.HeartbeatTimeout, "shard-heartbeat-timeout", o.HeartbeatTimeout,
		"On the root shard: how old a Shard's last heartbeat may grow before it is marked not Ready and receives no new workspaces.")
	fs.StringVar(&o.RootIdentitiesFile, "root-identities-file", o.RootIdentitiesFile,
		"YAML file {identities: [{export: <name>, identity: <key>}]} with the identity keys of root's APIExports (e.g. tenancy.kcp.io), used when root is bootstrapped and the export has no identity yet; as kcp's.")
	fs.Int64Var(&o.MaxWatchesPerUser, "max-watches-per-user", o.MaxWatchesPerUser,
		"Watches one user of a workspace may hold open on this shard; more are answered 429 with Retry-After. A workspace's LogicalCluster annotation "+corev1alpha1.MaxWatchesPerUserAnnotationKey+" overrides it. 0: no bound.")
	fs.Int64Var(&o.MaxRequestsInFlightPerWorkspace, "max-requests-in-flight-per-workspace", o.MaxRequestsInFlightPerWorkspace,
		"Requests of one workspace that run at once on this shard (watches and other long-running requests aside); more wait their turn in order and are answered 429 with Retry-After after 15s. A workspace's LogicalCluster annotation "+corev1alpha1.MaxRequestsInFlightAnnotationKey+" overrides it. 0: no bound.")
	fs.Float64Var(&o.MaxRequestTimeSharePerWorkspace, "max-request-time-share-per-workspace", o.MaxRequestTimeSharePerWorkspace,
		"Seconds of request time per second the requests of one workspace (watches and other long-running requests aside) may take on this shard on average, with one second in hand: 0.25 is a quarter of one request running all the time. A workspace past it waits until it is back within its share, its requests in order, then answered 429 with Retry-After after 15s. A workspace's LogicalCluster annotation "+corev1alpha1.MaxRequestTimeShareAnnotationKey+" overrides it. 0: no bound.")
	exepages.AddFlag(fs, &o.ReleaseStartupPages)
	o.kcpStart.addFlags(fs)
	o.home.addFlags(fs)
	o.virtual.addFlags(fs)
	o.kcpStart.addShardingFlags(fs, &o.RootShardKubeconfig, &o.CacheKubeconfig)
	o.ControlPlane.AddFlags(fss)
	o.kcpStart.wrapFeatureGatesFlag(fss)
}

// processDefaultOffGates are the feature gates the shard turns off unless
// --feature-gates names them (applyProcessDefaults).
var processDefaultOffGates = []string{"ListFromCacheSnapshot", "NativeHistograms", "SizeBasedListCostEstimate"}

// applyProcessDefaults sets the process-wide settings the shard prefers
// where the command line did not choose. It runs when the shard starts,
// never when a command is constructed.
func (o *Options) applyProcessDefaults() error {
	// List snapshots keep copy-on-write btree versions of every watch cache:
	// memory a shard with many small workspaces spends better elsewhere.
	// Native histograms (beta and on upstream since 1.37; kcp has none) keep
	// up to 160 sparse buckets per histogram series in sync.Maps beside the
	// classic ones, grown a few bytes at a time as new latencies are seen:
	// heap that stays spread over otherwise free spans once workspaces came
	// and went.
	// Size-based list cost estimates (beta since 1.34; kcp's Kubernetes has
	// none) keep every stored key with its size per resource, heap that
	// grows with every workspace; without them priority and fairness
	// estimates a LIST from the object count, as before 1.34.
	return servercmd.ProcessDefaults(processDefaultOffGates, o.kcpStart.featureGatesSet)
}

// EmbeddedEtcd tells whether the shard runs its own etcd.
func (o *Options) EmbeddedEtcd() bool {
	return len(o.ControlPlane.Etcd.StorageConfig.Transport.ServerList) == 0
}

// EtcdDirectory is where embedded etcd keeps its data.
func (o *Options) EtcdDirectory() string {
	if o.kcpStart.EmbeddedEtcdDirectory != "" {
		return o.kcpStart.EmbeddedEtcdDirectory
	}
	return filepath.Join(o.RootDirectory, "etcd")
}

// AdminKubeconfigPath is where the admin kubeconfig is written: a relative
// --kubeconfig-path is below the root directory, as in kcp.
func (o *Options) AdminKubeconfigPath() string {
	if p := o.kcpStart.KubeconfigPath; p != "" {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(o.RootDirectory, p)
	}
	return filepath.Join(o.RootDirectory, rootdir.AdminKubeconfigFile)
}

// embeddedEtcdOptions are the embedded etcd's options from the flags.
func (o *Options) embeddedEtcdOptions() (embeddedetcd.Options, error) {
	e := embeddedetcd.Options{
		Directory:  o.EtcdDirectory(),
		ClientPort: o.EmbeddedEtcdClientPort,
		PeerPort:   o.EmbeddedEtcdPeerPort,
		PageOut:    exepages.PageOut,
	}
	return e, o.kcpStart.EmbeddedEtcd.ApplyTo(&e)
}

// CompletedOptions are options with every default filled in.
type CompletedOptions struct {
	*Options
	ControlPlane controlplaneoptions.CompletedOptions
	// etcdClient is the etcd client of all storages with an embedded etcd;
	// nil with --etcd-servers.
	etcdClient *kstorage.EtcdClient
}

// PrepareRootDirectory creates the root directory and, on first start, the
// files the shard generates there (serving certificate, client CA,
// service-account key, admin tokens), and points the options at them. It is
// the one step that writes files before the server runs.
func (o *Options) PrepareRootDirectory() error {
	dir, err := rootdir.Open(o.RootDirectory)
	if err != nil {
		return err
	}
	o.RootDirectory = string(dir)
	cp := o.ControlPlane
	serving := &cp.SecureServing.ServerCert
	if serving.CertKey.CertFile == "" && serving.CertKey.KeyFile == "" && serving.CertDirectory == "" {
		if serving.CertKey.CertFile, serving.CertKey.KeyFile, err = dir.EnsureServingCert(o.servingNames()); err != nil {
			return err
		}
	}
	if cp.Authentication.ClientCert.ClientCA == "" {
		if cp.Authentication.ClientCert.ClientCA, err = dir.EnsureClientCA(); err != nil {
			return err
		}
	}
	if keyFile := o.kcpStart.ServiceAccountPrivateKeyFile; keyFile != "" {
		// kcp's token controller key signs and verifies unless others are named.
		if cp.ServiceAccountSigningKeyFile == "" {
			cp.ServiceAccountSigningKeyFile = keyFile
		}
		if len(cp.Authentication.ServiceAccounts.KeyFiles) == 0 {
			cp.Authentication.ServiceAccounts.KeyFiles = []string{keyFile}
		}
	}
	if cp.ServiceAccountSigningKeyFile == "" && len(cp.Authentication.ServiceAccounts.KeyFiles) == 0 {
		keyFile, err := dir.EnsureServiceAccountKey()
		if err != nil {
			return err
		}
		cp.ServiceAccountSigningKeyFile = keyFile
		cp.Authentication.ServiceAccounts.KeyFiles = []string{keyFile}
	}
	o.tokens, err = dir.EnsureAdminTokens()
	return err
}

// servingNames are the names of a generated serving certificate: those of
// --shard-base-url and of the bind and advertise addresses.
func (o *Options) servingNames() rootdir.ServingNames {
	return rootdir.ServingHosts(o.BaseURL, o.ControlPlane.SecureServing.BindAddress, o.ControlPlane.GenericServerRunOptions.AdvertiseAddress)
}

// Complete fills the defaults that depend on the prepared root directory
// and the embedded etcd (embedded, if one runs). It writes no files.
func (o *Options) Complete(ctx context.Context, embedded *embeddedetcd.Server) (CompletedOptions, error) {
	if err := validateOwn(o); err != nil {
		return CompletedOptions{}, err
	}
	if o.tokens == (rootdir.AdminTokens{}) {
		return CompletedOptions{}, fmt.Errorf("root directory %s was not prepared: call PrepareRootDirectory first", o.RootDirectory)
	}
	if o.RootIdentitiesFile != "" {
		data, err := os.ReadFile(o.RootIdentitiesFile)
		if err != nil {
			return CompletedOptions{}, fmt.Errorf("--root-identities-file: %w", err)
		}
		if o.rootIdentities, err = bootstrap.ParseIdentities(data); err != nil {
			return CompletedOptions{}, fmt.Errorf("--root-identities-file %s: %w", o.RootIdentitiesFile, err)
		}
	}
	cp := o.ControlPlane
	if embedded != nil {
		cp.Etcd.StorageConfig.Transport.ServerList = []string{embedded.ClientURL}
	}
	// Names for a certificate the generic server generates (--cert-dir).
	names := o.servingNames()
	completed, err := cp.Complete(ctx, names.DNSNames, names.IPs)
	if err != nil {
		return CompletedOptions{}, err
	}
	if o.BaseURL == "" {
		host := cp.SecureServing.BindAddress.String()
		if cp.SecureServing.BindAddress.IsUnspecified() {
			host = "127.0.0.1"
		}
		o.BaseURL = "https://" + net.JoinHostPort(host, strconv.Itoa(cp.SecureServing.BindPort))
	}
	o.BaseURL = strings.TrimSuffix(o.BaseURL, "/")
	if o.ExternalURL == "" {
		o.ExternalURL = o.BaseURL
	}
	o.ExternalURL = strings.TrimSuffix(o.ExternalURL, "/")
	o.virtual.complete(o.BaseURL)
	etcdClient, err := storageEtcdClient(ctx, embedded, completed.Etcd.StorageConfig.Transport)
	if err != nil {
		return CompletedOptions{}, err
	}
	return CompletedOptions{Options: o, ControlPlane: completed, etcdClient: etcdClient}, nil
}

// storageEtcdClient returns the client of every storage of the shard: the
// embedded etcd's in-process client, or one client dialed to --etcd-servers
// (upstream dials one per resource). A resource that
// --etcd-servers-overrides sends elsewhere dials its own. Health checks and
// the database size metric keep their own clients.
func storageEtcdClient(ctx context.Context, embedded *embeddedetcd.Server, t storagebackend.TransportConfig) (*kstorage.EtcdClient, error) {
	if embedded != nil {
		c := kstorage.NewEtcdClient(ctx, embedded.Client(), embedded.ClientURL)
		c.OnCompacted(embedded.ReleasePagesWhenQuiet)
		return c, nil
	}
	c, err := kstorage.DialEtcdClient(t)
	if err != nil {
		return nil, fmt.Errorf("storage etcd client: %w", err)
	}
	return c, nil
}

// Close closes the storages' etcd client if the shard dialed it: call it
// once the server has stopped.
func (o CompletedOptions) Close() error {
	if o.etcdClient == nil {
		return nil
	}
	return o.etcdClient.Close()
}

// perClusterAdmissionPlugins are the upstream plugins the shard runs once
// per logical cluster (pkg/admission/webhook, pkg/admission/policy).
var perClusterAdmissionPlugins = sets.New(
	mutatingadmissionpolicy.PluginName, mutatingwebhook.PluginName,
	validatingadmissionpolicy.PluginName, validatingwebhook.PluginName,
)

// validateOwn checks the shard's own flags.
func validateOwn(o *Options) error {
	if o.RootDirectory == "" {
		return fmt.Errorf("--root-directory must not be empty")
	}
	if err := logicalcluster.ValidateName(o.ShardName); err != nil {
		return fmt.Errorf("--shard-name: %w", err)
	}
	if _, err := o.kcpStart.batteries(); err != nil {
		return err
	}
	if err := o.kcpStart.authorizationOptions().validate(); err != nil {
		return err
	}
	if o.kcpStart.BindFreePort && o.ControlPlane.SecureServing.BindPort != 0 {
		return fmt.Errorf("--experimental-bind-free-port needs --secure-port=0")
	}
	if o.ShardName != corev1alpha1.RootShard && o.RootShardKubeconfig == "" {
		return fmt.Errorf("--root-shard-kubeconfig is required for shard %q: a shard other than root registers itself in root and reads root's shards and workspace types", o.ShardName)
	}
	if o.ShardName != corev1alpha1.RootShard && o.CacheKubeconfig == "" {
		return fmt.Errorf("--cache-kubeconfig is required for shard %q: a shard other than root reads root's shards, workspace types and exports from the cache server (the root shard serves one below /services/cache when it runs without --cache-kubeconfig)", o.ShardName)
	}
	if o.ShardName == corev1alpha1.RootShard && o.RootShardKubeconfig != "" {
		return fmt.Errorf("--root-shard-kubeconfig is for shards other than root; this shard is root (--shard-name)")
	}
	if o.WorkspaceSoftLimit < 0 || o.WorkspaceHardLimit < 0 {
		return fmt.Errorf("--shard-workspace-soft-limit and --shard-workspace-hard-limit must not be negative (0 leaves the Shard's limits as they are)")
	}
	if o.HeartbeatInterval <= 0 || o.HeartbeatTimeout <= 0 {
		return fmt.Errorf("--shard-heartbeat-interval and --shard-heartbeat-timeout must be positive")
	}
	if o.ShardName == corev1alpha1.RootShard && o.HeartbeatTimeout <= o.HeartbeatInterval {
		return fmt.Errorf("--shard-heartbeat-timeout (%s) must be longer than --shard-heartbeat-interval (%s): every shard would be marked not Ready between two heartbeats", o.HeartbeatTimeout, o.HeartbeatInterval)
	}
	for _, name := range o.ControlPlane.Admission.GenericAdmission.EnablePlugins {
		if perClusterAdmissionPlugins.Has(name) {
			return fmt.Errorf("--enable-admission-plugins: %s always runs, once per logical cluster; the upstream plugin would apply one cluster's configuration to all", name)
		}
	}
	if o.EmbeddedEtcd() {
		for name, p := range map[string]int{"--embedded-etcd-client-port": o.EmbeddedEtcdClientPort, "--embedded-etcd-peer-port": o.EmbeddedEtcdPeerPort} {
			if p <= 0 || p > 65535 {
				return fmt.Errorf("%s must be a port between 1 and 65535, got %d", name, p)
			}
		}
		if o.EmbeddedEtcdClientPort == o.EmbeddedEtcdPeerPort {
			return fmt.Errorf("--embedded-etcd-client-port and --embedded-etcd-peer-port must differ")
		}
	}
	return nil
}

// shard is this shard's Shard object as the options describe it.
func (o CompletedOptions) shard() bootstrap.Shard {
	return bootstrap.Shard{Name: o.ShardName, BaseURL: o.BaseURL, ExternalURL: o.ExternalURL, VirtualWorkspaceURL: o.virtual.URL,
		WorkspaceSoftLimit: o.WorkspaceSoftLimit, WorkspaceHardLimit: o.WorkspaceHardLimit}
}

// Validate checks the completed options.
func (o CompletedOptions) Validate() []error {
	return append(o.ControlPlane.Validate(), o.virtual.validate(o.BaseURL)...)
}
