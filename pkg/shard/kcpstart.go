package shard

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/servercmd"
	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd"
)

// kcp's batteries (--batteries-included), pkg/server/options/batteries in kcp.
const (
	// BatteryWorkspaceTypes installs the organization and team types.
	BatteryWorkspaceTypes = "workspace-types"
	// BatteryAdmin writes the admin kubeconfig with its users.
	BatteryAdmin = "admin"
	// BatteryUser adds a non-admin user to the admin kubeconfig.
	BatteryUser = "user"
	// BatteryMetricsViewer grants the metrics-viewer role.
	BatteryMetricsViewer = "metrics-viewer"
)

// defaultBatteries are kcp's defaults.
var defaultBatteries = []string{BatteryWorkspaceTypes, BatteryAdmin}

// knownBatteries are every battery kcp knows.
var knownBatteries = sets.New(BatteryWorkspaceTypes, BatteryAdmin, BatteryUser, BatteryMetricsViewer)

// supportedBatteries are the batteries this shard can switch; the others
// are accepted, and a warning says they change nothing.
var supportedBatteries = sets.New(BatteryAdmin)

// kcpFeatureGates are kcp's own feature gates (pkg/features in kcp) that
// the shard does not have. A command line written for `kcp start` may set
// them; the shard says it ignores them instead of failing. The gates it
// has (pkg/features) are set like upstream's.
var kcpFeatureGates = sets.New(
	"EnableDeprecatedAPIExportVirtualWorkspacesUrls",
	"LogicalClusterMigration",
	"KcpNativeGarbageCollector",
)

// kcpStartOptions are the flags of `kcp start` that the shard accepts with
// kcp's meaning in addition to its own.
type kcpStartOptions struct {
	// Batteries is --batteries-included as given.
	Batteries []string
	// KubeconfigPath is where the admin kubeconfig goes (default
	// <root-directory>/admin.kubeconfig).
	KubeconfigPath string
	// EmbeddedEtcdDirectory is where embedded etcd keeps its data (default
	// <root-directory>/etcd).
	EmbeddedEtcdDirectory string
	// RootCAFile is the CA bundle published in every namespace's
	// kube-root-ca.crt and in service account token secrets (default: the
	// CA certificates of the serving certificate file).
	RootCAFile string
	// ServiceAccountPrivateKeyFile is kcp's --service-account-private-key-file
	// (the token controller's key): it signs secret-based service account
	// tokens and, unless --service-account-signing-key-file and
	// --service-account-key-file name others, every token, as in kcp.
	ServiceAccountPrivateKeyFile string
	// EmbeddedEtcd tunes the embedded etcd as kcp's --embedded-etcd-*
	// flags do.
	EmbeddedEtcd embeddedetcd.TuningFlags

	// BindFreePort is kcp's --experimental-bind-free-port: with
	// --secure-port=0 the shard serves on a free port, which the admin
	// kubeconfig names.
	BindFreePort bool
	// Authorization is kcp's --authorization-* flags (authorization.go).
	Authorization *authorizationOptions
	// ObjectCountLimit is kcp's --logical-cluster-total-object-limit, the
	// default total object limit of a logical cluster (<= 0: none).
	ObjectCountLimit int64
	// ObjectCountScanInterval is kcp's
	// --logical-cluster-object-count-scan-interval.
	ObjectCountScanInterval time.Duration

	// warnings collects what the flags accepted but ignore, for the log
	// once logging is set up.
	warnings []string
	// featureGatesSet are the gates --feature-gates names.
	featureGatesSet sets.Set[string]
}

func (o *kcpStartOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Batteries, "batteries-included", defaultBatteries,
		"kcp batteries: a list of "+strings.Join(sets.List(knownBatteries), ", ")+"; a leading + or - adds to or removes from the default ("+strings.Join(defaultBatteries, ",")+").")
	fs.StringVar(&o.KubeconfigPath, "kubeconfig-path", o.KubeconfigPath, "Where the admin kubeconfig is written (default <root-directory>/admin.kubeconfig).")
	fs.StringVar(&o.EmbeddedEtcdDirectory, "embedded-etcd-directory", o.EmbeddedEtcdDirectory, "Directory of the embedded etcd's data (default <root-directory>/etcd).")
	fs.StringVar(&o.RootCAFile, "root-ca-file", o.RootCAFile, "PEM CA bundle published in every namespace's kube-root-ca.crt ConfigMap and in service account token secrets (default: the CA certificates of the serving certificate file, or all of it when none is a CA).")
	fs.StringVar(&o.ServiceAccountPrivateKeyFile, "service-account-private-key-file", o.ServiceAccountPrivateKeyFile,
		"PEM private key (RSA or ECDSA) that signs secret-based service account tokens; also the signing and verification key when --service-account-signing-key-file and --service-account-key-file are not given (kcp's meaning).")
	o.EmbeddedEtcd.AddFlags(fs)
	fs.BoolVar(&o.BindFreePort, "experimental-bind-free-port", o.BindFreePort, "With --secure-port=0, serve on a free port; the admin kubeconfig names it (kcp's flag).")
	fs.Int64Var(&o.ObjectCountLimit, "logical-cluster-total-object-limit", o.ObjectCountLimit,
		"Default limit of the objects of a logical cluster (events not counted; root and system clusters spared); the LogicalCluster's core.kcp.io/max-total-objects overrides it. 0: no default.")
	fs.DurationVar(&o.ObjectCountScanInterval, "logical-cluster-object-count-scan-interval", time.Minute,
		"How often the objects of each logical cluster are counted in etcd while any limit applies.")
	servercmd.AddIgnoredFlags(fs, &o.warnings, ignoredKCPFlags...)
	o.authorizationOptions().addFlags(fs)
}

// bindFreePort picks a free port for --experimental-bind-free-port: one
// the system hands out on the bind address, set as the secure port before
// anything else uses it.
func bindFreePort(bind net.IP) (int, error) {
	host := "127.0.0.1"
	if bind != nil && !bind.IsUnspecified() {
		host = bind.String()
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("--experimental-bind-free-port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// authorizationOptions returns the authorization flags, kcp's defaults
// unless set.
func (o *kcpStartOptions) authorizationOptions() *authorizationOptions {
	if o.Authorization == nil {
		o.Authorization = newAuthorizationOptions()
	}
	return o.Authorization
}

// ignoredKCPFlags are flags of `kcp start` for features this shard does not
// have or does differently. A command line written for kcp may set them; the
// shard starts and logs a warning for each one whose value would matter.
var ignoredKCPFlags = []servercmd.IgnoredFlag{
	{Name: "mount-proxy-client-cert-file", Why: "the shard does not route workspace mounts"},
	{Name: "mount-proxy-client-key-file", Why: "the shard does not route workspace mounts"},
	{Name: "mount-proxy-server-ca-file", Why: "the shard does not route workspace mounts"},
	{Name: "shard-kubeconfig-file", Why: "other shards are reached at their Shard's baseURL with --logical-cluster-admin-kubeconfig"},
	{Name: "authentication-admin-token-path", Why: "the admin tokens are kept in the root directory"},
	{Name: "profiler-address", Why: "pprof is served below /debug/pprof on the secure port (--profiling)"},
	{Name: "run-controllers", Why: "the shard always runs its controllers", Harmless: "true", Bool: true},
	{Name: "unsupported-run-individual-controllers", Why: "the shard always runs all its controllers"},
	{Name: "enable-leader-election", Why: "the shard's controllers serve only this shard and elect no leader", Harmless: "false", Bool: true},
	{Name: "leader-election-namespace", Why: "the shard elects no leader"},
	{Name: "leader-election-name", Why: "the shard elects no leader"},
	{Name: "conversion-cel-transformation-timeout", Why: "the shard has no APIConversion CEL transformations"},
	{Name: "miniproxy-mapping-file", Why: "the shard has no built-in mini front-proxy; run the front-proxy with --mapping-file"},
	{Name: "virtual-workspaces-workspaces.authorization-cache.resync-period", Why: "the shard has no workspaces virtual workspace"},
	{Name: "virtual-workspaces-workspaces.authorization-cache.jitter-factor", Why: "the shard has no workspaces virtual workspace"},
	{Name: "virtual-workspaces-workspaces.authorization-cache.sliding", Why: "the shard has no workspaces virtual workspace", Bool: true},
	{Name: "home-workspaces-creation-delay-seconds", Why: "a home workspace is answered as soon as it is created"},
}

// addShardingFlags registers kcp's names of the flags that connect shards:
// --root-shard-kubeconfig-file is --root-shard-kubeconfig;
// --cache-server-kubeconfig-file is --cache-kubeconfig;
// --external-logical-cluster-admin-kubeconfig (kcp's credentials for the
// front-proxy) is accepted and ignored, since this shard reaches other
// shards directly at their baseURL with --logical-cluster-admin-kubeconfig.
func (o *kcpStartOptions) addShardingFlags(fs *pflag.FlagSet, rootShardKubeconfig, cacheKubeconfig *string) {
	fs.StringVar(rootShardKubeconfig, "root-shard-kubeconfig-file", *rootShardKubeconfig, "kcp's name of --root-shard-kubeconfig.")
	fs.StringVar(cacheKubeconfig, "cache-server-kubeconfig-file", *cacheKubeconfig, "kcp's deprecated name of --cache-kubeconfig.")
	servercmd.AddIgnoredFlags(fs, &o.warnings, servercmd.IgnoredFlag{Name: "external-logical-cluster-admin-kubeconfig",
		Why: "other shards are reached directly at their baseURL with --logical-cluster-admin-kubeconfig"})
}

// batteries resolves --batteries-included as kcp does: a list without + or
// - replaces the default, + and - modify it.
func (o *kcpStartOptions) batteries() (sets.Set[string], error) {
	enabled := sets.New[string]()
	modifies := false
	for _, b := range o.Batteries {
		if strings.HasPrefix(b, "+") || strings.HasPrefix(b, "-") {
			modifies = true
		}
	}
	if modifies {
		enabled.Insert(defaultBatteries...)
	}
	for _, b := range o.Batteries {
		b = strings.TrimSpace(b)
		if b == "" {
			continue
		}
		name, remove := b, false
		switch b[0] {
		case '+':
			name = b[1:]
		case '-':
			name, remove = b[1:], true
		}
		if !knownBatteries.Has(name) {
			return nil, fmt.Errorf("--batteries-included: unknown battery %q (known: %s)", name, strings.Join(sets.List(knownBatteries), ", "))
		}
		if remove {
			enabled.Delete(name)
		} else {
			enabled.Insert(name)
		}
	}
	if enabled.Has(BatteryUser) && !enabled.Has(BatteryAdmin) {
		return nil, fmt.Errorf("--batteries-included: battery %q requires battery %q", BatteryUser, BatteryAdmin)
	}
	return enabled, nil
}

// batteryWarnings names the batteries whose setting changes nothing here.
func batteryWarnings(enabled sets.Set[string]) []string {
	var out []string
	for _, b := range sets.List(knownBatteries.Difference(supportedBatteries)) {
		switch {
		case b == BatteryWorkspaceTypes && !enabled.Has(b):
			out = append(out, "battery workspace-types cannot be turned off: the shard always installs the organization and team workspace types")
		case b != BatteryWorkspaceTypes && enabled.Has(b):
			out = append(out, fmt.Sprintf("battery %s is not provided by this shard and is ignored", b))
		}
	}
	return out
}

// logWarnings logs what the kcp flags accepted but ignore.
func (o *kcpStartOptions) logWarnings(logger klog.Logger) {
	warnings := o.warnings
	if enabled, err := o.batteries(); err == nil {
		warnings = append(warnings, batteryWarnings(enabled)...)
	}
	servercmd.LogWarnings(logger, warnings)
}

// kcpAwareFeatureGates wraps the upstream --feature-gates flag: kcp's own
// gates are accepted with a warning, everything else goes to the upstream
// flag, which refuses gates it does not know.
type kcpAwareFeatureGates struct {
	pflag.Value
	warnings *[]string
	// set records the gates the command line names.
	set sets.Set[string]
	// gates are the Kubernetes gates, for which of them are locked.
	gates featuregate.MutableFeatureGate
}

func (f *kcpAwareFeatureGates) Set(value string) error {
	var rest []string
	for _, pair := range strings.Split(value, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		name := strings.TrimPrefix(strings.TrimSpace(k), "kube:")
		f.set.Insert(name)
		if kcpFeatureGates.Has(name) {
			*f.warnings = append(*f.warnings, fmt.Sprintf("kcp feature gate %s=%s is not implemented by this shard and is ignored", name, strings.TrimSpace(v)))
			continue
		}
		// kcp's harness passes the gates its test process set, some of
		// which later Kubernetes versions lock: such a setting cannot take
		// effect, so it is a warning rather than a failed start.
		if locked, ok := f.lockedTo(name); ok {
			if enabled, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil && enabled != locked {
				*f.warnings = append(*f.warnings, fmt.Sprintf("feature gate %s is locked to %t in this Kubernetes version; %s=%s is ignored", name, locked, name, strings.TrimSpace(v)))
				continue
			}
		}
		rest = append(rest, pair)
	}
	if len(rest) == 0 {
		return nil
	}
	return f.Value.Set(strings.Join(rest, ","))
}

// lockedTo tells whether the Kubernetes gate name is locked, and to what.
func (f *kcpAwareFeatureGates) lockedTo(name string) (value, locked bool) {
	if f.gates == nil {
		return false, false
	}
	spec, ok := f.gates.GetAll()[featuregate.Feature(name)]
	if !ok || !spec.LockToDefault {
		return false, false
	}
	return spec.Default, true
}

// wrapFeatureGatesFlag makes the --feature-gates flag of fss accept kcp's
// gates.
func (o *kcpStartOptions) wrapFeatureGatesFlag(fss *cliflag.NamedFlagSets) {
	for _, fs := range fss.FlagSets {
		if f := fs.Lookup("feature-gates"); f != nil {
			o.featureGatesSet = sets.New[string]()
			f.Value = &kcpAwareFeatureGates{Value: f.Value, warnings: &o.warnings, set: o.featureGatesSet, gates: utilfeature.DefaultMutableFeatureGate}
			f.Usage += "\nkcp's gates (" + strings.Join(sets.List(kcpFeatureGates), ", ") + ") are accepted and ignored with a warning."
		}
	}
}
