package replication

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

func TestClusterRoleRulesThatOtherShardsNeed(t *testing.T) {
	rule := func(groups, resources, verbs []string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: verbs}
	}
	l := func(s ...string) []string { return s }
	for _, tc := range []struct {
		name      string
		rules     []rbacv1.PolicyRule
		bind, use bool
	}{
		{"no rules", nil, false, false},
		{"bind apiexports", []rbacv1.PolicyRule{rule(l("apis.kcp.io"), l("apiexports"), l("bind"))}, true, false},
		{"get apiexports", []rbacv1.PolicyRule{rule(l("apis.kcp.io"), l("apiexports"), l("get", "list"))}, false, false},
		{"bind in another group", []rbacv1.PolicyRule{rule(l("example.io"), l("apiexports"), l("bind"))}, false, false},
		{"any verb on content", []rbacv1.PolicyRule{rule(l("apis.kcp.io"), l("apiexports/content"), l("list"))}, true, false},
		{"content without verbs", []rbacv1.PolicyRule{rule(l("apis.kcp.io"), l("apiexports/content"), nil)}, false, false},
		{"all verbs on apiexports", []rbacv1.PolicyRule{rule(l("apis.kcp.io"), l("apiexports"), l("*"))}, true, false},
		{"all groups", []rbacv1.PolicyRule{rule(l("*"), l("apiexports"), l("bind"))}, true, false},
		{"all resources", []rbacv1.PolicyRule{rule(l("apis.kcp.io"), l("*"), l("get"))}, true, false},
		{"use workspacetypes", []rbacv1.PolicyRule{rule(l("tenancy.kcp.io"), l("workspacetypes"), l("use"))}, false, true},
		{"initialize workspacetypes", []rbacv1.PolicyRule{rule(l("tenancy.kcp.io"), l("workspacetypes"), l("initialize"))}, false, true},
		{"get workspacetypes", []rbacv1.PolicyRule{rule(l("tenancy.kcp.io"), l("workspacetypes"), l("get"))}, false, false},
		{"use workspaces", []rbacv1.PolicyRule{rule(l("tenancy.kcp.io"), l("workspaces"), l("use"))}, false, false},
		{"cluster-admin", []rbacv1.PolicyRule{rule(l("*"), l("*"), l("*"))}, true, true},
		{"access to the workspace", []rbacv1.PolicyRule{{Verbs: l("access"), NonResourceURLs: l("/")}}, false, true},
		{"every non-resource verb and URL", []rbacv1.PolicyRule{{Verbs: l("*"), NonResourceURLs: l("*")}}, false, true},
		{"access to another URL", []rbacv1.PolicyRule{{Verbs: l("access"), NonResourceURLs: l("/healthz")}}, false, false},
		{"get on /", []rbacv1.PolicyRule{{Verbs: l("get"), NonResourceURLs: l("/")}}, false, false},
		{"two rules", []rbacv1.PolicyRule{
			rule(l("tenancy.kcp.io"), l("workspacetypes"), l("use")),
			rule(l("apis.kcp.io"), l("apiexports"), l("bind")),
		}, true, true},
	} {
		cr := &rbacv1.ClusterRole{Rules: tc.rules}
		if got := grantsBindOrContent(cr); got != tc.bind {
			t.Errorf("%s: grantsBindOrContent = %v, want %v", tc.name, got, tc.bind)
		}
		if got := grantsUse(cr); got != tc.use {
			t.Errorf("%s: grantsUse = %v, want %v", tc.name, got, tc.use)
		}
	}
}

func TestMaximalPermissionSubjects(t *testing.T) {
	for _, tc := range []struct {
		subject rbacv1.Subject
		want    bool
	}{
		{rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "apis.kcp.io:binding:alice"}, true},
		{rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "apis.kcp.io:binding:system:authenticated"}, true},
		{rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "alice"}, false},
		{rbacv1.Subject{Kind: "ServiceAccount", Name: "apis.kcp.io:binding:x", Namespace: "default"}, false},
	} {
		if got := hasMaximalPermissionSubject(&rbacv1.ClusterRoleBinding{Subjects: []rbacv1.Subject{tc.subject}}); got != tc.want {
			t.Errorf("%+v: %v, want %v", tc.subject, got, tc.want)
		}
	}
}

func TestReplicateValueKeepsASortedSetOfGroups(t *testing.T) {
	for _, tc := range []struct {
		value, group string
		want         bool
		result       string
	}{
		{"", "apis.kcp.io", true, "apis.kcp.io"},
		{"", "apis.kcp.io", false, ""},
		{"apis.kcp.io", "apis.kcp.io", true, "apis.kcp.io"},
		{"apis.kcp.io", "apis.kcp.io", false, ""},
		{"tenancy.kcp.io", "apis.kcp.io", true, "apis.kcp.io,tenancy.kcp.io"},
		{"apis.kcp.io,tenancy.kcp.io", "apis.kcp.io", false, "tenancy.kcp.io"},
		{"core.kcp.io", "tenancy.kcp.io", false, "core.kcp.io"},
		{"tenancy.kcp.io,,apis.kcp.io,tenancy.kcp.io", "x", false, "apis.kcp.io,tenancy.kcp.io"},
	} {
		if got := replicateValue(tc.value, tc.group, tc.want); got != tc.result {
			t.Errorf("replicateValue(%q, %q, %v) = %q, want %q", tc.value, tc.group, tc.want, got, tc.result)
		}
	}
}
