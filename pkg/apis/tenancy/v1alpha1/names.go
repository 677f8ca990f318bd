package v1alpha1

import (
	"crypto/sha256"
	"math/big"
	"strings"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// WorkspaceTypeReservedNames returns the names that user-supplied
// WorkspaceTypes may not have.
func WorkspaceTypeReservedNames() []string {
	return []string{"any", "system"}
}

// TypeName converts the metadata.name of a WorkspaceType to the name of the
// type as users refer to it.
func TypeName(objectName string) WorkspaceTypeName {
	return WorkspaceTypeName(objectName)
}

// ObjectName converts the name of a type as users refer to it to the
// metadata.name of its WorkspaceType.
func ObjectName(typeName WorkspaceTypeName) string {
	return string(typeName)
}

// String returns the reference as "<path>:<name>", or the name alone when
// the path is empty.
func (r WorkspaceTypeReference) String() string {
	if r.Path == "" {
		return string(r.Name)
	}
	return logicalcluster.Path(r.Path).Join(string(r.Name)).String()
}

// InitializerForType returns the name of the initializer of a WorkspaceType:
// "<workspace of the type>:<type name>". Like kcp, it takes the workspace
// from the kcp.io/cluster annotation, which every object read from a shard
// carries, so that the name is the same whatever path the type was reached
// by; an object that has not been stored yet falls back to kcp.io/path.
func InitializerForType(wt *WorkspaceType) corev1alpha1.LogicalClusterInitializer {
	return corev1alpha1.LogicalClusterInitializer(lifecycleName(wt))
}

// TerminatorForType returns the name of the terminator of a WorkspaceType,
// spelled like its initializer.
func TerminatorForType(wt *WorkspaceType) corev1alpha1.LogicalClusterTerminator {
	return corev1alpha1.LogicalClusterTerminator(lifecycleName(wt))
}

func lifecycleName(wt *WorkspaceType) string {
	workspace := logicalcluster.Path(wt.Annotations[logicalcluster.PathAnnotationKey])
	if name, ok := logicalcluster.ObjectCluster(wt.Annotations); ok {
		workspace = name.Path()
	}
	return workspace.Join(wt.Name).String()
}

// ShardHash is kcp's internal form of a shard name in the annotation
// internal.tenancy.kcp.io/shard: the first 8 characters of the SHA-224 of
// the name in lowercase base36 (big-endian, one "0" per leading zero byte).
func ShardHash(shardName string) string {
	sum := sha256.Sum224([]byte(shardName))
	encoded := new(big.Int).SetBytes(sum[:]).Text(36)
	for _, b := range sum {
		if b != 0 {
			break
		}
		encoded = "0" + encoded
	}
	return strings.ToLower(encoded)[:8]
}
