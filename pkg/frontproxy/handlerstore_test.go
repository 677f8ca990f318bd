package frontproxy

import (
	"fmt"
	"net/url"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// recorder writes down the handler calls as "add root|a".
type recorder struct{ calls []string }

func (r *recorder) record(verb string, obj interface{}) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		verb, obj = verb+" unknown", d.Obj
	}
	ws := obj.(*tenancyv1alpha1.Workspace)
	parent, _ := logicalcluster.ObjectCluster(ws.Annotations)
	r.calls = append(r.calls, fmt.Sprintf("%s %s|%s", verb, parent, ws.Name))
}

func (r *recorder) OnAdd(obj interface{})       { r.record("add", obj) }
func (r *recorder) OnUpdate(_, obj interface{}) { r.record("update", obj) }
func (r *recorder) OnDelete(obj interface{})    { r.record("delete", obj) }

func workspace(parent, name, cluster string) *tenancyv1alpha1.Workspace {
	ws := deletedWorkspace(logicalcluster.Name(parent), name).(*tenancyv1alpha1.Workspace)
	ws.Spec.Cluster = cluster
	ws.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
	return ws
}

func TestHandlerStorePassesChangesAndRelistDeletions(t *testing.T) {
	r := &recorder{}
	s := newHandlerStore(r, deletedWorkspace)
	if s.HasSynced() {
		t.Fatal("synced before the first list")
	}
	for _, step := range []struct {
		name  string
		do    func() error
		calls []string
	}{
		{"first list", func() error {
			return s.Replace([]interface{}{workspace("root", "a", "ca"), workspace("org", "a", "cb")}, "1")
		}, []string{"add root|a", "add org|a"}},
		{"watch: a known object", func() error { return s.Update(workspace("root", "a", "ca")) }, []string{"update root|a"}},
		{"watch: a new object", func() error { return s.Add(workspace("root", "b", "cc")) }, []string{"add root|b"}},
		{"watch: deleted", func() error { return s.Delete(workspace("org", "a", "cb")) }, []string{"delete org|a"}},
		{"relist without root|b, with root|c", func() error {
			return s.Replace([]interface{}{workspace("root", "a", "ca"), workspace("root", "c", "cd")}, "2")
		}, []string{"update root|a", "add root|c", "delete unknown root|b"}},
	} {
		r.calls = nil
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if !reflect.DeepEqual(r.calls, step.calls) {
			t.Errorf("%s: calls %q, want %q", step.name, r.calls, step.calls)
		}
	}
	if !s.HasSynced() {
		t.Error("not synced after a list")
	}
}

// TestIndexForgetsWhatARelistNoLongerHas: a workspace and a logical
// cluster deleted while a shard's watch was down are gone from the index
// after the relist, though the stores kept no copy of them.
func TestIndexForgetsWhatARelistNoLongerHas(t *testing.T) {
	x := NewIndex(nil)
	u, _ := url.Parse("https://beta:6443")
	x.shards["beta"] = &shardWatch{name: "beta", baseURL: u, stop: func() {}, synced: func() bool { return true }}
	lcs := newHandlerStore(logicalClusterHandler{x: x, shard: "beta"}, deletedLogicalCluster)
	workspaces := newHandlerStore(workspaceHandler{x: x, shard: "beta"}, deletedWorkspace)
	lc := func(cluster string) *corev1alpha1.LogicalCluster {
		return &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName, Annotations: map[string]string{logicalcluster.AnnotationKey: cluster}}}
	}
	if err := lcs.Replace([]interface{}{lc("root"), lc("orgcluster")}, "1"); err != nil {
		t.Fatal(err)
	}
	if err := workspaces.Replace([]interface{}{workspace("root", "org", "orgcluster")}, "1"); err != nil {
		t.Fatal(err)
	}
	if target, result := x.Resolve("root:org"); result != Found || target.Cluster != "orgcluster" || target.Shard != "beta" {
		t.Fatalf("Resolve(root:org) = %v %v before the relist", target, result)
	}
	if err := lcs.Replace([]interface{}{lc("root")}, "2"); err != nil {
		t.Fatal(err)
	}
	if err := workspaces.Replace(nil, "2"); err != nil {
		t.Fatal(err)
	}
	for _, path := range []logicalcluster.Path{"root:org", "orgcluster"} {
		if target, result := x.Resolve(path); result != NotFound {
			t.Errorf("Resolve(%s) = %v %v after the relist, want NotFound", path, target, result)
		}
	}
	if _, result := x.Resolve("root"); result != Found {
		t.Errorf("Resolve(root) = %v after the relist, want Found", result)
	}
}
