package garbagecollector

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// nodeKey identifies an object in the graph. UIDs are unique only within a
// logical cluster here (an ownerReference never reaches another cluster), so
// the cluster is part of every key.
type nodeKey struct {
	cluster logicalcluster.Name
	uid     types.UID
}

// node is what the collector keeps of an observed object: enough to find it,
// its owners and its deletion state. Nothing else of the object is kept.
type node struct {
	key       nodeKey
	resource  schema.GroupVersionResource
	namespace string
	name      string
	owners    []metav1.OwnerReference
	// deleting: deletionTimestamp is set.
	deleting bool
	// foreground: deleting with the foregroundDeletion finalizer, i.e.
	// waiting for its blocking dependents to go away.
	foreground bool
	// orphan: deleting with the orphan finalizer.
	orphan bool
}

func (n *node) ownerRef(owner types.UID) (metav1.OwnerReference, bool) {
	for _, r := range n.owners {
		if r.UID == owner {
			return r, true
		}
	}
	return metav1.OwnerReference{}, false
}

func (n *node) blocks(owner types.UID) bool {
	r, ok := n.ownerRef(owner)
	return ok && r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion
}

// work is what a graph change asks the workers to look at.
type work struct {
	attemptToDelete []nodeKey
	attemptToOrphan []nodeKey
}

// graph holds the observed objects of all logical clusters that take part in
// garbage collection, and the reverse ownerReference index, both keyed by
// (cluster, UID).
//
// Unlike upstream's graph, which keeps a node for every object it observes,
// it keeps one only for an object that has owners, is being deleted with the
// orphan or foreground finalizer, or is named as owner by an observed
// object (from its next event on): most objects (a workspace's namespaces,
// service accounts, config maps, role bindings) are none of these, and a
// node with its map entry and strings is memory every idle object would
// pay. An owner
// without a node is what upstream calls a virtual node: the collector reads
// it when it needs it (classify), and its removal still reaches its
// dependents (remove, unobservedOwners).
type graph struct {
	mu    sync.RWMutex
	nodes map[nodeKey]*node
	// dependents maps an owner, observed or not, to the objects that name
	// it in their ownerReferences.
	dependents map[nodeKey]map[nodeKey]struct{}
	// clusters interns cluster names, which every object of a cluster
	// otherwise carries as its own copy. A name is dropped with the last
	// node of its cluster, so deleted clusters leave nothing behind.
	clusters map[logicalcluster.Name]*internedCluster
	// peak is the most nodes the maps held since they were last made anew:
	// Go's maps keep their size when entries are deleted, so after a mass
	// deletion the graph copies what is left into maps of its size.
	peak int
}

// shrinkAt is the least peak worth copying the maps for: they are copied
// once at most a quarter of the peak is left.
const shrinkAt = 1024

// shrinkLocked copies the maps into new ones of their size when a mass
// deletion left them mostly empty.
func (g *graph) shrinkLocked() {
	n := len(g.nodes)
	if n > g.peak {
		g.peak = n
		return
	}
	if g.peak < shrinkAt || n > g.peak/4 {
		return
	}
	g.nodes, g.dependents, g.clusters = resized(g.nodes), resized(g.dependents), resized(g.clusters)
	g.peak = n
}

// resized returns a copy of m in a map made for its size.
func resized[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// internedCluster is the one copy of a cluster name and the number of nodes
// that use it.
type internedCluster struct {
	name  logicalcluster.Name
	nodes int
}

func newGraph() *graph {
	return &graph{
		nodes:      map[nodeKey]*node{},
		dependents: map[nodeKey]map[nodeKey]struct{}{},
		clusters:   map[logicalcluster.Name]*internedCluster{},
	}
}

func (g *graph) get(k nodeKey) *node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.nodes[k]
}

// dependentsOf returns the observed dependents of an owner.
func (g *graph) dependentsOf(owner nodeKey) []*node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	var out []*node
	for k := range g.dependents[owner] {
		if n := g.nodes[k]; n != nil {
			out = append(out, n)
		}
	}
	return out
}

// len returns the number of observed objects.
func (g *graph) len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return len(g.nodes)
}

// internLocked returns the interned copy of c, counting one more node of it.
func (g *graph) internLocked(c logicalcluster.Name) logicalcluster.Name {
	i := g.clusters[c]
	if i == nil {
		i = &internedCluster{name: c}
		g.clusters[c] = i
	}
	i.nodes++
	return i.name
}

// releaseLocked counts one node of c less and forgets c with its last node.
func (g *graph) releaseLocked(c logicalcluster.Name) {
	if i := g.clusters[c]; i != nil {
		if i.nodes--; i.nodes <= 0 {
			delete(g.clusters, c)
		}
	}
}

// participates tells whether the collector has to remember n whatever names
// it: it has owners, or waits for the collector to orphan or delete its
// dependents.
func (n *node) participates() bool {
	return len(n.owners) > 0 || n.orphan || n.foreground
}

// keepsLocked tells whether n needs a node: it participates, or observed
// objects name it as their owner.
func (g *graph) keepsLocked(n *node) bool {
	return n.participates() || len(g.dependents[n.key]) > 0
}

// upsert records an added or updated object and returns the keys to look at.
// Nodes are replaced, never mutated, so readers may keep them.
func (g *graph) upsert(n *node) work {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.nodes[n.key]
	keep := g.keepsLocked(n)
	if old == nil && !keep {
		// No owners, nothing waits for it and nothing names it: there is
		// nothing to collect and nothing to remember.
		return work{}
	}
	if old != nil {
		n.key.cluster = old.key.cluster
	} else {
		n.key.cluster = g.internLocked(n.key.cluster)
	}
	g.nodes[n.key] = n
	g.shrinkLocked() // records the peak

	var w work
	var oldOwners []metav1.OwnerReference
	if old != nil {
		oldOwners = old.owners
	}
	for _, r := range oldOwners {
		if _, still := n.ownerRef(r.UID); !still {
			g.unlinkLocked(nodeKey{n.key.cluster, r.UID}, n.key)
		}
	}
	for _, r := range n.owners {
		ok := nodeKey{n.key.cluster, r.UID}
		deps := g.dependents[ok]
		if deps == nil {
			deps = map[nodeKey]struct{}{}
			g.dependents[ok] = deps
		}
		deps[n.key] = struct{}{}
	}

	if n.orphan {
		w.attemptToOrphan = append(w.attemptToOrphan, n.key)
	}
	if n.foreground && (old == nil || !old.foreground) {
		// Every dependent goes, the blocking ones before the owner.
		for k := range g.dependents[n.key] {
			w.attemptToDelete = append(w.attemptToDelete, k)
		}
	}
	if n.foreground {
		w.attemptToDelete = append(w.attemptToDelete, n.key)
	}
	if len(n.owners) > 0 && (old == nil || !sameOwners(old.owners, n.owners)) {
		w.attemptToDelete = append(w.attemptToDelete, n.key)
	}
	// A changed or deleted dependent may unblock an owner waiting for it.
	if old == nil || !sameOwners(old.owners, n.owners) || old.deleting != n.deleting {
		w.attemptToDelete = append(w.attemptToDelete, g.foregroundOwnersLocked(n.key.cluster, oldOwners, n.owners)...)
	}
	if !keep {
		// It lost its owners and nothing names it: forget it.
		g.forgetLocked(n.key)
	}
	return w
}

// forgetLocked drops the node of k, whose links to its owners are gone.
func (g *graph) forgetLocked(k nodeKey) {
	if _, ok := g.nodes[k]; !ok {
		return
	}
	delete(g.nodes, k)
	g.releaseLocked(k.cluster)
	g.shrinkLocked()
}

// remove forgets a deleted object and returns the keys to look at: its
// dependents (their owner is gone), also when it had no node, and owners
// waiting for it.
func (g *graph) remove(k nodeKey) work {
	g.mu.Lock()
	defer g.mu.Unlock()
	var w work
	for d := range g.dependents[k] {
		w.attemptToDelete = append(w.attemptToDelete, d)
	}
	n := g.nodes[k]
	if n == nil {
		return w
	}
	for _, r := range n.owners {
		g.unlinkLocked(nodeKey{k.cluster, r.UID}, k)
	}
	g.forgetLocked(k)
	w.attemptToDelete = append(w.attemptToDelete, g.foregroundOwnersLocked(k.cluster, n.owners, nil)...)
	return w
}

// keysOf returns the keys of the observed objects of one resource, for
// finding the objects a relist no longer contains.
func (g *graph) keysOf(gr schema.GroupResource) map[nodeKey]struct{} {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := map[nodeKey]struct{}{}
	for k, n := range g.nodes {
		if n.resource.GroupResource() == gr {
			out[k] = struct{}{}
		}
	}
	return out
}

// unobservedOwners returns the owners that observed objects name but that
// have no node, each with one of the references to it: their resource is
// known only from the references.
func (g *graph) unobservedOwners() map[nodeKey]metav1.OwnerReference {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := map[nodeKey]metav1.OwnerReference{}
	for owner, deps := range g.dependents {
		if g.nodes[owner] != nil {
			continue
		}
		for d := range deps {
			if dep := g.nodes[d]; dep == nil {
				continue
			} else if ref, ok := dep.ownerRef(owner.uid); ok {
				out[owner] = ref
				break
			}
		}
	}
	return out
}

// unlinkLocked removes dependent from owner's dependents, and the owner's
// node once nothing names it and it does not take part itself.
func (g *graph) unlinkLocked(owner, dependent nodeKey) {
	deps := g.dependents[owner]
	delete(deps, dependent)
	if len(deps) == 0 {
		delete(g.dependents, owner)
		if o := g.nodes[owner]; o != nil && !o.participates() {
			g.forgetLocked(owner)
		}
	}
}

func (g *graph) foregroundOwnersLocked(cluster logicalcluster.Name, lists ...[]metav1.OwnerReference) []nodeKey {
	var out []nodeKey
	for _, list := range lists {
		for _, r := range list {
			if o := g.nodes[nodeKey{cluster, r.UID}]; o != nil && o.foreground {
				out = append(out, o.key)
			}
		}
	}
	return out
}

func sameOwners(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].UID != b[i].UID || blocking(a[i]) != blocking(b[i]) {
			return false
		}
	}
	return true
}

func blocking(r metav1.OwnerReference) bool {
	return r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion
}
