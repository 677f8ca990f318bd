package cacheserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// Access says who may do what on the cache server.
type Access struct {
	// WriterGroups may create, update, patch and delete replicas, and read
	// everything.
	WriterGroups []string
	// ReaderGroups may get, list and watch replicas and read discovery and
	// metrics.
	ReaderGroups []string
}

// readVerbs are the verbs of readers.
var readVerbs = []string{"get", "list", "watch"}

// openPaths are served to everyone, authenticated or not: probes.
var openPaths = []string{"/healthz", "/livez", "/readyz"}

// Authorizer returns the cache server's authorizer: system:masters and the
// writer groups may do everything, the reader groups may read, everybody
// may probe health; everything else is denied with the reason.
func (a Access) Authorizer() authorizer.Authorizer { return authorizer.AuthorizerFunc(a.authorize) }

func (a Access) authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	if !attrs.IsResourceRequest() && isOpenPath(attrs.GetPath()) {
		return authorizer.DecisionAllow, "", nil
	}
	u := attrs.GetUser()
	if u == nil {
		return authorizer.DecisionDeny, "no user", nil
	}
	groups := u.GetGroups()
	member := func(of []string) bool {
		return slices.ContainsFunc(groups, func(g string) bool { return slices.Contains(of, g) })
	}
	switch {
	case slices.Contains(groups, user.SystemPrivilegedGroup):
		return authorizer.DecisionAllow, "", nil
	case !attrs.IsResourceRequest() && isDebugPath(attrs.GetPath()):
		return authorizer.DecisionDeny, "profiles are for system:masters only", nil
	case member(a.WriterGroups):
		return authorizer.DecisionAllow, "", nil
	case member(a.ReaderGroups) && isRead(attrs):
		return authorizer.DecisionAllow, "", nil
	case isRead(attrs):
		return authorizer.DecisionDeny, fmt.Sprintf("the cache server is read by members of the groups %s and written by members of %s", quoted(a.ReaderGroups), quoted(a.WriterGroups)), nil
	}
	return authorizer.DecisionDeny, fmt.Sprintf("only members of the groups %s (the shards) write to the cache server", quoted(a.WriterGroups)), nil
}

// isRead tells whether attrs ask to read: a read verb on a resource, or a
// GET of a non-resource path (discovery, version, metrics).
func isRead(attrs authorizer.Attributes) bool {
	if attrs.IsResourceRequest() {
		return slices.Contains(readVerbs, attrs.GetVerb())
	}
	return attrs.GetVerb() == "get"
}

// debugPath holds the Go profiles (/debug/pprof), for system:masters.
const debugPath = "/debug/pprof"

func isDebugPath(p string) bool { return p == debugPath || strings.HasPrefix(p, debugPath+"/") }

func isOpenPath(p string) bool {
	for _, root := range openPaths {
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}

func quoted(groups []string) string {
	if len(groups) == 0 {
		return "(none)"
	}
	q := make([]string, len(groups))
	for i, g := range groups {
		q[i] = fmt.Sprintf("%q", g)
	}
	return strings.Join(q, ", ")
}
