// Package viewurl is the URL layout of the virtual workspaces (views):
// /services/<view>/..., optionally behind /shards/<shard>, the names of the
// views, and the URLs that status fields publish. Controllers that publish
// view URLs import this package, not the views themselves.
package viewurl

import (
	"path"
	"strings"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

const (
	// ServicesPrefix starts the path of every view: /services/<name>/...
	ServicesPrefix = "/services/"
	// ShardsPrefix may precede ServicesPrefix: /shards/<shard>/services/...
	// is how a front-proxy in front of many virtual workspace servers
	// reaches one shard's (its mapping routes /shards/<shard>/ there); the
	// server drops the prefix.
	ShardsPrefix = "/shards/"
)

// The names of the views, the segment after /services/.
const (
	// APIExportView is the view of an APIExport's owner.
	APIExportView = "apiexport"
	// APIResourceSchemaView serves the schemas a workspace has bound.
	APIResourceSchemaView = "apiresourceschema"
	// InitializingView lists the workspaces that wait for an initializer.
	InitializingView = "initializingworkspaces"
	// TerminatingView lists the workspaces that wait for a terminator.
	TerminatingView = "terminatingworkspaces"
	// ReplicationView serves the copies a ClusterCachedResource published.
	ReplicationView = "replication"
)

// Serves tells whether path is below a view: /services/... or
// /shards/<shard>/services/...
func Serves(path string) bool {
	_, ok := TrimShardPrefix(path)
	return ok
}

// TrimShardPrefix returns path without a leading /shards/<shard>, and
// whether what is left starts with ServicesPrefix.
func TrimShardPrefix(path string) (string, bool) {
	if rest, ok := strings.CutPrefix(path, ShardsPrefix); ok {
		_, after, found := strings.Cut(rest, "/")
		if !found {
			return "", false
		}
		path = "/" + after
	}
	return path, strings.HasPrefix(path, ServicesPrefix)
}

// ViewName returns the name of the view of a /services/<name>/... path.
func ViewName(path string) string {
	name, _, _ := strings.Cut(strings.TrimPrefix(path, ServicesPrefix), "/")
	return name
}

// URL returns the view of one name (an initializer, a terminator) on the
// server at base: <base>/services/<view>/<name>, cleaned.
func URL(base, view, name string) string {
	return strings.TrimSuffix(base, "/") + path.Join("/", ServicesPrefix, view, name)
}

// APIExportURL is the view of an export on a virtual workspace server whose
// base URL is base: <base>/services/apiexport/<cluster>/<export>.
func APIExportURL(base string, cluster logicalcluster.Name, export string) string {
	return strings.TrimSuffix(base, "/") + ServicesPrefix + APIExportView + "/" + string(cluster) + "/" + export
}

// ReplicationURL is the view of the copies a ClusterCachedResourceEndpointSlice
// of cluster names, on a virtual workspace server whose base URL is base:
// <base>/services/replication/<cluster>/<slice>.
func ReplicationURL(base string, cluster logicalcluster.Name, slice string) string {
	return strings.TrimSuffix(base, "/") + ServicesPrefix + ReplicationView + "/" + string(cluster) + "/" + slice
}

// ShardServerURL is the base URL of a shard's views, as the URLs of views
// in status fields (APIExportEndpointSlice endpoints, WorkspaceType
// virtualWorkspaces) name it: spec.virtualWorkspaceURL, which kcp's clients
// match those URLs against, or the base URL when it is unset.
func ShardServerURL(s *corev1alpha1.Shard) string {
	if vw := strings.TrimSuffix(s.Spec.VirtualWorkspaceURL, "/"); vw != "" {
		return vw
	}
	return strings.TrimSuffix(s.Spec.BaseURL, "/")
}
