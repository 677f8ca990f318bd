package replication

import (
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// ReplicateAnnotationKey marks a ClusterRole or ClusterRoleBinding for
// replication to the cache server. As in kcp, its value is the sorted,
// comma-separated set of the API groups whose rules want the object
// replicated: apis.kcp.io (bind and apiexports/content, maximal permission
// policies) and tenancy.kcp.io (use of WorkspaceTypes).
const ReplicateAnnotationKey = "internal.kcp.io/replicate"

// MarkedForReplication tells whether an object carries
// ReplicateAnnotationKey: the Filter of the RBAC sources.
func MarkedForReplication(m metav1.Object) bool {
	return m.GetAnnotations()[ReplicateAnnotationKey] != ""
}

// The groups the labeler writes into ReplicateAnnotationKey.
var (
	apisGroup    = apisv1alpha1.SchemeGroupVersion.Group
	tenancyGroup = tenancyv1alpha1.SchemeGroupVersion.Group
)

// ruleGrants tells whether rule grants one of verbs (nil: any verb) on one
// of resources in group; * in the rule's groups, resources or verbs grants
// everything.
func ruleGrants(rule rbacv1.PolicyRule, group string, resources, verbs []string) bool {
	has := func(list []string, want []string) bool {
		for _, v := range list {
			if v == "*" || slices.Contains(want, v) {
				return true
			}
		}
		return false
	}
	return has(rule.APIGroups, []string{group}) && has(rule.Resources, resources) && (verbs == nil && len(rule.Verbs) > 0 || has(rule.Verbs, verbs))
}

// grantsBindOrContent tells whether a ClusterRole grants bind on
// apis.kcp.io apiexports or any verb on apiexports/content: what another
// shard's workspace needs to judge a binding to an export of this one.
func grantsBindOrContent(cr *rbacv1.ClusterRole) bool {
	for _, rule := range cr.Rules {
		if ruleGrants(rule, apisGroup, []string{"apiexports"}, []string{"bind"}) ||
			ruleGrants(rule, apisGroup, []string{"apiexports/content"}, nil) {
			return true
		}
	}
	return false
}

// grantsUse tells whether a ClusterRole grants use (or, as kcp counts
// them, initialize or terminate) on tenancy.kcp.io workspacetypes, or
// access to the workspace: another shard judges use of a type and bind of
// an export with the access check a request in the workspace passes, so
// the RBAC granting access travels with the RBAC granting use and bind
// (kcp's deep SubjectAccessReviews reach the owning shard instead).
func grantsUse(cr *rbacv1.ClusterRole) bool {
	for _, rule := range cr.Rules {
		if ruleGrants(rule, tenancyGroup, []string{"workspacetypes"}, []string{"use", "initialize", "terminate"}) || grantsAccess(rule) {
			return true
		}
	}
	return false
}

// grantsAccess tells whether rule grants the non-resource verb access on
// "/", the permission to enter a workspace.
func grantsAccess(rule rbacv1.PolicyRule) bool {
	return (slices.Contains(rule.Verbs, "access") || slices.Contains(rule.Verbs, "*")) &&
		(slices.Contains(rule.NonResourceURLs, "/") || slices.Contains(rule.NonResourceURLs, "*"))
}

// hasMaximalPermissionSubject tells whether a ClusterRoleBinding binds a
// user or group of an APIExport's maximal permission policy
// (apis.kcp.io:binding:...), which consumers on other shards evaluate.
func hasMaximalPermissionSubject(crb *rbacv1.ClusterRoleBinding) bool {
	for _, s := range crb.Subjects {
		if (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) && s.APIGroup == rbacv1.GroupName &&
			strings.HasPrefix(s.Name, apisv1alpha1.MaximalPermissionPolicyRBACUserGroupPrefix) {
			return true
		}
	}
	return false
}

// explicitRules returns cr with only the rules that name every group,
// resource, verb and URL they grant (no *).
func explicitRules(cr *rbacv1.ClusterRole) *rbacv1.ClusterRole {
	out := &rbacv1.ClusterRole{ObjectMeta: cr.ObjectMeta}
	for _, rule := range cr.Rules {
		if !slices.Contains(rule.APIGroups, "*") && !slices.Contains(rule.Resources, "*") &&
			!slices.Contains(rule.Verbs, "*") && !slices.Contains(rule.NonResourceURLs, "*") {
			out.Rules = append(out.Rules, rule)
		}
	}
	return out
}

// referencesClusterRole returns the name of the ClusterRole a binding
// refers to, or "".
func referencesClusterRole(crb *rbacv1.ClusterRoleBinding) string {
	if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.APIGroup != rbacv1.GroupName {
		return ""
	}
	return crb.RoleRef.Name
}

// replicateValue returns value (of ReplicateAnnotationKey) with group
// added when want is set and removed otherwise; other groups are kept.
func replicateValue(value, group string, want bool) string {
	var groups []string
	for _, g := range strings.Split(value, ",") {
		if g != "" && g != group && !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	if want {
		groups = append(groups, group)
	}
	slices.Sort(groups)
	return strings.Join(groups, ",")
}

// InExportWorkspace returns the Filter of the admission configuration
// (webhook configurations, admission policies and their bindings): objects
// of a logical cluster that holds an APIExport, whose bound resources
// consumers on other shards create. Its FilterReads is exports. kcp
// replicates every workspace's; the others' judge nothing elsewhere.
func InExportWorkspace(exports *wildcardinformer.Informer) func(metav1.Object) bool {
	return func(m metav1.Object) bool {
		cluster, ok := logicalcluster.ObjectCluster(m.GetAnnotations())
		if !ok {
			return false
		}
		objs, err := exports.List(cluster, "")
		return err == nil && len(objs) > 0
	}
}
