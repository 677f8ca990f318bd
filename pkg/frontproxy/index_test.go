package frontproxy

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// rootlessLC is the LogicalCluster of a cluster without a parent
// Workspace (a home) whose canonical path is path.
func rootlessLC(cluster, path string) *corev1alpha1.LogicalCluster {
	return &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster", Annotations: map[string]string{
		logicalcluster.AnnotationKey: cluster, logicalcluster.PathAnnotationKey: path,
	}}}
}

func TestIndexResolvesRootlessClustersByTheirPath(t *testing.T) {
	x := testIndex(t)
	logicalClusterHandler{x: x, shard: "root"}.OnAdd(rootlessLC("alicehome", "user:alice"))
	// A workspace nested in the home, placed on another shard.
	owned := rootlessLC("projectcluster", "user:alice:project")
	owned.Spec.Owner = &corev1alpha1.LogicalClusterOwner{Resource: "workspaces", Name: "project", Cluster: "alicehome"}
	logicalClusterHandler{x: x, shard: "beta"}.OnAdd(owned)
	project := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "project", Annotations: map[string]string{logicalcluster.AnnotationKey: "alicehome"}}}
	project.Spec.Cluster, project.Status.Phase = "projectcluster", corev1alpha1.LogicalClusterPhaseReady
	workspaceHandler{x: x, shard: "root"}.OnAdd(project)

	for _, tc := range []struct {
		path           string
		result         Result
		cluster, shard string
	}{
		{"user:alice", Found, "alicehome", "root"},
		{"user:alice:project", Found, "projectcluster", "beta"},
		{"alicehome", Found, "alicehome", "root"},
		{"alicehome:project", Found, "projectcluster", "beta"},
		{"user:bob", NotFound, "", ""},
		{"user:alice:missing", NotFound, "", ""},
		{"user", NotFound, "", ""},
		// An owned cluster is reached through its parent only.
		{"root:org", Found, "orgcluster", "root"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			target, result := x.Resolve(logicalcluster.Path(tc.path))
			if result != tc.result || string(target.Cluster) != tc.cluster || target.Shard != tc.shard {
				t.Fatalf("Resolve(%s) = %v %v, want %v %s on %s", tc.path, target, result, tc.result, tc.cluster, tc.shard)
			}
		})
	}
	if _, ok := x.rootless["user:alice:project"]; ok {
		t.Errorf("a cluster owned by a Workspace was indexed as rootless")
	}
}

func TestIndexForgetsTheRootlessPathOfADeletedCluster(t *testing.T) {
	for _, tc := range []struct {
		name   string
		delete func(x *Index)
	}{
		{"deleted", func(x *Index) {
			logicalClusterHandler{x: x, shard: "root"}.OnDelete(rootlessLC("alicehome", "user:alice"))
		}},
		// A relist tells only the key of what is gone.
		{"gone from a relist", func(x *Index) {
			logicalClusterHandler{x: x, shard: "root"}.OnDelete(cache.DeletedFinalStateUnknown{Key: "alicehome|cluster", Obj: deletedLogicalCluster("alicehome", "cluster")})
		}},
		{"shard removed", func(x *Index) { x.removeShardLocked("root") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := testIndex(t)
			logicalClusterHandler{x: x, shard: "root"}.OnAdd(rootlessLC("alicehome", "user:alice"))
			if _, result := x.Resolve("user:alice"); result != Found {
				t.Fatalf("user:alice not found before the deletion")
			}
			tc.delete(x)
			if target, result := x.Resolve("user:alice"); result != NotFound {
				t.Fatalf("user:alice resolves to %v (%v) after the deletion", target, result)
			}
			if len(x.rootless) != 0 || len(x.rootlessPaths) != 0 {
				t.Errorf("rootless paths left: %v %v", x.rootless, x.rootlessPaths)
			}
		})
	}
}

func TestIndexPrefersAClusterNameToARootlessPath(t *testing.T) {
	x := testIndex(t)
	// A rootless cluster cannot take over a path below root.
	logicalClusterHandler{x: x, shard: "beta"}.OnAdd(rootlessLC("intruder", "root:org"))
	if target, result := x.Resolve("root:org"); result != Found || target.Cluster != "orgcluster" {
		t.Fatalf("root:org resolves to %v (%v), want orgcluster", target, result)
	}
}
