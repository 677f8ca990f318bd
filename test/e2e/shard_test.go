package e2e

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/shardplane/shardplane/test/framework"
)

var configMapsGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// sameNamedConfigMaps is a namespace and configmap of the same names in two
// logical clusters, each with data that names its own cluster.
type sameNamedConfigMaps struct {
	clusters  []string
	namespace string
	name      string
	created   map[string]*corev1.ConfigMap // by cluster
}

// createSameNamedConfigMaps creates namespace "shared" and configmap
// "settings" with data owner=<cluster> in two fresh logical clusters.
func createSameNamedConfigMaps(ctx context.Context, t *testing.T, s *framework.Shard) sameNamedConfigMaps {
	t.Helper()
	f := sameNamedConfigMaps{
		clusters:  []string{s.NewLogicalCluster(t, "a"), s.NewLogicalCluster(t, "b")},
		namespace: "shared",
		name:      "settings",
		created:   map[string]*corev1.ConfigMap{},
	}
	for _, cluster := range f.clusters {
		c := kubeClient(t, s, "base", cluster)
		createNamespace(ctx, t, c, f.namespace)
		f.created[cluster] = createConfigMap(ctx, t, c, f.namespace, f.name, map[string]string{"owner": cluster})
	}
	return f
}

// requireIsolated checks that each cluster of f sees only its own namespace
// and configmap, through get and list, annotated with its cluster.
func (f sameNamedConfigMaps) requireIsolated(ctx context.Context, t *testing.T, s *framework.Shard) {
	t.Helper()
	for _, cluster := range f.clusters {
		c := kubeClient(t, s, "base", cluster)

		ns, err := c.CoreV1().Namespaces().Get(ctx, f.namespace, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("cluster %s: get namespace %q: %v", cluster, f.namespace, err)
		}
		requireCluster(t, ns, cluster)

		cm, err := c.CoreV1().ConfigMaps(f.namespace).Get(ctx, f.name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("cluster %s: get configmap %s/%s: %v", cluster, f.namespace, f.name, err)
		}
		if got := cm.Data["owner"]; got != cluster {
			t.Errorf("cluster %s: get %s/%s: data owner = %q, want %q", cluster, f.namespace, f.name, got, cluster)
		}
		requireCluster(t, cm, cluster)

		inNamespace, err := c.CoreV1().ConfigMaps(f.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("cluster %s: list configmaps in %q: %v", cluster, f.namespace, err)
		}
		var named []corev1.ConfigMap
		for _, item := range inNamespace.Items {
			requireCluster(t, &item, cluster)
			if item.Name == f.name {
				named = append(named, item)
			}
		}
		if len(named) != 1 || named[0].Data["owner"] != cluster {
			t.Errorf("cluster %s: list in %q: configmaps named %q = %+v, want one with owner %q", cluster, f.namespace, f.name, named, cluster)
		}

		everywhere, err := c.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("cluster %s: list configmaps in all namespaces: %v", cluster, err)
		}
		for _, item := range everywhere.Items {
			requireCluster(t, &item, cluster)
			if item.Namespace == f.namespace && item.Name == f.name && item.Data["owner"] != cluster {
				t.Errorf("cluster %s: list in all namespaces shows %s/%s with owner %q", cluster, f.namespace, f.name, item.Data["owner"])
			}
		}
	}
}

func TestSameNamesInTwoClustersAreIsolated(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)

	f := createSameNamedConfigMaps(ctx, t, s)
	f.requireIsolated(ctx, t, s)
}

func parseResourceVersion(t *testing.T, rv, what string) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(rv, 10, 64)
	if err != nil {
		t.Fatalf("%s: resourceVersion %q is not a uint64: %v", what, rv, err)
	}
	return n
}

// requireWildcardListed checks that a wildcard list of configmaps as
// shard-admin holds the configmap of every cluster of f, with its cluster
// annotation and data, and that its resourceVersions are consistent.
func (f sameNamedConfigMaps) requireWildcardListed(ctx context.Context, t *testing.T, s *framework.Shard) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(s.ClusterConfig(t, "shard-base", "*"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := dyn.Resource(configMapsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("wildcard list of configmaps as shard-admin: %v", err)
	}
	listRV := parseResourceVersion(t, list.GetResourceVersion(), "wildcard list")

	found := map[string]bool{}
	for _, item := range list.Items {
		what := item.GetNamespace() + "/" + item.GetName()
		if rv := parseResourceVersion(t, item.GetResourceVersion(), what); rv > listRV {
			t.Errorf("%s: resourceVersion %d is newer than the list's %d", what, rv, listRV)
		}
		cluster := item.GetAnnotations()[clusterAnnotation]
		if cluster == "" {
			t.Errorf("%s: wildcard list item has no %s annotation", what, clusterAnnotation)
			continue
		}
		if item.GetNamespace() != f.namespace || item.GetName() != f.name || !slices.Contains(f.clusters, cluster) {
			continue
		}
		owner, _, _ := unstructured.NestedString(item.Object, "data", "owner")
		if owner != cluster {
			t.Errorf("%s in cluster %s: data owner = %q, want %q", what, cluster, owner, cluster)
		}
		found[cluster] = true
	}
	for _, cluster := range f.clusters {
		if !found[cluster] {
			t.Errorf("wildcard list lacks %s/%s of cluster %s", f.namespace, f.name, cluster)
		}
	}
}

func TestWildcardListReturnsObjectsOfAllClustersToShardAdmin(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)

	f := createSameNamedConfigMaps(ctx, t, s)
	f.requireWildcardListed(ctx, t, s)
}

func TestWildcardListIsOnlyForSystemMasters(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)

	for _, tc := range []struct {
		who     string
		client  kubernetes.Interface
		allowed bool
	}{
		{"shard-admin (system:masters)", kubeClient(t, s, "shard-base", "*"), true},
		{"token user admin (system:masters)", tokenUserClient(t, s, "admin", "*"), true},
		{"kcp-admin (system:kcp:admin)", kubeClient(t, s, "base", "*"), false},
		{"token user user-1 (team-1)", tokenUserClient(t, s, "user-1", "*"), false},
	} {
		_, err := tc.client.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		switch {
		case tc.allowed && err != nil:
			t.Errorf("wildcard list as %s: %v, want success", tc.who, err)
		case !tc.allowed && !apierrors.IsForbidden(err):
			t.Errorf("wildcard list as %s: err = %v, want 403 Forbidden", tc.who, err)
		}
	}
}

func TestWildcardRejectsVerbsOtherThanListAndWatch(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	c := kubeClient(t, s, "shard-base", "*")
	cms := c.CoreV1().ConfigMaps(metav1.NamespaceDefault)

	_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "wildcard-create"}}, metav1.CreateOptions{})
	requireStatus(t, err, http.StatusMethodNotAllowed, "POST /clusters/*/api/v1/namespaces/default/configmaps")

	err = cms.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	requireStatus(t, err, http.StatusMethodNotAllowed, "DELETE /clusters/*/api/v1/namespaces/default/configmaps")

	err = cms.Delete(ctx, "wildcard-delete", metav1.DeleteOptions{})
	requireStatus(t, err, http.StatusMethodNotAllowed, "DELETE /clusters/*/api/v1/namespaces/default/configmaps/wildcard-delete")

	_, err = cms.Get(ctx, "wildcard-get", metav1.GetOptions{})
	requireStatus(t, err, http.StatusMethodNotAllowed, "GET /clusters/*/api/v1/namespaces/default/configmaps/wildcard-get")
}

// collectEvents passes the events of w to check until done holds,
// failing the test when that takes too long or the watch ends.
func collectEvents(ctx context.Context, t *testing.T, w watch.Interface, check func(watch.EventType, metav1.Object), done func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, eventually)
	defer cancel()
	for !done() {
		select {
		case <-ctx.Done():
			t.Fatalf("watch: expected events did not arrive: %v", ctx.Err())
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch: result channel closed before the expected events arrived")
			}
			switch ev.Type {
			case watch.Error:
				t.Fatalf("watch: error event: %v", apierrors.FromObject(ev.Object))
			case watch.Bookmark:
				continue
			}
			obj, err := apimeta.Accessor(ev.Object)
			if err != nil {
				t.Fatalf("watch: %s event with %T: %v", ev.Type, ev.Object, err)
			}
			check(ev.Type, obj)
		}
	}
}

func TestWatchInOneClusterSeesOnlyItsOwnEvents(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	a, b := s.NewLogicalCluster(t, "watch-a"), s.NewLogicalCluster(t, "watch-b")
	ca, cb := kubeClient(t, s, "base", a), kubeClient(t, s, "base", b)
	const ns = "watched"
	createNamespace(ctx, t, ca, ns)
	createNamespace(ctx, t, cb, ns)

	list, err := ca.CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list configmaps in %s: %v", a, err)
	}
	w, err := ca.CoreV1().ConfigMaps(metav1.NamespaceAll).Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watch configmaps in %s from %s: %v", a, list.ResourceVersion, err)
	}
	defer w.Stop()

	// B's objects are created before A's last one, so a leak would arrive
	// before the watch is done.
	createConfigMap(ctx, t, cb, ns, "b-1", nil)
	createConfigMap(ctx, t, ca, ns, "a-1", nil)
	createConfigMap(ctx, t, cb, ns, "b-2", nil)
	createConfigMap(ctx, t, ca, ns, "a-2", nil)

	added := map[string]bool{}
	collectEvents(ctx, t, w, func(typ watch.EventType, obj metav1.Object) {
		requireCluster(t, obj, a)
		if strings.HasPrefix(obj.GetName(), "b-") {
			t.Errorf("watch in %s delivered %s of %s/%s from %s", a, typ, obj.GetNamespace(), obj.GetName(), obj.GetAnnotations()[clusterAnnotation])
		}
		if typ == watch.Added {
			added[obj.GetName()] = true
		}
	}, func() bool { return added["a-1"] && added["a-2"] })
}

func TestWildcardWatchSeesEventsOfAllClusters(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	a, b := s.NewLogicalCluster(t, "wwatch-a"), s.NewLogicalCluster(t, "wwatch-b")
	ca, cb := kubeClient(t, s, "base", a), kubeClient(t, s, "base", b)
	const ns = "watched"
	createNamespace(ctx, t, ca, ns)
	createNamespace(ctx, t, cb, ns)

	dyn, err := dynamic.NewForConfig(s.ClusterConfig(t, "shard-base", "*"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := dyn.Resource(configMapsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("wildcard list: %v", err)
	}
	w, err := dyn.Resource(configMapsGVR).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatalf("wildcard watch from %s: %v", list.GetResourceVersion(), err)
	}
	defer w.Stop()

	createConfigMap(ctx, t, ca, ns, "from-a", nil)
	createConfigMap(ctx, t, cb, ns, "from-b", nil)

	want := map[string]string{a: "from-a", b: "from-b"}
	seen := map[string]bool{}
	collectEvents(ctx, t, w, func(typ watch.EventType, obj metav1.Object) {
		cluster := obj.GetAnnotations()[clusterAnnotation]
		if cluster == "" {
			t.Errorf("wildcard watch: %s of %s/%s has no %s annotation", typ, obj.GetNamespace(), obj.GetName(), clusterAnnotation)
		}
		if typ == watch.Added && obj.GetNamespace() == ns && want[cluster] == obj.GetName() {
			seen[cluster] = true
		}
	}, func() bool { return seen[a] && seen[b] })
}

func TestRoleBindingGrantsAccessOnlyInItsCluster(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	a, b := s.NewLogicalCluster(t, "rbac-a"), s.NewLogicalCluster(t, "rbac-b")
	adminA, adminB := kubeClient(t, s, "base", a), kubeClient(t, s, "base", b)
	const ns = "team"
	createNamespace(ctx, t, adminA, ns)
	createNamespace(ctx, t, adminB, ns)

	// Entering a cluster needs "access" on "/"; grant it in both clusters so
	// that only the RoleBinding differs.
	grantWorkspaceAccess(ctx, t, adminA, "team-1")
	grantWorkspaceAccess(ctx, t, adminB, "team-1")

	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-1-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "team-1"}},
	}
	if _, err := adminA.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kcp-admin: create RoleBinding to ClusterRole view in %s: %v", a, err)
	}

	userA := tokenUserClient(t, s, "user-1", a)
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, eventually, true, func(ctx context.Context) (bool, error) {
		_, lastErr = userA.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if apierrors.IsForbidden(lastErr) {
			return false, nil
		}
		return lastErr == nil, lastErr
	})
	if err != nil {
		t.Fatalf("user-1 never could list configmaps in %s/%s: %v (last error: %v)", a, ns, err, lastErr)
	}

	userB := tokenUserClient(t, s, "user-1", b)
	_, err = userB.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("user-1: list configmaps in %s/%s: err = %v, want 403 Forbidden (the RoleBinding is in %s)", b, ns, err, a)
	}
}

// grantWorkspaceAccess lets a group enter the client's logical cluster:
// kcp requires verb "access" on the non-resource path "/" there.
func grantWorkspaceAccess(ctx context.Context, t *testing.T, admin kubernetes.Interface, group string) {
	t.Helper()
	const name = "e2e-workspace-access"
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/"}, Verbs: []string{"access"}}},
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create ClusterRole %s: %v", name, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name + ":" + group},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ClusterRoleBinding %s: %v", binding.Name, err)
	}
}

// TestMalformedClusterPathsAreRejected: invalid cluster names answer 400;
// a second /clusters/ segment answers 404, as kcp does (it serves nothing
// there).
func TestMalformedClusterPathsAreRejected(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	client := s.HTTPClient(t)
	base := s.BaseURL(t)
	token := s.KubeconfigToken(t, "shard-admin")

	for path, want := range map[string]int{
		"/clusters/Bad_Name/api":                   http.StatusBadRequest,
		"/clusters//api":                           http.StatusBadRequest,
		"/clusters/../api":                         http.StatusBadRequest,
		"/clusters/a%2Fb/api":                      http.StatusBadRequest,
		"/clusters/a/clusters/a/api/v1/configmaps": http.StatusNotFound,
		"/clusters/root/clusters/b/api":            http.StatusNotFound,
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatalf("request for %s: %v", path, err)
		}
		if got := req.URL.RequestURI(); got != path {
			t.Fatalf("the client would send %q instead of %q", got, path)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: HTTP %d (%s), want %d", path, resp.StatusCode, body, want)
		}
	}
}

func TestFreshClusterHasDefaultNamespace(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	cluster := s.NewLogicalCluster(t, "fresh")
	c := kubeClient(t, s, "base", cluster)

	waitForNamespace(t, c, metav1.NamespaceDefault)
	ns, err := c.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get namespace default in %s: %v", cluster, err)
	}
	requireCluster(t, ns, cluster)
}

func TestCreatingInMissingNamespaceIsRefused(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	c := kubeClient(t, s, "base", s.NewLogicalCluster(t, "nons"))
	// The same client may create configmaps where the namespace exists.
	createConfigMap(ctx, t, c, metav1.NamespaceDefault, "control", nil)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "does-not-exist", Name: "orphan"}}
	_, err := c.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		t.Errorf("create configmap in a missing namespace: err = %v, want 404 NotFound or 403 Forbidden", err)
	}
}

func TestNamespaceOfOneClusterIsNotUsableInAnother(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	a, b := s.NewLogicalCluster(t, "ns-a"), s.NewLogicalCluster(t, "ns-b")
	ca, cb := kubeClient(t, s, "base", a), kubeClient(t, s, "base", b)
	const ns = "foo"

	createNamespace(ctx, t, ca, ns)
	createConfigMap(ctx, t, ca, ns, "in-a", nil)

	if _, err := cb.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get namespace %q in %s: err = %v, want 404 NotFound (it exists only in %s)", ns, b, err, a)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "in-b"}}
	_, err := cb.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
		t.Errorf("create configmap in %s/%s: err = %v, want 404 NotFound or 403 Forbidden (namespace exists only in %s)", b, ns, err, a)
	}
}

func TestDataSurvivesRestart(t *testing.T) {
	s := framework.StartShard(t)
	ctx := testContext(t)
	f := createSameNamedConfigMaps(ctx, t, s)

	s.Restart(t)

	f.requireWildcardListed(ctx, t, s)
	f.requireIsolated(ctx, t, s)
	for _, cluster := range f.clusters {
		got, err := kubeClient(t, s, "base", cluster).CoreV1().ConfigMaps(f.namespace).Get(ctx, f.name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("cluster %s after restart: get %s/%s: %v", cluster, f.namespace, f.name, err)
		}
		if want := f.created[cluster]; got.UID != want.UID || got.ResourceVersion != want.ResourceVersion {
			t.Errorf("cluster %s after restart: uid/resourceVersion = %s/%s, want %s/%s", cluster, got.UID, got.ResourceVersion, want.UID, want.ResourceVersion)
		}
	}
}

func TestHealthEndpointsAnswerWithoutCredentials(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	client := s.HTTPClient(t)

	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		code, body := httpGet(ctx, t, client, s.BaseURL(t)+path, "")
		if code != http.StatusOK {
			t.Errorf("GET %s without credentials: HTTP %d (%s), want 200", path, code, body)
		}
	}
}

func TestMetricsAnswerShardAdmin(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)

	code, body := httpGet(ctx, t, s.HTTPClient(t), s.BaseURL(t)+"/metrics", s.KubeconfigToken(t, "shard-admin"))
	if code != http.StatusOK {
		t.Fatalf("GET /metrics as shard-admin: HTTP %d (%s), want 200", code, body)
	}
	if !strings.Contains(body, "# TYPE ") {
		t.Errorf("GET /metrics as shard-admin: body is not Prometheus text: %.300s", body)
	}
}

// httpGet returns the status code and body of a GET, with a bearer token
// when token is not empty.
func httpGet(ctx context.Context, t *testing.T, client *http.Client, url, token string) (int, string) {
	t.Helper()
	resp, body := httpGetWithHeader(ctx, t, client, url, token, nil)
	return resp.StatusCode, string(body)
}

// httpGetWithHeader returns the response (its body read and closed) and
// body of a GET with the given request headers, and a bearer token when
// token is not empty.
func httpGetWithHeader(ctx context.Context, t *testing.T, client *http.Client, url, token string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatalf("request for %s: %v", url, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp, body
}

func TestAdminKubeconfigHasKcpLayout(t *testing.T) {
	s := sharedShard(t)
	raw := s.RawKubeconfig(t)
	base := "https://127.0.0.1:" + strconv.Itoa(s.SecurePort())

	for name, server := range map[string]string{
		"root":         base + "/clusters/root",
		"base":         base,
		"system:admin": base + "/clusters/system:admin",
	} {
		c, ok := raw.Clusters[name]
		if !ok {
			t.Errorf("cluster %q missing", name)
			continue
		}
		if got := strings.TrimSuffix(c.Server, "/"); got != server {
			t.Errorf("cluster %q: server %q, want %q", name, c.Server, server)
		}
	}
	for _, user := range []string{"kcp-admin", "shard-admin"} {
		if u, ok := raw.AuthInfos[user]; !ok || (u.Token == "" && u.TokenFile == "") {
			t.Errorf("user %q missing or without a token", user)
		}
	}
	for name, want := range map[string][2]string{ // context -> cluster, user
		"root":         {"root", "kcp-admin"},
		"base":         {"base", "kcp-admin"},
		"system:admin": {"system:admin", "kcp-admin"},
		"shard-base":   {"base", "shard-admin"},
	} {
		c, ok := raw.Contexts[name]
		if !ok {
			t.Errorf("context %q missing", name)
			continue
		}
		if c.Cluster != want[0] || c.AuthInfo != want[1] {
			t.Errorf("context %q: cluster %q user %q, want cluster %q user %q", name, c.Cluster, c.AuthInfo, want[0], want[1])
		}
	}
	if raw.CurrentContext != "root" {
		t.Errorf("current context %q, want %q", raw.CurrentContext, "root")
	}
}

func TestAdminKubeconfigUsersAuthenticateWithTheirGroups(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)

	for context, group := range map[string]string{"base": "system:kcp:admin", "shard-base": "system:masters"} {
		review, err := kubeClient(t, s, context, s.NewLogicalCluster(t, "whoami")).AuthenticationV1().SelfSubjectReviews().
			Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Errorf("context %s: SelfSubjectReview: %v", context, err)
			continue
		}
		if !slices.Contains(review.Status.UserInfo.Groups, group) {
			t.Errorf("context %s: user %q has groups %v, want %q among them", context, review.Status.UserInfo.Username, review.Status.UserInfo.Groups, group)
		}
	}
}
