// Package scope knows the kcp user extras that bind an identity to logical
// clusters: scopes (authentication.kcp.io/scopes), the logical cluster of a
// service account (authentication.kcp.io/cluster-name) and warrants
// (authorization.kcp.io/warrant, alternate identities the user may act as).
//
// An identity is in scope in a cluster when every one of its scope values
// names that cluster and, for a service account, when it belongs to that
// cluster. Out of scope it counts, as in kcp, as a plain authenticated user
// (or a plain unauthenticated one, if it was not authenticated) in the group
// system:cluster:<cluster> of each cluster it comes from, which another
// workspace's RBAC can grant.
//
// Authentication sets these extras and authorization reads them: both
// import this package, and neither imports the other.
package scope

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	kubeserviceaccount "k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

const (
	// ScopeExtraKey restricts a user to logical clusters. Each value is a
	// comma-separated list of "cluster:<name>" alternatives; all values
	// must admit a cluster for the user to be in scope there.
	ScopeExtraKey = "authentication.kcp.io/scopes"
	// WarrantExtraKey carries JSON-encoded Warrants: identities whose
	// permissions the user also has.
	WarrantExtraKey = "authorization.kcp.io/warrant"
	// ServiceAccountClusterExtraKey carries the logical cluster of an
	// authenticated service account (kcp's key); elsewhere the service
	// account counts as a plain authenticated user of that cluster's group.
	ServiceAccountClusterExtraKey = "authentication.kcp.io/cluster-name"
	// ClusterGroupPrefix starts the group an identity out of scope has for
	// each cluster it comes from: system:cluster:<cluster>.
	ClusterGroupPrefix = "system:cluster:"

	// GlobalServiceAccountPrefix starts kcp's global name of a service
	// account, which names its logical cluster:
	// system:kcp:serviceaccount:<cluster>:<namespace>:<name>. No
	// authenticator issues it; RBAC subjects name it.
	GlobalServiceAccountPrefix = "system:kcp:serviceaccount:"

	clusterScopePrefix = "cluster:"
)

// Warrant is an alternate identity of a user, as carried in WarrantExtraKey.
type Warrant struct {
	User   string              `json:"user,omitempty"`
	Groups []string            `json:"groups,omitempty"`
	UID    string              `json:"uid,omitempty"`
	Extra  map[string][]string `json:"extra,omitempty"`
}

// ClusterScope is the scope value that admits exactly one cluster.
func ClusterScope(cluster logicalcluster.Name) string {
	return clusterScopePrefix + string(cluster)
}

// IsServiceAccount tells whether u is a service account by its name.
func IsServiceAccount(u user.Info) bool {
	return strings.HasPrefix(u.GetName(), kubeserviceaccount.ServiceAccountUsernamePrefix)
}

// ServiceAccountCluster returns the logical cluster a service account user
// was authenticated for, and false for other users.
func ServiceAccountCluster(u user.Info) (logicalcluster.Name, bool) {
	if u == nil {
		return "", false
	}
	v := u.GetExtra()[ServiceAccountClusterExtraKey]
	if len(v) != 1 || v[0] == "" {
		return "", false
	}
	return logicalcluster.Name(v[0]), true
}

// GlobalServiceAccountName is the global name of the service account
// named saUser (system:serviceaccount:<namespace>:<name>) of cluster.
func GlobalServiceAccountName(cluster logicalcluster.Name, saUser string) string {
	return GlobalServiceAccountPrefix + string(cluster) + ":" + strings.TrimPrefix(saUser, kubeserviceaccount.ServiceAccountUsernamePrefix)
}

// GlobalServiceAccount returns the identity a service account has besides
// its own in every logical cluster, kcp's GlobalServiceAccount feature (on
// by default there): its global name, system:authenticated when it was
// authenticated, and its scopes, which keep applying. False for other
// users and for service accounts without a logical cluster.
func GlobalServiceAccount(u user.Info) (user.Info, bool) {
	if u == nil || !IsServiceAccount(u) {
		return nil, false
	}
	home, ok := ServiceAccountCluster(u)
	if !ok {
		return nil, false
	}
	global := &user.DefaultInfo{Name: GlobalServiceAccountName(home, u.GetName())}
	for _, g := range u.GetGroups() {
		if g == user.AllAuthenticated {
			global.Groups = []string{user.AllAuthenticated}
			break
		}
	}
	if scopes, ok := u.GetExtra()[ScopeExtraKey]; ok {
		global.Extra = map[string][]string{ScopeExtraKey: scopes}
	}
	return global, true
}

// IsForeign tells whether service account u belongs to a cluster other than
// cluster. A service account without a cluster (as named in a
// SubjectAccessReview) is local.
func IsForeign(u user.Info, cluster logicalcluster.Name) bool {
	clusters := u.GetExtra()[ServiceAccountClusterExtraKey]
	switch len(clusters) {
	case 0:
		return false
	case 1:
		return clusters[0] != string(cluster)
	default:
		return true
	}
}

// InScope tells whether u acts as itself in cluster.
func InScope(u user.Info, cluster logicalcluster.Name) bool {
	if IsServiceAccount(u) && IsForeign(u, cluster) {
		return false
	}
	for _, value := range u.GetExtra()[ScopeExtraKey] {
		if !admits(value, cluster) {
			return false
		}
	}
	return true
}

func admits(value string, cluster logicalcluster.Name) bool {
	for _, s := range strings.Split(value, ",") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(s), clusterScopePrefix); ok && name == string(cluster) {
			return true
		}
	}
	return false
}

// OutOfScope is what an identity counts as where it is not in scope: an
// anonymous member of system:authenticated if it was authenticated (of
// system:unauthenticated otherwise) and of the group ClusterGroup(c) of each
// cluster c it comes from (Origins).
func OutOfScope(u user.Info) user.Info {
	authenticated := false
	for _, g := range u.GetGroups() {
		if g == user.AllAuthenticated {
			authenticated = true
		}
	}
	if !authenticated {
		return &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	}
	groups := []string{user.AllAuthenticated}
	for _, c := range Origins(u) {
		groups = append(groups, ClusterGroup(c))
	}
	return &user.DefaultInfo{Name: user.Anonymous, Groups: groups}
}

// ClusterGroup is the group of identities that come from cluster.
func ClusterGroup(cluster logicalcluster.Name) string {
	return ClusterGroupPrefix + string(cluster)
}

// Origins are the clusters an identity is bound to: a service account's
// own cluster, and the clusters that every scope value admits. A service
// account whose scopes exclude its own cluster, like a user whose scopes
// admit no cluster together, comes from none.
func Origins(u user.Info) []logicalcluster.Name {
	var candidates []logicalcluster.Name
	if IsServiceAccount(u) {
		if c, ok := ServiceAccountCluster(u); ok {
			candidates = []logicalcluster.Name{c}
		}
	} else {
		values := u.GetExtra()[ScopeExtraKey]
		if len(values) == 0 {
			return nil
		}
		for _, s := range strings.Split(values[0], ",") {
			if name, ok := strings.CutPrefix(strings.TrimSpace(s), clusterScopePrefix); ok && name != "" {
				candidates = append(candidates, logicalcluster.Name(name))
			}
		}
	}
	var out []logicalcluster.Name
	for _, c := range candidates {
		if InScope(u, c) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// Effective returns u in cluster: u itself when in scope, OutOfScope(u)
// otherwise.
func Effective(u user.Info, cluster logicalcluster.Name) user.Info {
	if InScope(u, cluster) {
		return u
	}
	return OutOfScope(u)
}

// Warrants decodes the warrants of u. Warrants that are not valid JSON, and
// warrants for service accounts that do not name their cluster (they would
// be local everywhere), are returned as errors and otherwise ignored.
func Warrants(u user.Info) ([]user.Info, []error) {
	var out []user.Info
	var errs []error
	for _, v := range u.GetExtra()[WarrantExtraKey] {
		var w Warrant
		if err := json.Unmarshal([]byte(v), &w); err != nil {
			errs = append(errs, fmt.Errorf("invalid warrant: %w", err))
			continue
		}
		wu := &user.DefaultInfo{Name: w.User, UID: w.UID, Groups: w.Groups, Extra: w.Extra}
		if IsServiceAccount(wu) && len(w.Extra[ServiceAccountClusterExtraKey]) == 0 {
			errs = append(errs, fmt.Errorf("warrant for service account %q names no logical cluster", w.User))
			continue
		}
		out = append(out, wu)
	}
	return out, errs
}

// ScopeTo returns u restricted to cluster: the scope is added to u and,
// recursively, to each of its warrants. Warrants that cannot be decoded are
// dropped.
func ScopeTo(u user.Info, cluster logicalcluster.Name) user.Info {
	extra := make(map[string][]string, len(u.GetExtra())+1)
	for k, v := range u.GetExtra() {
		if k != WarrantExtraKey {
			extra[k] = v
		}
	}
	extra[ScopeExtraKey] = append(append([]string(nil), extra[ScopeExtraKey]...), ClusterScope(cluster))
	warrants, _ := Warrants(u)
	for _, w := range warrants {
		sw := ScopeTo(w, cluster)
		raw, err := json.Marshal(Warrant{User: sw.GetName(), Groups: sw.GetGroups(), UID: sw.GetUID(), Extra: sw.GetExtra()})
		if err != nil {
			continue
		}
		extra[WarrantExtraKey] = append(extra[WarrantExtraKey], string(raw))
	}
	return &user.DefaultInfo{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: extra}
}
