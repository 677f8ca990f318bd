// Package initializingworkspaces serves the views of the workspaces that
// wait for an initializer or a terminator, as kcp's initializingworkspaces
// and terminatingworkspaces virtual workspaces do:
//
//	/services/initializingworkspaces/<initializer>/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters
//	/services/initializingworkspaces/<initializer>/clusters/<name>/...
//	/services/terminatingworkspaces/<terminator>/... (the same shape)
//
// The wildcard lists and watches the LogicalClusters that still wait for
// the initializer (phase Initializing) or terminator (being deleted); a
// watched cluster that stops waiting is DELETED from the view. Under a
// cluster name, the LogicalCluster can be read and the initializer (or
// terminator) removed from its status, and nothing else of it changed;
// every other request is proxied into the workspace as the caller plus the
// group system:kcp:initializer:<initializer> (system:kcp:terminator:...),
// which the workspace content authorizer lets in while the cluster waits.
// Only users with the verb initialize (terminate) on the WorkspaceType
// that the initializer (terminator) <cluster>:<type> names may use a view.
package initializingworkspaces

import (
	"slices"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/authorization/workspacecontent"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
)

// Lifecycle selects the view: the workspaces being initialized or those
// being terminated.
type Lifecycle string

const (
	// Initializing serves the workspaces that wait for an initializer.
	Initializing Lifecycle = "initializing"
	// Terminating serves the deleted workspaces that wait for a terminator.
	Terminating Lifecycle = "terminating"
)

// ServiceName is the name of the view below /services/:
// initializingworkspaces or terminatingworkspaces.
func (l Lifecycle) ServiceName() string { return string(l) + "workspaces" }

// PathPrefix is the path below which the view of every initializer
// (terminator) is served, with a trailing slash.
func (l Lifecycle) PathPrefix() string { return viewurl.ServicesPrefix + l.ServiceName() + "/" }

// URL returns the view of one initializer (terminator) on the server at
// base: <base>/services/<lifecycle>workspaces/<name>.
func (l Lifecycle) URL(base, name string) string {
	return viewurl.URL(base, l.ServiceName(), name)
}

// verb is what a user needs on the WorkspaceType.
func (l Lifecycle) verb() string {
	if l == Terminating {
		return "terminate"
	}
	return "initialize"
}

// group is the group the proxy adds for the initializer (terminator).
func (l Lifecycle) group(name string) string {
	if l == Terminating {
		return workspacecontent.TerminatorGroup(corev1alpha1.LogicalClusterTerminator(name))
	}
	return workspacecontent.InitializerGroup(corev1alpha1.LogicalClusterInitializer(name))
}

// valid tells whether l is one of the two lifecycles.
func (l Lifecycle) valid() bool { return l == Initializing || l == Terminating }

// waitsFor tells whether lc is in the view of name: it still lists name in
// its status and is Initializing (being deleted).
func (l Lifecycle) waitsFor(lc *corev1alpha1.LogicalCluster, name string) bool {
	if l == Terminating {
		return lc.DeletionTimestamp != nil && slices.Contains(lc.Status.Terminators, corev1alpha1.LogicalClusterTerminator(name))
	}
	return lc.DeletionTimestamp == nil && lc.Status.Phase == corev1alpha1.LogicalClusterPhaseInitializing &&
		slices.Contains(lc.Status.Initializers, corev1alpha1.LogicalClusterInitializer(name))
}

// passed tells whether lc has left the view of name for good or may have
// been in it before: it was created for name (its spec lists name), and is
// past Scheduling (being deleted) without waiting for name now.
func (l Lifecycle) passed(lc *corev1alpha1.LogicalCluster, name string) bool {
	if l.waitsFor(lc, name) {
		return false
	}
	if l == Terminating {
		return lc.DeletionTimestamp != nil && slices.Contains(lc.Spec.Terminators, corev1alpha1.LogicalClusterTerminator(name))
	}
	phase := lc.Status.Phase
	return phase != "" && phase != corev1alpha1.LogicalClusterPhaseScheduling &&
		slices.Contains(lc.Spec.Initializers, corev1alpha1.LogicalClusterInitializer(name))
}

// pending returns the initializers (terminators) of lc's status.
func (l Lifecycle) pending(lc *corev1alpha1.LogicalCluster) []string {
	var out []string
	if l == Terminating {
		for _, t := range lc.Status.Terminators {
			out = append(out, string(t))
		}
		return out
	}
	for _, i := range lc.Status.Initializers {
		out = append(out, string(i))
	}
	return out
}

// release removes name from lc's status.
func (l Lifecycle) release(lc *corev1alpha1.LogicalCluster, name string) {
	if l == Terminating {
		lc.Status.Terminators = slices.DeleteFunc(slices.Clone(lc.Status.Terminators), func(t corev1alpha1.LogicalClusterTerminator) bool { return string(t) == name })
		return
	}
	lc.Status.Initializers = slices.DeleteFunc(slices.Clone(lc.Status.Initializers), func(i corev1alpha1.LogicalClusterInitializer) bool { return string(i) == name })
}

// statusField names the status list of the lifecycle in messages.
func (l Lifecycle) statusField() string {
	if l == Terminating {
		return "status.terminators"
	}
	return "status.initializers"
}

// noun is "initializer" or "terminator".
func (l Lifecycle) noun() string {
	if l == Terminating {
		return "terminator"
	}
	return "initializer"
}
