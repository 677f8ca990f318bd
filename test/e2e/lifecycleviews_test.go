package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/virtual/initializingworkspaces"
	"github.com/shardplane/shardplane/test/framework"
)

// lifecycleView serves the initializing and terminating workspace views of
// the shared shard in the test process, behind an authenticator that knows
// the shard's token users. (The virtual workspace server mounts the same
// handlers behind the shard's authentication.)
type lifecycleView struct {
	url string
	e   *wsEnv
}

func startLifecycleViews(t *testing.T, e *wsEnv) *lifecycleView {
	t.Helper()
	privileged := e.s.ClientConfig(t, "shard-base")
	privileged.Host = e.s.BaseURL(t)
	mux := http.NewServeMux()
	for _, l := range []initializingworkspaces.Lifecycle{initializingworkspaces.Initializing, initializingworkspaces.Terminating} {
		h, err := initializingworkspaces.New(initializingworkspaces.Config{ShardConfig: privileged, Lifecycle: l})
		if err != nil {
			t.Fatalf("%s view: %v", l, err)
		}
		mux.Handle(l.PathPrefix(), h)
	}
	users := map[string]user.Info{}
	for i := 1; i <= 5; i++ {
		name := fmt.Sprintf("user-%d", i)
		users[e.s.UserToken(t, name)] = &user.DefaultInfo{Name: name, UID: name, Groups: []string{fmt.Sprintf("team-%d", i), user.AllAuthenticated}}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := users[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), u)))
	}))
	t.Cleanup(srv.Close)
	return &lifecycleView{url: srv.URL, e: e}
}

// config returns who's rest.Config for a view's cluster ("*" or a name).
func (v *lifecycleView) config(t *testing.T, who string, l initializingworkspaces.Lifecycle, name, cluster string) *rest.Config {
	t.Helper()
	return &rest.Config{
		Host:        l.URL(v.url, name) + logicalcluster.ClustersPrefix + cluster,
		BearerToken: v.e.s.UserToken(t, who),
		QPS:         100, Burst: 200,
	}
}

func (v *lifecycleView) logicalClusters(t *testing.T, who string, l initializingworkspaces.Lifecycle, name, cluster string) dynamic.ResourceInterface {
	t.Helper()
	c, err := dynamic.NewForConfig(v.config(t, who, l, name, cluster))
	if err != nil {
		t.Fatal(err)
	}
	return c.Resource(logicalClustersGVR)
}

// nextEvent waits for the next event of w about cluster that is not of
// type skip.
func nextEvent(ctx context.Context, t *testing.T, w watch.Interface, cluster string, skip watch.EventType) watch.EventType {
	t.Helper()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended before an event about %s", cluster)
			}
			obj, isObj := ev.Object.(*unstructured.Unstructured)
			if ev.Type == watch.Error {
				t.Fatalf("watch error: %v", ev.Object)
			}
			if isObj && obj.GetAnnotations()[clusterAnnotation] == cluster && ev.Type != skip {
				return ev.Type
			}
		case <-ctx.Done():
			t.Fatalf("no event about %s: %v", cluster, ctx.Err())
		}
	}
}

// viewedClusters lists the clusters of a view.
func viewedClusters(ctx context.Context, lcs dynamic.ResourceInterface) ([]string, string, error) {
	list, err := lcs.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, "", err
	}
	var out []string
	for _, item := range list.Items {
		out = append(out, item.GetAnnotations()[clusterAnnotation])
	}
	return out, list.GetResourceVersion(), nil
}

// TestInitializerAndTerminatorWorkThroughTheirViews: user-1 may initialize
// and terminate workspaces of a type; through the initializing view it sees
// a new workspace of the type, creates a configmap in it, removes its
// initializer, and the workspace turns Ready and leaves the view. Deleting
// the workspace then waits in the terminating view, its content intact,
// until user-1 removes its terminator. user-2, without the verbs, is
// refused by both views.
func TestInitializerAndTerminatorWorkThroughTheirViews(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const owner, stranger = "user-1", "user-2"
	admin := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "lifecycle")
	typeName := uniqueName("lc")
	wt := createWorkspaceType(ctx, t, admin, org.path(), typeName, tenancyv1alpha1.WorkspaceTypeSpec{Initializer: true, Terminator: true})
	initializer := string(tenancyv1alpha1.InitializerForType(wt))
	terminator := string(tenancyv1alpha1.TerminatorForType(wt))
	if want := org.cluster() + ":" + typeName; initializer != want {
		t.Fatalf("initializer %q, want %q", initializer, want)
	}
	orgAdmin := e.kube(t, kcpAdmin, org.path())
	createClusterRole(ctx, t, orgAdmin, typeName+"-lifecycle", rbacv1.PolicyRule{
		APIGroups: []string{tenancyv1alpha1.SchemeGroupVersion.Group}, Resources: []string{"workspacetypes"},
		ResourceNames: []string{typeName}, Verbs: []string{"initialize", "terminate"},
	})
	bindClusterRole(ctx, t, orgAdmin, typeName+"-lifecycle", typeName+"-lifecycle", userSubject(owner))
	bindClusterRole(ctx, t, orgAdmin, owner+"-access", workspaceAccessRole, userSubject(owner), userSubject(stranger))

	v := startLifecycleViews(t, e)
	initializing := v.logicalClusters(t, owner, initializingworkspaces.Initializing, initializer, "*")
	var rv string
	eventuallyAllowed(ctx, t, "list the initializing view", func(ctx context.Context) error {
		var err error
		_, rv, err = viewedClusters(ctx, initializing)
		return err
	})
	for _, l := range []initializingworkspaces.Lifecycle{initializingworkspaces.Initializing, initializingworkspaces.Terminating} {
		_, err := v.logicalClusters(t, stranger, l, initializer, "*").List(ctx, metav1.ListOptions{})
		requireAPIError(t, err, 403, string(l)+" view as "+stranger, "may not")
	}
	w, err := initializing.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatalf("watch the initializing view: %v", err)
	}
	defer w.Stop()

	child := waitForPhase(t, admin, createWorkspace(ctx, t, admin, org.path(), "child", typeRef(typeName, org.path())), corev1alpha1.LogicalClusterPhaseInitializing)
	cluster := child.cluster()
	if got := nextEvent(ctx, t, w, cluster, ""); got != watch.Added {
		t.Fatalf("first event about the new workspace: %s, want ADDED", got)
	}
	if got, _, err := viewedClusters(ctx, initializing); err != nil || !slices.Contains(got, cluster) {
		t.Fatalf("initializing view lists %v (%v), want %s among them", got, err, cluster)
	}
	lc := getLogicalCluster(ctx, t, admin, cluster)
	if !slices.Equal(lc.Status.Terminators, []corev1alpha1.LogicalClusterTerminator{corev1alpha1.LogicalClusterTerminator(terminator)}) {
		t.Errorf("LogicalCluster status.terminators %v, want the type's terminator %s", lc.Status.Terminators, terminator)
	}

	// The owner acts inside the workspace only through the view.
	_, err = e.kube(t, owner, cluster).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	requireAccessDenied(t, err, "owner directly in the initializing workspace")
	inside := newKubeClient(t, v.config(t, owner, initializingworkspaces.Initializing, initializer, cluster))
	cm := configMapIn(ctx, t, inside, "initialized", "by-"+owner)

	// Removing another's initializer is refused; removing its own works.
	mine := v.logicalClusters(t, owner, initializingworkspaces.Initializing, initializer, cluster)
	_, err = mine.Patch(ctx, corev1alpha1.LogicalClusterName, types.MergePatchType, []byte(`{"status":{"phase":"Ready"}}`), metav1.PatchOptions{}, "status")
	requireAPIError(t, err, 422, "set the phase through the view", "only removing")
	patch := fmt.Sprintf(`[{"op":"test","path":"/status/initializers/0","value":%q},{"op":"remove","path":"/status/initializers/0"}]`, initializer)
	if _, err := mine.Patch(ctx, corev1alpha1.LogicalClusterName, types.JSONPatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("remove the initializer through the view: %v", err)
	}
	if got := nextEvent(ctx, t, w, cluster, watch.Modified); got != watch.Deleted {
		t.Fatalf("event after the initializer left: %s, want DELETED", got)
	}
	child = waitForPhase(t, admin, child, corev1alpha1.LogicalClusterPhaseReady)
	requireConfigMap(ctx, t, e.kube(t, kcpAdmin, cluster), kcpAdmin, cm, cluster)
	if got, _, err := viewedClusters(ctx, initializing); err != nil || slices.Contains(got, cluster) {
		t.Errorf("initializing view lists %v (%v) after initialization, want %s gone", got, err, cluster)
	}
	_, err = inside.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	requireAPIError(t, err, 403, "initializing view into a Ready workspace", "does not wait for the initializer")

	// Deletion waits for the terminator.
	terminating := v.logicalClusters(t, owner, initializingworkspaces.Terminating, terminator, "*")
	if err := admin.delete(ctx, org.path(), workspacesGVR, child.name); err != nil {
		t.Fatalf("delete workspace %s: %v", child.path(), err)
	}
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		listed, _, err := viewedClusters(ctx, terminating)
		if err == nil && !slices.Contains(listed, cluster) {
			err = fmt.Errorf("listed %v", listed)
		}
		return err
	}, "terminating view never listed %s", cluster)
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		if lc = getLogicalCluster(ctx, t, admin, cluster); lc.Status.Phase != corev1alpha1.LogicalClusterPhaseTerminating {
			return fmt.Errorf("phase %s", lc.Status.Phase)
		}
		return nil
	}, "deleted LogicalCluster never Terminating")
	if !slices.Contains(lc.Finalizers, corev1alpha1.LogicalClusterHasTerminatorsFinalizer) {
		t.Errorf("terminating LogicalCluster: finalizers %v, want %s", lc.Finalizers, corev1alpha1.LogicalClusterHasTerminatorsFinalizer)
	}
	cleaner := newKubeClient(t, v.config(t, owner, initializingworkspaces.Terminating, terminator, cluster))
	requireConfigMap(ctx, t, cleaner, "the terminating view", cm, cluster)
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		held := &tenancyv1alpha1.Workspace{}
		if err := admin.get(ctx, org.path(), workspacesGVR, child.name, held); err != nil {
			t.Fatalf("workspace gone while its terminator holds it: %v", err)
		}
		if held.Status.Phase != corev1alpha1.LogicalClusterPhaseTerminating {
			return fmt.Errorf("phase %q", held.Status.Phase)
		}
		return nil
	}, "workspace %s Terminating, as kcp shows it, while its terminator holds it", child.path())
	release := fmt.Sprintf(`[{"op":"test","path":"/status/terminators/0","value":%q},{"op":"remove","path":"/status/terminators/0"}]`, terminator)
	if _, err := v.logicalClusters(t, owner, initializingworkspaces.Terminating, terminator, cluster).
		Patch(ctx, corev1alpha1.LogicalClusterName, types.JSONPatchType, []byte(release), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("remove the terminator through the view: %v", err)
	}
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		if err := admin.get(ctx, org.path(), workspacesGVR, child.name, &tenancyv1alpha1.Workspace{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("answered %v", err)
		}
		return nil
	}, "workspace %s not deleted after its terminator released it", child.path())
}
