package shard

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/sets"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"
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

// kcpFeatureGates are kcp's own feature gates (pkg/features in kcp). A
// command line written for `kcp start` may set them; the shard has none of
// these features yet and says so instead of failing.
var kcpFeatureGates = sets.New(
	"WorkspaceMounts",
	"CacheAPIs",
	"EnableDeprecatedAPIExportVirtualWorkspacesUrls",
	"WorkspaceAuthentication",
	"LogicalClusterMigration",
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
	fs.Var(ignoredFlag{name: "external-logical-cluster-admin-kubeconfig", warnings: &o.warnings,
		why: "other shards are reached directly at their baseURL with --logical-cluster-admin-kubeconfig"},
		"external-logical-cluster-admin-kubeconfig", "kcp's credentials for reaching other shards through the front-proxy; accepted and ignored (see --logical-cluster-admin-kubeconfig).")
}

// ignoredFlag accepts a kcp flag whose setting changes nothing here and
// records a warning saying so.
type ignoredFlag struct {
	name, why, value string
	warnings         *[]string
}

func (f ignoredFlag) String() string { return f.value }
func (f ignoredFlag) Type() string   { return "string" }
func (f ignoredFlag) Set(v string) error {
	*f.warnings = append(*f.warnings, fmt.Sprintf("--%s is accepted and ignored: %s", f.name, f.why))
	return nil
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
	for _, w := range warnings {
		logger.Info("Warning: " + w)
	}
}

// kcpAwareFeatureGates wraps the upstream --feature-gates flag: kcp's own
// gates are accepted with a warning, everything else goes to the upstream
// flag, which refuses gates it does not know.
type kcpAwareFeatureGates struct {
	pflag.Value
	warnings *[]string
	// set records the gates the command line names.
	set sets.Set[string]
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
		rest = append(rest, pair)
	}
	if len(rest) == 0 {
		return nil
	}
	return f.Value.Set(strings.Join(rest, ","))
}

// wrapFeatureGatesFlag makes the --feature-gates flag of fss accept kcp's
// gates.
func (o *kcpStartOptions) wrapFeatureGatesFlag(fss *cliflag.NamedFlagSets) {
	for _, fs := range fss.FlagSets {
		if f := fs.Lookup("feature-gates"); f != nil {
			o.featureGatesSet = sets.New[string]()
			f.Value = &kcpAwareFeatureGates{Value: f.Value, warnings: &o.warnings, set: o.featureGatesSet}
			f.Usage += "\nkcp's gates (" + strings.Join(sets.List(kcpFeatureGates), ", ") + ") are accepted and ignored with a warning."
		}
	}
}
