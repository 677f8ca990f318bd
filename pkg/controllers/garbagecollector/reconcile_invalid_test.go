package garbagecollector

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// withEvents makes c record events into a fake clientset.
func withEvents(c *Controller) *kubefake.Clientset {
	events := kubefake.NewClientset()
	c.clusterEvents = func(logicalcluster.Name) (corev1client.EventsGetter, error) { return events.CoreV1(), nil }
	return events
}

// A dependent in namespace "other" naming the UID of an owner in "default"
// is collected, with upstream's OwnerRefInvalidNamespace warning.
func TestAttemptToDeleteCollectsDependentOfOwnerInAnotherNamespace(t *testing.T) {
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner"}
	dep := partial("c", "dep", "dep", ref)
	dep.Namespace = "other"
	c, clients := testController(t, map[logicalcluster.Name][]runtime.Object{
		"c": {partial("c", "owner", "owner"), dep},
	})
	events := withEvents(c)
	owner := cm("c", "owner")
	c.graph.upsert(owner)
	n := cm("c", "dep", "owner")
	n.namespace = "other"
	c.graph.upsert(n)
	if !c.ownersSolidInGraph(owner) || c.ownersSolidInGraph(n) {
		t.Fatalf("an owner in another namespace must not count as solid")
	}

	if err := c.attemptToDelete(context.Background(), keyString(n.key)); err != nil {
		t.Fatal(err)
	}
	if _, err := clients["c"].Resource(configMaps).Namespace("other").Get(context.Background(), "dep", metav1.GetOptions{}); err == nil {
		t.Errorf("dependent of an owner in another namespace still exists")
	}
	if !exists(t, clients["c"], "owner") {
		t.Errorf("the owner was deleted")
	}
	list, err := events.CoreV1().Events("other").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("events in namespace other: %d, want 1", len(list.Items))
	}
	ev := list.Items[0]
	want := `ownerRef [v1/ConfigMap, namespace: other, name: owner, uid: owner] does not exist in namespace "other"`
	if ev.Reason != "OwnerRefInvalidNamespace" || ev.Type != "Warning" || ev.Message != want ||
		ev.InvolvedObject.Name != "dep" || ev.InvolvedObject.Kind != "ConfigMap" || ev.InvolvedObject.UID != "dep" {
		t.Errorf("event = %s %s %q on %+v", ev.Type, ev.Reason, ev.Message, ev.InvolvedObject)
	}
}

// A cluster-scoped object cannot be owned by a namespaced one: as upstream,
// it is neither deleted nor retried, whether the owner exists or not; the
// warning is recorded in namespace default either way, as upstream's
// documentation says of every such reference.
func TestAttemptToDeleteLeavesClusterScopedDependentOfNamespacedOwner(t *testing.T) {
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	for _, ownerExists := range []bool{true, false} {
		ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "owner"}
		dep := partial("c", "dep", "dep", ref)
		dep.Namespace, dep.Kind = "", "Namespace"
		objs := []runtime.Object{dep}
		if ownerExists {
			objs = append(objs, partial("c", "owner", "owner"))
		}
		c, clients := testController(t, map[logicalcluster.Name][]runtime.Object{"c": objs})
		events := withEvents(c)
		if ownerExists {
			c.graph.upsert(cm("c", "owner"))
		}
		n := &node{key: nodeKey{"c", "dep"}, resource: namespaces, name: "dep", owners: []metav1.OwnerReference{ref}}
		c.graph.upsert(n)

		if err := c.attemptToDelete(context.Background(), keyString(n.key)); err != nil {
			t.Fatalf("owner exists %v: %v, want no retry", ownerExists, err)
		}
		if _, err := clients["c"].Resource(namespaces).Get(context.Background(), "dep", metav1.GetOptions{}); err != nil {
			t.Errorf("owner exists %v: cluster-scoped dependent was deleted: %v", ownerExists, err)
		}
		list, _ := events.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		if got := len(list.Items); got != 1 || !strings.Contains(list.Items[0].Message, `does not exist in namespace ""`) {
			t.Errorf("owner exists %v: events %+v, want one OwnerRefInvalidNamespace in default", ownerExists, list.Items)
		}
	}
}
