package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/test/framework"
)

// TestRequiredGroupsGuardAnOrganizationAndItsChildren: system:masters
// creates an organization that requires group team-1. A tenant creating a
// child with a forged, wider required-groups annotation gets the parent's
// value instead, and cannot change it later; a user outside team-1 is
// refused in the organization and in its child, discovery included, even
// with cluster-admin there.
func TestRequiredGroupsGuardAnOrganizationAndItsChildren(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx := testContext(t)
	const (
		key      = corev1alpha1.RequiredGroupsAnnotationKey
		member   = "user-3" // team-3
		outsider = "user-4" // team-4
		required = "team-3"
	)
	masters, kcp := e.kcp(t, shardAdmin), e.kcp(t, kcpAdmin)

	name := framework.UniqueClusterName("guarded")
	orgObj := newWorkspace(name, nil)
	orgObj.Annotations = map[string]string{key: required}
	created := &tenancyv1alpha1.Workspace{}
	if err := masters.create(ctx, "root", workspacesGVR, orgObj, created); err != nil {
		t.Fatalf("shard-admin: create workspace %s with %s=%s: %v", name, key, required, err)
	}
	org := waitForPhase(t, masters, ws{parent: "root", name: name, obj: created}, corev1alpha1.LogicalClusterPhaseReady)
	if got := org.obj.Annotations[key]; got != required {
		t.Fatalf("Workspace %s: %s = %q, want %q as system:masters set it", org.path(), key, got, required)
	}
	if got := getLogicalCluster(ctx, t, masters, org.cluster()).Annotations[key]; got != required {
		t.Fatalf("LogicalCluster of %s: %s = %q, want %q copied from its Workspace", org.path(), key, got, required)
	}

	// Both users are cluster-admin of the organization.
	orgAdmin := e.kube(t, kcpAdmin, org.path())
	for _, u := range []string{member, outsider} {
		bindClusterRole(ctx, t, orgAdmin, u+"-admin", "cluster-admin", userSubject(u))
	}

	// The member creates a child and tries to open it to everyone.
	user := e.kcp(t, member)
	child := ws{parent: org.path(), name: "child"}
	eventuallyAllowed(ctx, t, member+": create a workspace in "+org.path(), func(ctx context.Context) error {
		obj := newWorkspace(child.name, nil)
		obj.Annotations = map[string]string{key: "system:authenticated"}
		child.obj = &tenancyv1alpha1.Workspace{}
		return user.create(ctx, org.path(), workspacesGVR, obj, child.obj)
	})
	if got := child.obj.Annotations[key]; got != required {
		t.Errorf("Workspace %s created with a forged %s: got %q, want the parent's %q", child.path(), key, got, required)
	}
	child = waitForPhase(t, user, child, corev1alpha1.LogicalClusterPhaseReady)
	if got := getLogicalCluster(ctx, t, kcp, child.cluster()).Annotations[key]; got != required {
		t.Errorf("LogicalCluster of %s: %s = %q, want %q", child.path(), key, got, required)
	}
	bindClusterRole(ctx, t, e.kube(t, kcpAdmin, child.path()), outsider+"-admin", "cluster-admin", userSubject(outsider))

	// Nor can the member widen it afterwards, on the Workspace or on the LogicalCluster.
	widened := child.obj.DeepCopy()
	widened.Annotations[key] = "system:authenticated"
	err := user.update(ctx, org.path(), workspacesGVR, child.name, widened, &tenancyv1alpha1.Workspace{})
	requireAPIError(t, err, 403, member+": widen "+key+" of Workspace "+child.path(), key)
	err = updateLogicalCluster(ctx, user, child.path(), false, func(lc *corev1alpha1.LogicalCluster) { delete(lc.Annotations, key) })
	requireAPIError(t, err, 403, member+": remove "+key+" from the LogicalCluster of "+child.path(), key)

	for _, w := range []ws{org, child} {
		in := e.kube(t, member, w.path())
		eventuallyAllowed(ctx, t, member+" ("+required+"): list configmaps in "+w.path(), func(ctx context.Context) error { return listConfigMaps(ctx, in) })

		out := e.kube(t, outsider, w.path())
		requireAccessDenied(t, listConfigMaps(ctx, out), outsider+" (cluster-admin, not in "+required+"): list configmaps in "+w.path())
		for _, path := range []string{"/api", "/apis", "/apis/tenancy.kcp.io/v1alpha1"} {
			if code, body := userGet(ctx, t, e, outsider, w.path(), path); code != 403 || !strings.Contains(body, accessDenied) {
				t.Errorf("%s: discovery %s in %s: HTTP %d %q, want 403 %q", outsider, path, w.path(), code, body, accessDenied)
			}
		}
		_, err := out.Discovery().ServerGroups()
		requireAPIError(t, err, 403, outsider+": kubectl-style discovery in "+w.path())
		_, err = out.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		requireAccessDenied(t, err, outsider+": get namespace default in "+w.path())
		requireAccessDenied(t, listConfigMaps(ctx, e.kube(t, outsider, w.cluster())), outsider+": list configmaps in "+w.cluster()+" by name")
	}
}

// userGet GETs a path of a logical cluster as a token user and returns the
// status code and the body.
func userGet(ctx context.Context, t *testing.T, e *wsEnv, user, cluster, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.s.ClusterURL(t, cluster, path), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.s.UserToken(t, user))
	resp, err := e.s.HTTPClient(t).Do(req)
	if err != nil {
		t.Fatalf("GET %s in %s: %v", path, cluster, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
