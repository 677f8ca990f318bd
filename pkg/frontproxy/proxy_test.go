package frontproxy

import (
	"net/http"
	"net/url"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func testIndex(t *testing.T) *Index {
	t.Helper()
	x := NewIndex(nil)
	for _, name := range []string{"root", "beta"} {
		u, _ := url.Parse("https://" + name + ":6443")
		x.shards[name] = &shardWatch{name: name, baseURL: u, stop: func() {}, synced: func() bool { return true }}
	}
	lc := func(cluster string) *corev1alpha1.LogicalCluster {
		return &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: "cluster", Annotations: map[string]string{logicalcluster.AnnotationKey: cluster}}}
	}
	ws := func(parent, name, cluster string, phase corev1alpha1.LogicalClusterPhaseType) *tenancyv1alpha1.Workspace {
		w := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{logicalcluster.AnnotationKey: parent}}}
		w.Spec.Cluster = cluster
		w.Status.Phase = phase
		return w
	}
	logicalClusterHandler{x: x, shard: "root"}.OnAdd(lc("root"))
	logicalClusterHandler{x: x, shard: "root"}.OnAdd(lc("orgcluster"))
	logicalClusterHandler{x: x, shard: "beta"}.OnAdd(lc("teamcluster"))
	workspaceHandler{x: x, shard: "root"}.OnAdd(ws("root", "org", "orgcluster", corev1alpha1.LogicalClusterPhaseReady))
	workspaceHandler{x: x, shard: "root"}.OnAdd(ws("orgcluster", "team", "teamcluster", corev1alpha1.LogicalClusterPhaseReady))
	workspaceHandler{x: x, shard: "root"}.OnAdd(ws("orgcluster", "new", "", corev1alpha1.LogicalClusterPhaseScheduling))
	workspaceHandler{x: x, shard: "root"}.OnAdd(ws("orgcluster", "placed", "elsewhere", corev1alpha1.LogicalClusterPhaseInitializing))
	return x
}

func TestIndexResolvesPathsSegmentBySegment(t *testing.T) {
	x := testIndex(t)
	for _, tc := range []struct {
		path          string
		result        Result
		cluster, shrd string
	}{
		{"root", Found, "root", "root"},
		{"root:org", Found, "orgcluster", "root"},
		{"root:org:team", Found, "teamcluster", "beta"},
		{"teamcluster", Found, "teamcluster", "beta"},
		{"root:org:new", Unavailable, "", ""},
		{"root:org:placed", Unavailable, "", ""},
		{"root:org:missing", NotFound, "", ""},
		{"root:missing:team", NotFound, "", ""},
		{"nosuchcluster", NotFound, "", ""},
		{"orgcluster:team", Found, "teamcluster", "beta"},
	} {
		target, result := x.Resolve(logicalcluster.Path(tc.path))
		if result != tc.result || string(target.Cluster) != tc.cluster || target.Shard != tc.shrd {
			t.Errorf("Resolve(%s) = %v %v, want %v %s on %s", tc.path, target, result, tc.result, tc.cluster, tc.shrd)
		}
	}

	// A workspace being deleted is routed until it is gone (its
	// LogicalCluster first); a deleted workspace and a shard that leaves
	// are forgotten at once.
	gone := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "team", Annotations: map[string]string{logicalcluster.AnnotationKey: "orgcluster"}},
		Spec: tenancyv1alpha1.WorkspaceSpec{Cluster: "teamcluster"}, Status: tenancyv1alpha1.WorkspaceStatus{Phase: corev1alpha1.LogicalClusterPhaseTerminating}}
	now := metav1.Now()
	gone.DeletionTimestamp = &now
	workspaceHandler{x: x, shard: "root"}.OnUpdate(nil, gone)
	if target, result := x.Resolve("root:org:team"); result != Found || target.Cluster != "teamcluster" {
		t.Errorf("a workspace being deleted: %v %v, want it routed", target, result)
	}
	workspaceHandler{x: x, shard: "root"}.OnDelete(gone)
	if _, result := x.Resolve("root:org:team"); result != NotFound {
		t.Errorf("a deleted workspace resolves: %v", result)
	}
	x.removeShard("root")
	if _, result := x.Resolve("root:org"); result != NotFound {
		t.Errorf("a workspace of a removed shard resolves: %v", result)
	}
}

func TestSetIdentityReplacesClientHeadersAndDropsPrivilegedGroups(t *testing.T) {
	// A client could send a header of another name itself.
	if _, err := newRoute(PathMapping{Path: "/x/", Backend: "https://b", UserHeader: "X-User"}); err == nil {
		t.Error("a user header outside X-Remote-* is accepted")
	}
	route := &route{PathMapping: PathMapping{UserHeader: "X-Remote-User", GroupHeader: "X-Remote-Group", ExtraHeaderPrefix: "X-Remote-Extra-"}}
	h := http.Header{}
	h.Set("X-Remote-User", "admin")
	h.Add("x-remote-group", "system:masters")
	h.Set("X-Remote-Extra-Foo", "bar")
	h.Set("Authorization", "Bearer static-token")
	h.Set("Impersonate-User", "someone")
	u := &user.DefaultInfo{Name: "alice", Groups: []string{"team", user.SystemPrivilegedGroup, "system:kcp:logical-cluster-admin", "system:authenticated",
		"system:kcp:initializer:root:org", "system:kcp:terminator:root:org"},
		Extra: map[string][]string{"authentication.kcp.io/scopes": {"cluster:abc"}}}
	setIdentity(h, route, u, false)
	want := http.Header{
		"X-Remote-User":  {"alice"},
		"X-Remote-Group": {"team", "system:authenticated"},
		http.CanonicalHeaderKey("X-Remote-Extra-" + url.PathEscape("authentication.kcp.io/scopes")): {"cluster:abc"},
		"Impersonate-User": {"someone"},
	}
	if !reflect.DeepEqual(h, want) {
		t.Errorf("headers = %v, want %v", h, want)
	}

	// A passed-on service account token keeps Authorization and sends no
	// identity headers.
	h = http.Header{"Authorization": {"Bearer sa"}, "X-Remote-User": {"admin"}}
	setIdentity(h, route, u, true)
	if !reflect.DeepEqual(h, http.Header{"Authorization": {"Bearer sa"}}) {
		t.Errorf("pass-through headers = %v", h)
	}
}
