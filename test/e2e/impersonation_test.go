package e2e

import (
	"context"
	"slices"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
)

const (
	// scopesExtra is the user extra that scopes an identity to clusters.
	scopesExtra = "authentication.kcp.io/scopes"
	// impersonationRefused is in the message of every refused
	// impersonation of a privileged group.
	impersonationRefused = "not allowed"
)

// sharedWorkspaces returns the workspace helpers for the shared shard, once
// root's bootstrap is complete.
func sharedWorkspaces(t *testing.T) *wsEnv {
	t.Helper()
	e := &wsEnv{s: sharedShard(t)}
	e.waitForRootBootstrap(t)
	return e
}

// impersonating returns cfg acting as user with groups and extras.
func impersonating(cfg *rest.Config, user string, groups []string, extra map[string][]string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups, Extra: extra}
	return c
}

// workspaceAdmin creates an organization and makes who its cluster-admin.
func workspaceAdmin(ctx context.Context, t *testing.T, e *wsEnv, prefix, who string) ws {
	t.Helper()
	org := e.readyOrg(ctx, t, prefix)
	admin := e.kube(t, kcpAdmin, org.path())
	bindClusterRole(ctx, t, admin, who+"-access", workspaceAccessRole, userSubject(who))
	bindClusterRole(ctx, t, admin, who+"-admin", "cluster-admin", userSubject(who))
	eventuallyAllowed(ctx, t, who+": list configmaps in "+org.path(), func(ctx context.Context) error {
		return listConfigMaps(ctx, e.kube(t, who, org.path()))
	})
	return org
}

// TestWorkspaceAdminCannotImpersonatePrivilegedGroups is the escalation of
// a workspace admin (cluster-admin in its workspace, so allowed to
// impersonate anything by RBAC) who impersonates system:masters or one of
// kcp's system groups to write the status of its LogicalCluster and of its
// child's Workspace: the impersonation itself is refused with 403.
func TestWorkspaceAdminCannotImpersonatePrivilegedGroups(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaces(t)
	ctx := testContext(t)
	org := workspaceAdmin(ctx, t, e, "imp-esc", "user-1")
	child := readyWorkspace(ctx, t, e.kcp(t, kcpAdmin), org.path(), "child", nil)
	bindClusterRole(ctx, t, e.kube(t, kcpAdmin, child.path()), "user-1-access", workspaceAccessRole, userSubject("user-1"))
	bindClusterRole(ctx, t, e.kube(t, kcpAdmin, child.path()), "user-1-admin", "cluster-admin", userSubject("user-1"))
	eventuallyAllowed(ctx, t, "user-1: list configmaps in "+child.path(), func(ctx context.Context) error {
		return listConfigMaps(ctx, e.kube(t, "user-1", child.path()))
	})

	for _, group := range []string{"system:masters", "system:kcp:admin", "system:kcp:logical-cluster-admin", "system:kcp:external-logical-cluster-admin"} {
		t.Run(group, func(t *testing.T) {
			cfg := impersonating(e.config(t, "user-1", "root"), "user-1", []string{group}, nil)
			cfg.Host = e.s.BaseURL(t)
			attacker := newKCPREST(t, cfg)

			lcStatus := attacker.patchStatus(ctx, child.cluster(), logicalClustersGVR, "cluster", `{"status":{"phase":"Unavailable"}}`)
			requireAPIError(t, lcStatus, 403, "user-1 as "+group+": patch the status of its LogicalCluster", impersonationRefused)

			wsStatus := attacker.patchStatus(ctx, org.path(), workspacesGVR, child.name, `{"status":{"phase":"Unavailable"}}`)
			requireAPIError(t, wsStatus, 403, "user-1 as "+group+": patch the status of its child's Workspace", impersonationRefused)

			// Not even a read gets through with the group.
			err := listConfigMaps(ctx, newKubeClient(t, impersonating(e.config(t, "user-1", child.path()), "user-1", []string{group}, nil)))
			requireAPIError(t, err, 403, "user-1 as "+group+": list configmaps", impersonationRefused)
		})
	}

	// Access reviews agree: RBAC grants user-1 impersonate on groups, the
	// gatekeeper takes system:masters out.
	for group, want := range map[string]bool{"system:masters": false, "team-2": true} {
		r, err := e.kube(t, "user-1", child.path()).AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "groups", Name: group}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SelfSubjectAccessReview: %v", err)
		}
		if r.Status.Allowed != want {
			t.Errorf("user-1 may impersonate group %s: review says %v (%s), want %v", group, r.Status.Allowed, r.Status.Reason, want)
		}
	}

	// A warrant is an identity too: one carrying system:masters is refused.
	warrant := map[string][]string{"authorization.kcp.io/warrant": {`{"user":"user-1","groups":["system:masters"]}`}}
	err := listConfigMaps(ctx, newKubeClient(t, impersonating(e.config(t, "user-1", child.path()), "user-1", nil, warrant)))
	requireAPIError(t, err, 403, "user-1 with a system:masters warrant: list configmaps", impersonationRefused)

	// Nothing was written.
	lc := getLogicalCluster(ctx, t, e.kcp(t, kcpAdmin), child.cluster())
	if lc.Status.Phase != "Ready" {
		t.Errorf("LogicalCluster of %s: phase %q, want Ready", child.path(), lc.Status.Phase)
	}
	w := &tenancyv1alpha1.Workspace{}
	if err := e.kcp(t, kcpAdmin).get(ctx, org.path(), workspacesGVR, child.name, w); err != nil {
		t.Fatal(err)
	}
	if w.Status.Phase != "Ready" {
		t.Errorf("Workspace %s: phase %q, want Ready", child.path(), w.Status.Phase)
	}
}

// TestImpersonatedIdentityIsScopedToTheWorkspace is a workspace admin who
// wants a workspace type that only user-2 may use (in another
// organization): it makes user-2 an admin of its own workspace and
// impersonates user-2 there. The impersonated user-2 carries the scope of
// the workspace and counts as a plain authenticated user where the type
// lives, so the type is refused; user-2 itself may use it.
func TestImpersonatedIdentityIsScopedToTheWorkspace(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaces(t)
	ctx := testContext(t)
	mine := workspaceAdmin(ctx, t, e, "imp-scope", "user-1")
	bindClusterRole(ctx, t, e.kube(t, "user-1", mine.path()), "user-2-access", workspaceAccessRole, userSubject("user-2"))
	bindClusterRole(ctx, t, e.kube(t, "user-1", mine.path()), "user-2-admin", "cluster-admin", userSubject("user-2"))

	theirs := e.readyOrg(ctx, t, "imp-types")
	private := uniqueName("private")
	createWorkspaceType(ctx, t, e.kcp(t, kcpAdmin), theirs.path(), private, tenancyv1alpha1.WorkspaceTypeSpec{})
	theirAdmin := e.kube(t, kcpAdmin, theirs.path())
	createClusterRole(ctx, t, theirAdmin, "use-"+private, rbacv1.PolicyRule{
		APIGroups: []string{tenancyv1alpha1.GroupName}, Resources: []string{"workspacetypes"}, ResourceNames: []string{private}, Verbs: []string{"use"},
	})
	bindClusterRole(ctx, t, theirAdmin, "user-2-use", "use-"+private, userSubject("user-2"))
	bindClusterRole(ctx, t, theirAdmin, "user-2-access", workspaceAccessRole, userSubject("user-2"))

	// What the impersonated identity is: user-2, scoped to this workspace.
	asUser2 := impersonating(e.config(t, "user-1", mine.path()), "user-2", []string{"team-2"}, nil)
	var review *authenticationv1.SelfSubjectReview
	eventuallyAllowed(ctx, t, "user-1 as user-2: whoami in "+mine.path(), func(ctx context.Context) (err error) {
		review, err = newKubeClient(t, asUser2).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return err
	})
	u := review.Status.UserInfo
	if u.Username != "user-2" || !slices.Contains(u.Groups, "team-2") {
		t.Errorf("impersonated user %q groups %v, want user-2 in team-2", u.Username, u.Groups)
	}
	if got, want := u.Extra[scopesExtra], []string{"cluster:" + mine.cluster()}; !slices.Equal(got, want) {
		t.Errorf("extra %s = %v, want %v", scopesExtra, got, want)
	}

	cfg := rest.CopyConfig(asUser2)
	cfg.Host = e.s.BaseURL(t)
	_, err := tryCreateWorkspace(ctx, newKCPREST(t, cfg), mine.path(), "stolen", typeRef(private, theirs.path()))
	requireAPIError(t, err, 403, "user-1 as user-2: create a workspace of "+theirs.path()+":"+private, `"use"`)

	// user-2 itself may.
	eventuallyAllowed(ctx, t, "user-2: create a workspace of "+theirs.path()+":"+private, func(ctx context.Context) error {
		_, err := tryCreateWorkspace(ctx, e.kcp(t, "user-2"), mine.path(), "legit", typeRef(private, theirs.path()))
		return err
	})
}

// TestSystemMastersImpersonatesUnscoped: system:masters may impersonate
// system:masters, and that identity carries no scope.
func TestSystemMastersImpersonatesUnscoped(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaces(t)
	ctx := testContext(t)
	cfg := impersonating(e.config(t, shardAdmin, "root"), "break-glass", []string{"system:masters"}, nil)
	review, err := newKubeClient(t, cfg).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("shard-admin as break-glass in system:masters: %v", err)
	}
	if u := review.Status.UserInfo; u.Username != "break-glass" || !slices.Contains(u.Groups, "system:masters") || len(u.Extra[scopesExtra]) != 0 {
		t.Errorf("impersonated user %q groups %v extra %v, want break-glass in system:masters without scopes", u.Username, u.Groups, u.Extra)
	}
}
