// Package features holds kcp's own feature gates (kcp's pkg/features),
// registered with the process-wide Kubernetes feature gate, so that
// --feature-gates sets them beside upstream's and every binary reads them
// in one place. Each binary that reads a gate registers the flag with
// AddFlag (or, like the shard, through upstream's options).
package features

import (
	"strings"

	"github.com/spf13/pflag"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

const (
	// CacheAPIs serves cache.kcp.io (ClusterCachedResources and their
	// endpoint slices) and runs the controllers that replicate the objects
	// they select into the cache server and the view of those copies.
	// Alpha and off by default, as in kcp; it is set on shards.
	CacheAPIs featuregate.Feature = "CacheAPIs"

	// WorkspaceAuthentication lets the JWT issuers that a WorkspaceType
	// names through its authenticationConfigurations authenticate
	// requests to the workspaces of that type. Alpha and off by default,
	// as in kcp; it is set per binary: shards authenticate the tokens,
	// front-proxies ask the workspace's shard about them.
	WorkspaceAuthentication featuregate.Feature = "WorkspaceAuthentication"

	// WorkspaceMounts lets a Workspace name, in spec.mount, an object that
	// serves it instead of a logical cluster: shards refuse spec.mount
	// without it and run the mounts controller with it, front-proxies
	// route such workspaces to the object's status.URL. Alpha and off by
	// default, as in kcp.
	WorkspaceMounts featuregate.Feature = "WorkspaceMounts"
)

// specs are kcp's gates with kcp's defaults, at the Kubernetes version
// kcp introduced them with.
var specs = map[featuregate.Feature]featuregate.VersionedSpecs{
	CacheAPIs:               {{Version: version.MustParse("1.32"), Default: false, PreRelease: featuregate.Alpha}},
	WorkspaceAuthentication: {{Version: version.MustParse("1.32"), Default: false, PreRelease: featuregate.Alpha}},
	WorkspaceMounts:         {{Version: version.MustParse("1.30"), Default: false, PreRelease: featuregate.Alpha}},
}

func init() {
	utilruntime.Must(utilfeature.DefaultMutableFeatureGate.AddVersioned(specs))
}

// Enabled tells whether a gate is on in this process.
func Enabled(f featuregate.Feature) bool {
	return utilfeature.DefaultFeatureGate.Enabled(f)
}

// AddFlag registers --feature-gates on fs for a binary whose options do
// not register it already.
func AddFlag(fs *pflag.FlagSet) {
	utilfeature.DefaultMutableFeatureGate.AddFlag(fs)
}

// EnableFlag is the --feature-gates flag that turns gates on, for the
// launchers and tests that start the binaries.
func EnableFlag(gates ...featuregate.Feature) string {
	pairs := make([]string, 0, len(gates))
	for _, g := range gates {
		pairs = append(pairs, string(g)+"=true")
	}
	return "--feature-gates=" + strings.Join(pairs, ",")
}
