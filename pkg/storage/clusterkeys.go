package storage

import (
	"strings"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// CustomResourcesSegment follows <group>/<resource> in the keys of the
// custom resources of a CRD; bound resources put the export's identity
// hash there instead.
const CustomResourcesSegment = "customresources"

// identityHashLength is the length of an APIExport identity hash in keys:
// hex SHA-256, longer than any logical cluster name may be.
const identityHashLength = 64

// ClusterKey is a storage key below the etcd prefix, cut where the
// logical cluster is inserted.
type ClusterKey struct {
	// Resource is the resource prefix: <group>/<resource>, followed by
	// /customresources or /<identity hash> for custom and bound resources.
	Resource string
	// Cluster is the logical cluster the object belongs to.
	Cluster logicalcluster.Name
	// Object is what follows the cluster: [<namespace>/]<name>.
	Object string
}

// SplitClusterKey cuts key, which is relative to the etcd prefix
// ("core/configmaps/<cluster>/<namespace>/<name>", a leading slash is
// allowed), into resource prefix, cluster and object; false for a key
// that is not of an object of a logical cluster.
func SplitClusterKey(key string) (ClusterKey, bool) {
	parts := strings.Split(strings.TrimPrefix(key, "/"), "/")
	if len(parts) < 4 {
		return ClusterKey{}, false
	}
	resourceSegments := 2
	if third := parts[2]; third == CustomResourcesSegment || isIdentityHash(third) {
		resourceSegments = 3
	}
	if len(parts) < resourceSegments+2 {
		return ClusterKey{}, false
	}
	cluster := parts[resourceSegments]
	if logicalcluster.ValidateName(cluster) != nil {
		return ClusterKey{}, false
	}
	object := strings.Join(parts[resourceSegments+1:], "/")
	if object == "" {
		return ClusterKey{}, false
	}
	return ClusterKey{Resource: strings.Join(parts[:resourceSegments], "/"), Cluster: logicalcluster.Name(cluster), Object: object}, true
}

// String joins the key again, without a leading slash.
func (k ClusterKey) String() string {
	return k.Resource + "/" + string(k.Cluster) + "/" + k.Object
}

func isIdentityHash(s string) bool {
	if len(s) != identityHashLength {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}
