package e2e

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

// Who makes a request: the two users of admin.kubeconfig, or a token user.
const (
	kcpAdmin   = "kcp-admin"   // group system:kcp:admin
	shardAdmin = "shard-admin" // group system:masters
)

const (
	// wsTimeout bounds waits for workspace phases and RBAC caches.
	wsTimeout = 60 * time.Second
	// wsPoll is the polling interval of those waits.
	wsPoll = 100 * time.Millisecond
	// typeCacheTimeout bounds how long a new WorkspaceType may stay unknown
	// to admission.
	typeCacheTimeout = 10 * time.Second
	// accessDenied is the reason users get when they may not enter a
	// logical cluster.
	accessDenied = "workspace access not permitted"
	// workspaceAccessRole grants verb "access" on non-resource "/".
	workspaceAccessRole = "system:kcp:workspace:access"
)

var (
	workspacesGVR      = tenancyv1alpha1.SchemeGroupVersion.WithResource("workspaces")
	workspaceTypesGVR  = tenancyv1alpha1.SchemeGroupVersion.WithResource("workspacetypes")
	logicalClustersGVR = corev1alpha1.SchemeGroupVersion.WithResource("logicalclusters")
	namespacesGVR      = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	crbGVR             = rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")

	// clusterNamePattern is a generated logical cluster name (docs/api.md).
	clusterNamePattern = regexp.MustCompile(`^[a-z0-9]{16}$`)
)

// kcpREST reads and writes kcp's objects in any logical cluster, addressed
// by name or by workspace path, as one user: pkg/kcpclient with the cluster
// given as the string a test has at hand.
type kcpREST struct {
	c *kcpclient.Client
}

func newKCPREST(t *testing.T, cfg *rest.Config) *kcpREST {
	t.Helper()
	c, err := kcpclient.New(cfg)
	if err != nil {
		t.Fatalf("kcp REST client for %s: %v", cfg.Host, err)
	}
	return &kcpREST{c: c}
}

func (c *kcpREST) get(ctx context.Context, cluster string, gvr schema.GroupVersionResource, name string, out runtime.Object) error {
	return c.c.Get(ctx, logicalcluster.Name(cluster), gvr, name, out)
}

func (c *kcpREST) list(ctx context.Context, cluster string, gvr schema.GroupVersionResource, out runtime.Object) error {
	return c.c.List(ctx, logicalcluster.Name(cluster), gvr, out)
}

func (c *kcpREST) create(ctx context.Context, cluster string, gvr schema.GroupVersionResource, obj, out runtime.Object) error {
	return c.c.Create(ctx, logicalcluster.Name(cluster), gvr, obj, out)
}

func (c *kcpREST) update(ctx context.Context, cluster string, gvr schema.GroupVersionResource, name string, obj, out runtime.Object, subresource ...string) error {
	return c.c.Update(ctx, logicalcluster.Name(cluster), gvr, name, obj, out, subresource...)
}

// patchStatus sends a JSON merge patch to the status of a kcp object.
func (c *kcpREST) patchStatus(ctx context.Context, cluster string, gvr schema.GroupVersionResource, name, patch string) error {
	return c.c.Patch(ctx, logicalcluster.Name(cluster), gvr, name, types.MergePatchType, []byte(patch), nil, "status")
}

func (c *kcpREST) delete(ctx context.Context, cluster string, gvr schema.GroupVersionResource, name string) error {
	return c.c.Delete(ctx, logicalcluster.Name(cluster), gvr, name, nil)
}

// wsEnv is a shard with token users user-1 … user-3 (groups team-1 …
// team-3) and clients for it.
type wsEnv struct {
	s *framework.Shard
}

// startWorkspaceShard starts the shard of the workspace tests and waits
// until its root bootstrap (types and RBAC) is complete.
func startWorkspaceShard(t *testing.T) *wsEnv {
	t.Helper()
	var users []framework.TokenUser
	for i := 1; i <= 3; i++ {
		users = append(users, framework.TokenUser{Name: fmt.Sprintf("user-%d", i), Groups: []string{fmt.Sprintf("team-%d", i)}})
	}
	e := &wsEnv{s: framework.StartShard(t, framework.WithTokenUsers(users...))}
	e.waitForRootBootstrap(t)
	return e
}

// waitForRootBootstrap waits for the built-in WorkspaceTypes and root's
// RBAC: the shard is ready once root is, the rest follows shortly.
func (e *wsEnv) waitForRootBootstrap(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wsTimeout)
	defer cancel()
	kcp := e.kcp(t, kcpAdmin)
	root := e.kube(t, kcpAdmin, "root")
	var last error
	err := wait.PollUntilContextCancel(ctx, wsPoll, true, func(ctx context.Context) (bool, error) {
		for _, name := range []string{"root", "universal", "organization", "team", "home"} {
			if last = kcp.get(ctx, "root", workspaceTypesGVR, name, &tenancyv1alpha1.WorkspaceType{}); last != nil {
				last = fmt.Errorf("WorkspaceType root:%s: %w", name, last)
				return false, nil
			}
		}
		for _, name := range []string{"system:kcp:workspace:access:authenticated", "system:kcp:workspacetypes:use:authenticated"} {
			if _, last = root.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{}); last != nil {
				last = fmt.Errorf("ClusterRoleBinding %s in root: %w", name, last)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("root bootstrap did not complete: %v (last: %v)", err, last)
	}
}

// config returns a rest.Config of who for a logical cluster (name or path).
func (e *wsEnv) config(t *testing.T, who, cluster string) *rest.Config {
	t.Helper()
	switch who {
	case kcpAdmin:
		return e.s.ClusterConfig(t, "base", cluster)
	case shardAdmin:
		return e.s.ClusterConfig(t, "shard-base", cluster)
	default:
		return e.s.TokenUserConfig(t, who, cluster)
	}
}

// kube returns a typed client of who in a logical cluster (name or path).
func (e *wsEnv) kube(t *testing.T, who, cluster string) kubernetes.Interface {
	t.Helper()
	return newKubeClient(t, e.config(t, who, cluster))
}

// kcp returns a kcpREST of who for the shard's base URL.
func (e *wsEnv) kcp(t *testing.T, who string) *kcpREST {
	t.Helper()
	cfg := e.config(t, who, "root")
	cfg.Host = e.s.BaseURL(t)
	return newKCPREST(t, cfg)
}

// ws is a workspace a test created: its parent's path, name and the
// Workspace as last read.
type ws struct {
	parent string
	name   string
	obj    *tenancyv1alpha1.Workspace
}

// path is the workspace's canonical path.
func (w ws) path() string { return w.parent + ":" + w.name }

// cluster is the workspace's logical cluster name.
func (w ws) cluster() string { return w.obj.Spec.Cluster }

func typeRef(name, path string) *tenancyv1alpha1.WorkspaceTypeReference {
	return &tenancyv1alpha1.WorkspaceTypeReference{Name: tenancyv1alpha1.WorkspaceTypeName(name), Path: path}
}

func newWorkspace(name string, typ *tenancyv1alpha1.WorkspaceTypeReference) *tenancyv1alpha1.Workspace {
	return &tenancyv1alpha1.Workspace{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.WorkspaceSpec{Type: typ},
	}
}

// createWorkspaceOnce creates a Workspace in parent (name or path).
func createWorkspaceOnce(ctx context.Context, c *kcpREST, parent, name string, typ *tenancyv1alpha1.WorkspaceTypeReference) (*tenancyv1alpha1.Workspace, error) {
	out := &tenancyv1alpha1.Workspace{}
	err := c.create(ctx, parent, workspacesGVR, newWorkspace(name, typ), out)
	return out, err
}

// tryCreateWorkspace creates a Workspace in parent (name or path). Admission
// knows WorkspaceTypes from a cache, so a type created moments ago may still
// be refused as not existing: that refusal is retried for typeCacheTimeout.
func tryCreateWorkspace(ctx context.Context, c *kcpREST, parent, name string, typ *tenancyv1alpha1.WorkspaceTypeReference) (*tenancyv1alpha1.Workspace, error) {
	var out *tenancyv1alpha1.Workspace
	var err error
	_ = wait.PollUntilContextTimeout(ctx, wsPoll, typeCacheTimeout, true, func(ctx context.Context) (bool, error) {
		out, err = createWorkspaceOnce(ctx, c, parent, name, typ)
		return !(apierrors.IsInvalid(err) && strings.Contains(err.Error(), "does not exist")), nil
	})
	return out, err
}

// createWorkspace creates a Workspace in parent and fails the test on error.
func createWorkspace(ctx context.Context, t *testing.T, c *kcpREST, parent, name string, typ *tenancyv1alpha1.WorkspaceTypeReference) ws {
	t.Helper()
	obj, err := tryCreateWorkspace(ctx, c, parent, name, typ)
	if err != nil {
		t.Fatalf("create workspace %s in %s (type %v): %v", name, parent, typ, err)
	}
	return ws{parent: parent, name: name, obj: obj}
}

// waitForPhase waits until the workspace is scheduled and has the phase.
func waitForPhase(t *testing.T, c *kcpREST, w ws, phase corev1alpha1.LogicalClusterPhaseType) ws {
	t.Helper()
	var last *tenancyv1alpha1.Workspace
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		got := &tenancyv1alpha1.Workspace{}
		if err := c.get(ctx, w.parent, workspacesGVR, w.name, got); err != nil {
			return err
		}
		last = got
		if got.Spec.Cluster == "" || got.Status.Phase != phase {
			return fmt.Errorf("cluster %q phase %q conditions %+v initializers %v", got.Spec.Cluster, got.Status.Phase, got.Status.Conditions, got.Status.Initializers)
		}
		return nil
	}, "workspace %s never reached phase %s", w.path(), phase)
	w.obj = last
	return w
}

// readyWorkspace creates a workspace and waits until it is Ready.
func readyWorkspace(ctx context.Context, t *testing.T, c *kcpREST, parent, name string, typ *tenancyv1alpha1.WorkspaceTypeReference) ws {
	t.Helper()
	return waitForPhase(t, c, createWorkspace(ctx, t, c, parent, name, typ), corev1alpha1.LogicalClusterPhaseReady)
}

// readyOrg creates an organization workspace with a unique name in root as
// kcp-admin and waits until it is Ready.
func (e *wsEnv) readyOrg(ctx context.Context, t *testing.T, prefix string) ws {
	t.Helper()
	return readyWorkspace(ctx, t, e.kcp(t, kcpAdmin), "root", framework.UniqueClusterName(prefix), nil)
}

// getLogicalCluster reads the LogicalCluster of a cluster (name or path).
func getLogicalCluster(ctx context.Context, t *testing.T, c *kcpREST, cluster string) *corev1alpha1.LogicalCluster {
	t.Helper()
	lc := &corev1alpha1.LogicalCluster{}
	if err := c.get(ctx, cluster, logicalClustersGVR, corev1alpha1.LogicalClusterName, lc); err != nil {
		t.Fatalf("get LogicalCluster of %s: %v", cluster, err)
	}
	return lc
}

// updateLogicalCluster changes the LogicalCluster of a cluster (its status
// with status true), retrying on conflicts.
func updateLogicalCluster(ctx context.Context, c *kcpREST, cluster string, status bool, mutate func(*corev1alpha1.LogicalCluster)) error {
	var sub []string
	if status {
		sub = []string{"status"}
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lc := &corev1alpha1.LogicalCluster{}
		if err := c.get(ctx, cluster, logicalClustersGVR, corev1alpha1.LogicalClusterName, lc); err != nil {
			return err
		}
		mutate(lc)
		lc.APIVersion, lc.Kind = corev1alpha1.SchemeGroupVersion.String(), "LogicalCluster"
		return c.update(ctx, cluster, logicalClustersGVR, corev1alpha1.LogicalClusterName, lc, &corev1alpha1.LogicalCluster{}, sub...)
	})
}

// createWorkspaceType creates a WorkspaceType in a cluster as c.
func createWorkspaceType(ctx context.Context, t *testing.T, c *kcpREST, cluster, name string, spec tenancyv1alpha1.WorkspaceTypeSpec) *tenancyv1alpha1.WorkspaceType {
	t.Helper()
	wt := &tenancyv1alpha1.WorkspaceType{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "WorkspaceType"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       spec,
	}
	out := &tenancyv1alpha1.WorkspaceType{}
	if err := c.create(ctx, cluster, workspaceTypesGVR, wt, out); err != nil {
		t.Fatalf("create WorkspaceType %s in %s: %v", name, cluster, err)
	}
	return out
}

// uniqueName returns prefix-<6 random base36>, a fresh name for a
// WorkspaceType or a workspace in a shared parent. prefix must start with a
// letter (WorkspaceType names must).
func uniqueName(prefix string) string {
	return prefix + strings.TrimPrefix(framework.UniqueClusterName("t"), "e2e-t")
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}
}

// bindClusterRole creates a ClusterRoleBinding to a ClusterRole.
func bindClusterRole(ctx context.Context, t *testing.T, c kubernetes.Interface, name, role string, subjects ...rbacv1.Subject) {
	t.Helper()
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
	if _, err := c.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ClusterRoleBinding %s to %s: %v", name, role, err)
	}
}

// createClusterRole creates a ClusterRole.
func createClusterRole(ctx context.Context, t *testing.T, c kubernetes.Interface, name string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	r := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	if _, err := c.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ClusterRole %s: %v", name, err)
	}
}

// grantAccessAndView lets a user into a workspace and lets them read there.
func grantAccessAndView(ctx context.Context, t *testing.T, admin kubernetes.Interface, user string) {
	t.Helper()
	bindClusterRole(ctx, t, admin, user+"-access", workspaceAccessRole, userSubject(user))
	bindClusterRole(ctx, t, admin, user+"-view", "view", userSubject(user))
}

// listConfigMaps lists the configmaps of all namespaces.
func listConfigMaps(ctx context.Context, c kubernetes.Interface) error {
	_, err := c.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	return err
}

// eventuallyAllowed polls f until it succeeds, tolerating 403 (RBAC and
// workspace caches catch up asynchronously).
func eventuallyAllowed(ctx context.Context, t *testing.T, what string, f func(context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, wsPoll, wsTimeout, true, func(ctx context.Context) (bool, error) {
		last = f(ctx)
		if apierrors.IsForbidden(last) {
			return false, nil
		}
		return last == nil, last
	})
	if err != nil {
		t.Fatalf("%s: never allowed: %v (last error: %v)", what, err, last)
	}
}

// eventuallyDenied polls f until it answers 403 with the workspace access
// reason.
func eventuallyDenied(t *testing.T, what string, f func(context.Context) error) {
	t.Helper()
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		if err := f(ctx); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), accessDenied) {
			return fmt.Errorf("answered %v", err)
		}
		return nil
	}, "%s: never denied with %q", what, accessDenied)
}

// requireAPIError fails the test unless err is an API error with the HTTP
// code whose message contains each of substrings.
func requireAPIError(t *testing.T, err error, code int32, what string, substrings ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded, want HTTP %d", what, code)
		return
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Errorf("%s: %v, want an API error with HTTP %d", what, err, code)
		return
	}
	if got := status.Status().Code; got != code {
		t.Errorf("%s: HTTP %d (%v), want %d", what, got, err, code)
		return
	}
	for _, s := range substrings {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: HTTP %d %q does not mention %q", what, code, err.Error(), s)
		}
	}
}

// requireAccessDenied fails the test unless err is 403 with the workspace
// access reason.
func requireAccessDenied(t *testing.T, err error, what string) {
	t.Helper()
	requireAPIError(t, err, 403, what, accessDenied)
}

// requireInvalidType fails the test unless err is 422 Invalid with a cause
// on spec.type whose message contains substr.
func requireInvalidType(t *testing.T, err error, what, substr string) {
	t.Helper()
	requireAPIError(t, err, 422, what, substr)
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Errorf("%s: no status details in %v", what, err)
		return
	}
	if !slices.ContainsFunc(status.Status().Details.Causes, func(c metav1.StatusCause) bool { return c.Field == "spec.type" }) {
		t.Errorf("%s: causes %+v name no field spec.type", what, status.Status().Details.Causes)
	}
}

// configMapIn creates a configmap in namespace default of c's cluster.
func configMapIn(ctx context.Context, t *testing.T, c kubernetes.Interface, name, value string) *corev1.ConfigMap {
	t.Helper()
	return createConfigMap(ctx, t, c, metav1.NamespaceDefault, name, map[string]string{"value": value})
}

// requireConfigMap reads a configmap of namespace default and checks its
// value, uid and cluster annotation.
func requireConfigMap(ctx context.Context, t *testing.T, c kubernetes.Interface, via string, want *corev1.ConfigMap, cluster string) {
	t.Helper()
	got, err := c.CoreV1().ConfigMaps(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		t.Errorf("get configmap %s/%s through %s: %v", want.Namespace, want.Name, via, err)
		return
	}
	if got.UID != want.UID || got.Data["value"] != want.Data["value"] {
		t.Errorf("configmap %s/%s through %s: uid %s value %q, want uid %s value %q", want.Namespace, want.Name, via, got.UID, got.Data["value"], want.UID, want.Data["value"])
	}
	requireCluster(t, got, cluster)
}

// wildcardItemsIn lists a resource across all clusters as shard-admin and
// returns "cluster/namespace/name" of the items in the given clusters.
func (e *wsEnv) wildcardItemsIn(ctx context.Context, t *testing.T, gvr schema.GroupVersionResource, clusters ...string) []string {
	t.Helper()
	dyn, err := dynamic.NewForConfig(e.config(t, shardAdmin, "*"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("wildcard list of %s as shard-admin: %v", gvr.Resource, err)
	}
	var found []string
	for _, item := range list.Items {
		if c := item.GetAnnotations()[clusterAnnotation]; slices.Contains(clusters, c) {
			found = append(found, c+"/"+item.GetNamespace()+"/"+item.GetName())
		}
	}
	return found
}

// readyWatch reports the first time each workspace of a cluster is seen
// Ready by a watch, re-listing and re-watching whenever the watch ends.
type readyWatch struct {
	ri      dynamic.ResourceInterface
	onReady func(name string, at time.Time)
	seen    map[string]bool
	done    chan struct{}
}

// startReadyWatch lists and watches the workspaces of a cluster as who and
// calls onReady once per workspace, from one goroutine. Cancel ctx and then
// wait for done before the test ends.
func (e *wsEnv) startReadyWatch(ctx context.Context, t *testing.T, who, cluster string, onReady func(name string, at time.Time)) (done <-chan struct{}) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(e.config(t, who, cluster))
	if err != nil {
		t.Fatal(err)
	}
	w := &readyWatch{ri: dyn.Resource(workspacesGVR), onReady: onReady, seen: map[string]bool{}, done: make(chan struct{})}
	watcher, err := w.listAndWatch(ctx)
	if err != nil {
		t.Fatalf("watch workspaces in %s: %v", cluster, err)
	}
	go w.run(ctx, watcher)
	return w.done
}

func (w *readyWatch) observe(u *unstructured.Unstructured, at time.Time) {
	if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase == string(corev1alpha1.LogicalClusterPhaseReady) && !w.seen[u.GetName()] {
		w.seen[u.GetName()] = true
		w.onReady(u.GetName(), at)
	}
}

func (w *readyWatch) listAndWatch(ctx context.Context) (watch.Interface, error) {
	list, err := w.ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	for i := range list.Items {
		w.observe(&list.Items[i], now)
	}
	return w.ri.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
}

func (w *readyWatch) run(ctx context.Context, watcher watch.Interface) {
	defer close(w.done)
	for {
		for ev := range watcher.ResultChan() {
			if ev.Type == watch.Error {
				break
			}
			if u, ok := ev.Object.(*unstructured.Unstructured); ok && ev.Type != watch.Bookmark {
				w.observe(u, time.Now())
			}
		}
		watcher.Stop()
		for {
			if ctx.Err() != nil {
				return
			}
			var err error
			if watcher, err = w.listAndWatch(ctx); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(wsPoll):
			}
		}
	}
}

// percentile returns the nearest-rank percentile p (0 < p <= 100) of sorted.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return sorted[max(rank, 1)-1]
}

// collector gathers errors from goroutines for one report.
type collector struct {
	mu   sync.Mutex
	errs []string
}

func (c *collector) add(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}
