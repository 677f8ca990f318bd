package garbagecollector

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func cm(cluster logicalcluster.Name, uid types.UID, owners ...types.UID) *node {
	n := &node{key: nodeKey{cluster, uid}, resource: configMaps, namespace: "default", name: string(uid)}
	for _, o := range owners {
		n.owners = append(n.owners, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: string(o), UID: o})
	}
	return n
}

func TestGraphKeepsTheSameUIDInTwoClustersApart(t *testing.T) {
	g := newGraph()
	g.upsert(cm("a", "owner"))
	g.upsert(cm("b", "owner"))
	g.upsert(cm("a", "dep-a", "owner"))
	g.upsert(cm("b", "dep-b", "owner"))

	if deps := g.dependentsOf(nodeKey{"a", "owner"}); len(deps) != 1 || deps[0].key.cluster != "a" {
		t.Fatalf("dependents of a/owner = %v, want only a/dep-a", deps)
	}
	w := g.remove(nodeKey{"a", "owner"})
	if !slices.Equal(w.attemptToDelete, []nodeKey{{"a", "dep-a"}}) {
		t.Errorf("removing a/owner asks to look at %v, want only a/dep-a", w.attemptToDelete)
	}
	if deps := g.dependentsOf(nodeKey{"b", "owner"}); len(deps) != 1 || deps[0].key.cluster != "b" {
		t.Errorf("removing a/owner changed b/owner's dependents to %v", deps)
	}
}

func TestGraphChanges(t *testing.T) {
	tests := []struct {
		name       string
		before     []*node
		change     *node // nil: remove key
		remove     nodeKey
		wantDelete []nodeKey
		wantOrphan []nodeKey
	}{{
		name:       "new dependent is checked",
		change:     cm("c", "dep", "owner"),
		wantDelete: []nodeKey{{"c", "dep"}},
	}, {
		name:       "unchanged dependent is not checked again",
		before:     []*node{cm("c", "dep", "owner")},
		change:     cm("c", "dep", "owner"),
		wantDelete: nil,
	}, {
		name:       "removed owner checks its dependents",
		before:     []*node{cm("c", "owner"), cm("c", "dep", "owner")},
		remove:     nodeKey{"c", "owner"},
		wantDelete: []nodeKey{{"c", "dep"}},
	}, {
		name:   "foreground owner checks itself and all dependents",
		before: []*node{cm("c", "owner"), cm("c", "dep", "owner")},
		change: func() *node {
			n := cm("c", "owner")
			n.deleting, n.foreground = true, true
			return n
		}(),
		wantDelete: []nodeKey{{"c", "dep"}, {"c", "owner"}},
	}, {
		name: "removed dependent wakes a foreground owner",
		before: []*node{func() *node {
			n := cm("c", "owner")
			n.deleting, n.foreground = true, true
			return n
		}(), cm("c", "dep", "owner")},
		remove:     nodeKey{"c", "dep"},
		wantDelete: []nodeKey{{"c", "owner"}},
	}, {
		name:   "orphaning owner is orphaned",
		before: []*node{cm("c", "owner")},
		change: func() *node {
			n := cm("c", "owner")
			n.deleting, n.orphan = true, true
			return n
		}(),
		wantOrphan: []nodeKey{{"c", "owner"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGraph()
			for _, n := range tt.before {
				g.upsert(n)
			}
			var w work
			if tt.change != nil {
				w = g.upsert(tt.change)
			} else {
				w = g.remove(tt.remove)
			}
			slices.SortFunc(w.attemptToDelete, func(a, b nodeKey) int { return compare(a, b) })
			if !slices.Equal(w.attemptToDelete, tt.wantDelete) {
				t.Errorf("attemptToDelete = %v, want %v", w.attemptToDelete, tt.wantDelete)
			}
			if !slices.Equal(w.attemptToOrphan, tt.wantOrphan) {
				t.Errorf("attemptToOrphan = %v, want %v", w.attemptToOrphan, tt.wantOrphan)
			}
		})
	}
}

func compare(a, b nodeKey) int {
	if a.cluster != b.cluster {
		if a.cluster < b.cluster {
			return -1
		}
		return 1
	}
	switch {
	case a.uid < b.uid:
		return -1
	case a.uid > b.uid:
		return 1
	}
	return 0
}

func TestDependentsIndexForgetsUnobservedOwnersWithoutDependents(t *testing.T) {
	g := newGraph()
	g.upsert(cm("c", "dep", "ghost"))
	g.remove(nodeKey{"c", "dep"})
	if len(g.dependents) != 0 {
		t.Errorf("dependents index = %v, want empty", g.dependents)
	}
}

func TestGraphForgetsAClusterWithItsLastObject(t *testing.T) {
	g := newGraph()
	g.upsert(cm("a", "owner"))
	g.upsert(cm("a", "dep", "owner"))
	g.upsert(cm("a", "dep", "owner")) // an update counts no second node
	g.upsert(cm("b", "other", "ghost"))

	g.remove(nodeKey{"a", "owner"})
	if _, ok := g.clusters["a"]; !ok {
		t.Fatal("cluster a forgotten while a/dep is still observed")
	}
	g.remove(nodeKey{"a", "dep"})
	g.remove(nodeKey{"a", "dep"}) // a repeated delete releases nothing
	if _, ok := g.clusters["a"]; ok {
		t.Error("cluster a still interned after its last object went")
	}
	if i := g.clusters["b"]; i == nil || i.nodes != 1 {
		t.Errorf("cluster b = %+v, want one node", i)
	}
	if len(g.nodes) != 1 || len(g.dependents) != 1 {
		t.Errorf("graph keeps %d nodes and %d dependents entries, want b/other and its owner's", len(g.nodes), len(g.dependents))
	}
}

func TestGraphMakesItsMapsAnewAfterAMassDeletion(t *testing.T) {
	g := newGraph()
	const n = 4 * shrinkAt
	for i := 0; i < n; i++ {
		c := logicalcluster.Name(fmt.Sprintf("c%d", i))
		g.upsert(cm(c, "owner"))
		g.upsert(cm(c, "dep", "owner"))
		g.upsert(cm(c, "owner")) // named now: its next event gives it a node
	}
	if g.peak != 2*n {
		t.Fatalf("peak %d after %d upserts, want %d", g.peak, 2*n, 2*n)
	}
	nodes := reflect.ValueOf(g.nodes).UnsafePointer()
	// Delete all but the last cluster's objects: the maps are made anew
	// once at most a quarter is left, keeping every entry.
	for i := 0; i < n-1; i++ {
		c := logicalcluster.Name(fmt.Sprintf("c%d", i))
		g.remove(nodeKey{c, "dep"})
		g.remove(nodeKey{c, "owner"})
	}
	if reflect.ValueOf(g.nodes).UnsafePointer() == nodes {
		t.Fatal("the nodes map is the one that held every node")
	}
	if g.peak >= 2*n/4 {
		t.Errorf("peak %d after the copy, want the size then", g.peak)
	}
	last := logicalcluster.Name(fmt.Sprintf("c%d", n-1))
	if g.len() != 2 || g.get(nodeKey{last, "owner"}) == nil || len(g.clusters) != 1 {
		t.Fatalf("%d nodes and %d clusters left, want the last cluster's owner and dependent", g.len(), len(g.clusters))
	}
	if deps := g.dependentsOf(nodeKey{last, "owner"}); len(deps) != 1 {
		t.Fatalf("dependents of the last owner: %v, want its dependent", deps)
	}
}

// Objects that have no owners and that nothing names keep no node; an owner
// gets one from its first event after a dependent names it, and loses it
// with its last dependent.
func TestGraphKeepsNodesOnlyOfObjectsThatTakePartInCollection(t *testing.T) {
	g := newGraph()
	if w := g.upsert(cm("c", "plain")); len(w.attemptToDelete)+len(w.attemptToOrphan) != 0 {
		t.Errorf("a plain object asks to look at %+v", w)
	}
	g.upsert(cm("c", "owner"))
	if g.len() != 0 || len(g.clusters) != 0 {
		t.Fatalf("%d nodes and %d clusters after two plain objects, want none", g.len(), len(g.clusters))
	}
	g.upsert(cm("c", "dep", "owner"))
	if g.get(nodeKey{"c", "dep"}) == nil || g.get(nodeKey{"c", "owner"}) != nil {
		t.Fatal("want a node for the dependent only, until the owner's next event")
	}
	if got := g.unobservedOwners(); len(got) != 1 || got[nodeKey{"c", "owner"}].Name != "owner" {
		t.Errorf("unobserved owners = %v, want c/owner with the dependent's reference", got)
	}
	g.upsert(cm("c", "owner"))
	if g.get(nodeKey{"c", "owner"}) == nil || len(g.unobservedOwners()) != 0 {
		t.Fatal("the named owner has no node after its next event")
	}
	// The dependent drops its reference: the owner is plain again.
	if w := g.upsert(cm("c", "dep")); len(w.attemptToDelete) != 0 {
		t.Errorf("a dependent without owners asks to look at %v", w.attemptToDelete)
	}
	if g.len() != 0 || len(g.dependents) != 0 || len(g.clusters) != 0 {
		t.Errorf("%d nodes, %d dependents entries, %d clusters left, want none", g.len(), len(g.dependents), len(g.clusters))
	}
	// A deleting object keeps a node only with a finalizer the collector
	// serves.
	n := cm("c", "deleting")
	n.deleting = true
	g.upsert(n)
	n = cm("c", "deleting")
	n.deleting, n.orphan = true, true
	if w := g.upsert(n); !slices.Equal(w.attemptToOrphan, []nodeKey{{"c", "deleting"}}) || g.get(n.key) == nil {
		t.Errorf("orphaning object: work %+v, node %v", w, g.get(n.key))
	}
}

// The deletion of an owner the graph has no node of still reaches its
// dependents.
func TestGraphRemoveOfAnOwnerWithoutNodeChecksItsDependents(t *testing.T) {
	g := newGraph()
	g.upsert(cm("c", "owner"))
	g.upsert(cm("c", "dep", "owner"))
	w := g.remove(nodeKey{"c", "owner"})
	if !slices.Equal(w.attemptToDelete, []nodeKey{{"c", "dep"}}) {
		t.Errorf("attemptToDelete = %v, want c/dep", w.attemptToDelete)
	}
}
