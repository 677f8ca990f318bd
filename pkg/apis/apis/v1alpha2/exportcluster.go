package v1alpha2

import "github.com/shardplane/shardplane/pkg/logicalcluster"

// ExportCluster resolves the workspace of a binding's export: an empty
// path is the binding's own cluster, a path is resolved by resolvePath
// like request paths, and a single segment that resolves to no path is
// taken as a logical cluster name, as kcp does. Admission and the binding
// controllers must agree on it, so it lives beside the type.
func ExportCluster(resolvePath func(logicalcluster.Path) (logicalcluster.Name, bool), bindingCluster logicalcluster.Name, path logicalcluster.Path) (logicalcluster.Name, bool) {
	if path == "" {
		return bindingCluster, true
	}
	if cluster, ok := resolvePath(path); ok {
		return cluster, true
	}
	return path.Name()
}
