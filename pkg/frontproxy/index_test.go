package frontproxy

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
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

// movingLC is the LogicalCluster of cluster as a shard holds it during a
// move; marked copies serve elsewhere.
func movingLC(cluster string, servedElsewhere bool) *corev1alpha1.LogicalCluster {
	lc := rootlessLC(cluster, "")
	lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] = "root:org:move"
	if servedElsewhere {
		lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] = "true"
	}
	return lc
}

// TestIndexRoutesAMovingClusterToOneShardAtATime walks a move's cut-over:
// the destination's copy is ignored until it serves, then the origin
// serves until it marks its own copy, and never does the cluster go
// unrouted. Ours: kcp's front-proxy bars a moving cluster instead.
func TestIndexRoutesAMovingClusterToOneShardAtATime(t *testing.T) {
	x := testIndex(t)
	origin, destination := logicalClusterHandler{x: x, shard: "root"}, logicalClusterHandler{x: x, shard: "beta"}
	routed := func(step, want string) {
		t.Helper()
		target, result := x.Resolve("movingcluster")
		if result != Found || target.Shard != want {
			t.Fatalf("%s: movingcluster resolves to %v (%v), want shard %s", step, target, result, want)
		}
	}
	origin.OnAdd(movingLC("movingcluster", false))
	routed("before the copy", "root")
	destination.OnAdd(movingLC("movingcluster", true))
	routed("while the destination copies", "root")
	destination.OnUpdate(nil, movingLC("movingcluster", false))
	routed("once both serve, the current one stays", "root")
	origin.OnUpdate(nil, movingLC("movingcluster", true))
	routed("once the origin serves elsewhere", "beta")
	origin.OnUpdate(nil, movingLC("movingcluster", true))
	routed("a later update of the origin's copy", "beta")
	origin.OnDelete(movingLC("movingcluster", true))
	routed("after the origin's clean-up", "beta")

	// A cancelled move: the destination's copy goes, the origin serves on.
	origin.OnAdd(movingLC("cancelled", false))
	destination.OnAdd(movingLC("cancelled", true))
	destination.OnDelete(movingLC("cancelled", true))
	if target, result := x.Resolve("cancelled"); result != Found || target.Shard != "root" {
		t.Fatalf("a cancelled move resolves to %v (%v), want the origin", target, result)
	}
	// The destination's shard goes away mid-move: the origin serves on.
	destination.OnAdd(movingLC("cancelled", true))
	x.removeShard("beta")
	if target, result := x.Resolve("cancelled"); result != Found || target.Shard != "root" {
		t.Fatalf("after the destination shard is gone %v (%v), want the origin", target, result)
	}
}

// A moved parent's Workspaces are on both shards for a while: the
// origin's copy going away (its clean-up) leaves its children routed.
func TestIndexKeepsTheChildrenOfAMovedParent(t *testing.T) {
	x := testIndex(t)
	origin, destination := logicalClusterHandler{x: x, shard: "root"}, logicalClusterHandler{x: x, shard: "beta"}
	originWS, destinationWS := workspaceHandler{x: x, shard: "root"}, workspaceHandler{x: x, shard: "beta"}
	origin.OnAdd(movingLC("movingparent", false))
	origin.OnAdd(movingLC("childcluster", false))
	originWS.OnAdd(workspace("movingparent", "child", "childcluster"))
	destination.OnAdd(movingLC("movingparent", true))
	destinationWS.OnAdd(workspace("movingparent", "child", "childcluster"))
	destination.OnUpdate(nil, movingLC("movingparent", false))
	origin.OnUpdate(nil, movingLC("movingparent", true))
	originWS.OnUpdate(nil, workspace("movingparent", "child", "childcluster"))
	originWS.OnDelete(workspace("movingparent", "child", "childcluster"))
	if target, result := x.Resolve("movingparent:child"); result != Found || target.Cluster != "childcluster" {
		t.Fatalf("the child of a moved parent resolves to %v (%v) after the origin's clean-up", target, result)
	}
	// Deleted where the parent is served, it goes.
	destinationWS.OnDelete(workspace("movingparent", "child", "childcluster"))
	if _, result := x.Resolve("movingparent:child"); result == Found {
		t.Fatal("a deleted child is still routed")
	}
}
