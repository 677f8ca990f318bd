package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/shardplane/shardplane/test/framework"
)

// createQuota creates a quota and waits until its status is computed.
func createQuota(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name string, hard corev1.ResourceList) *corev1.ResourceQuota {
	t.Helper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	if _, err := c.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create quota %s/%s: %v", ns, name, err)
	}
	var got *corev1.ResourceQuota
	framework.EventuallyEvery(t, 100*time.Millisecond, gcTimeout, func(ctx context.Context) error {
		var err error
		if got, err = c.CoreV1().ResourceQuotas(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		if !equality.Semantic.DeepEqual(got.Status.Hard, hard) || len(got.Status.Used) != len(hard) {
			return fmt.Errorf("status %+v", got.Status)
		}
		return nil
	}, "quota %s/%s status never computed", ns, name)
	return got
}

// waitUsed waits until a quota reports used[name] == want and returns how
// long that took.
func waitUsed(t *testing.T, c kubernetes.Interface, ns, quota string, name corev1.ResourceName, want int64) time.Duration {
	t.Helper()
	start := time.Now()
	framework.EventuallyEvery(t, 50*time.Millisecond, gcTimeout, func(ctx context.Context) error {
		q, err := c.CoreV1().ResourceQuotas(ns).Get(ctx, quota, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if used := q.Status.Used[name]; used.Value() != want {
			return fmt.Errorf("used %s = %s", name, used.String())
		}
		return nil
	}, "quota %s/%s: used %s never %d", ns, quota, name, want)
	return time.Since(start)
}

func configMapCount(ctx context.Context, t *testing.T, c kubernetes.Interface, ns string) int64 {
	t.Helper()
	list, err := c.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(list.Items))
}

// waitRootCA waits for the namespace's kube-root-ca.crt, which counts
// against configmap quotas too.
func waitRootCA(t *testing.T, c kubernetes.Interface, ns string) {
	t.Helper()
	framework.EventuallyWithin(t, gcTimeout, func(ctx context.Context) error {
		_, err := c.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err
	}, "no kube-root-ca.crt in %s", ns)
}

func requireExceeded(t *testing.T, err error, what, quota string, resourceName corev1.ResourceName, limit int64) {
	t.Helper()
	requireStatus(t, err, http.StatusForbidden, what)
	want := fmt.Sprintf("exceeded quota: %s, requested: %s=1, used: %s=%d, limited: %s=%d", quota, resourceName, resourceName, limit, resourceName, limit)
	if err != nil && !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v, want %q", what, err, want)
	}
}

// TestResourceQuotaLimitsObjectCountsPerWorkspace: a tenant cannot create
// more objects than the quota of its namespace allows, for built-in and
// custom resources; the quota's status follows creations and deletions
// within moments; and another workspace with the same namespace is limited
// only by its own quotas.
func TestResourceQuotaLimitsObjectCountsPerWorkspace(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	a, b := newKCCluster(ctx, t, s, "quota-a"), newKCCluster(ctx, t, s, "quota-b")
	for _, c := range []kcCluster{a, b} {
		createNamespace(ctx, t, c.kube, "team")
		waitRootCA(t, c.kube, "team")
	}
	gizmos := installGizmos(ctx, t, a).Namespace("team")
	createGizmo(t, gizmos, "first")

	existing := configMapCount(ctx, t, a.kube, "team")
	limit := existing + 2
	q := createQuota(ctx, t, a.kube, "team", "objects", corev1.ResourceList{
		"count/configmaps":                *resource.NewQuantity(limit, resource.DecimalSI),
		"secrets":                         resource.MustParse("1"),
		"count/gizmos.gc.shardplane.test": resource.MustParse("1"),
	})
	if used := q.Status.Used["count/configmaps"]; used.Value() != existing {
		t.Errorf("initial configmap usage %s, want %d", used.String(), existing)
	}
	if used := q.Status.Used["count/gizmos.gc.shardplane.test"]; used.Value() != 1 {
		t.Errorf("initial gizmo usage %s, want 1", used.String())
	}
	// b's quota of the same name and namespace is its own.
	createQuota(ctx, t, b.kube, "team", "objects", corev1.ResourceList{"count/configmaps": resource.MustParse("100")})

	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	for i := 0; i < 2; i++ {
		if _, err := a.kube.CoreV1().ConfigMaps("team").Create(ctx, cm(fmt.Sprintf("cm-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create configmap %d within quota: %v", i, err)
		}
	}
	t.Logf("status after a create: %v", waitUsed(t, a.kube, "team", "objects", "count/configmaps", limit))
	_, err := a.kube.CoreV1().ConfigMaps("team").Create(ctx, cm("one-too-many"), metav1.CreateOptions{})
	requireExceeded(t, err, "create configmap over quota", "objects", "count/configmaps", limit)

	// The other workspace is not limited by a's quota.
	for i := 0; i < 5; i++ {
		if _, err := b.kube.CoreV1().ConfigMaps("team").Create(ctx, cm(fmt.Sprintf("cm-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create configmap %d in another workspace: %v", i, err)
		}
	}
	waitUsed(t, b.kube, "team", "objects", "count/configmaps", configMapCount(ctx, t, b.kube, "team"))

	// A deletion frees room within moments.
	if err := a.kube.CoreV1().ConfigMaps("team").Delete(ctx, "cm-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("status after a delete: %v", waitUsed(t, a.kube, "team", "objects", "count/configmaps", limit-1))
	if _, err := a.kube.CoreV1().ConfigMaps("team").Create(ctx, cm("after-delete"), metav1.CreateOptions{}); err != nil {
		t.Errorf("create after a deletion freed room: %v", err)
	}

	// Secrets through the legacy name.
	secret := func(name string) *corev1.Secret { return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}} }
	if _, err := a.kube.CoreV1().Secrets("team").Create(ctx, secret("s1"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("first secret: %v", err)
	}
	_, err = a.kube.CoreV1().Secrets("team").Create(ctx, secret("s2"), metav1.CreateOptions{})
	requireExceeded(t, err, "create secret over quota", "objects", "secrets", 1)

	// Custom resources.
	u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "gc.shardplane.test/v1", "kind": "Gizmo"}}
	u.SetName("second")
	_, err = gizmos.Create(ctx, u, metav1.CreateOptions{})
	requireExceeded(t, err, "create gizmo over quota", "objects", "count/gizmos.gc.shardplane.test", 1)
	if err := gizmos.Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("custom resource status after a delete: %v", waitUsed(t, a.kube, "team", "objects", "count/gizmos.gc.shardplane.test", 0))
	if _, err := gizmos.Create(ctx, u, metav1.CreateOptions{}); err != nil {
		t.Errorf("create gizmo after a deletion freed room: %v", err)
	}
}

// TestWorkspaceWideQuotaLimitsAllNamespacesAndClusterScopedObjects: kcp's
// workspace-wide quota (namespace "admin", annotation
// experimental.quota.kcp.io/cluster-scoped=true) stops a tenant from
// spreading objects over many namespaces, or into cluster-scoped kinds, past
// the workspace's limit. Other workspaces are not affected.
func TestWorkspaceWideQuotaLimitsAllNamespacesAndClusterScopedObjects(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	c, other := newKCCluster(ctx, t, s, "wsquota"), newKCCluster(ctx, t, s, "wsquota-other")
	for _, ns := range []string{"admin", "team-1", "team-2"} {
		createNamespace(ctx, t, c.kube, ns)
		waitRootCA(t, c.kube, ns)
	}
	waitForNamespace(t, c.kube, "default")
	waitRootCA(t, c.kube, "default")
	configMaps := configMapCount(ctx, t, c.kube, metav1.NamespaceAll)
	roles, err := c.kube.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rolesName := corev1.ResourceName("count/clusterroles.rbac.authorization.k8s.io")

	q := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "workspace", Annotations: map[string]string{"experimental.quota.kcp.io/cluster-scoped": "true"}},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"count/configmaps": *resource.NewQuantity(configMaps+2, resource.DecimalSI),
			rolesName:          *resource.NewQuantity(int64(len(roles.Items))+1, resource.DecimalSI),
		}},
	}
	if _, err := c.kube.CoreV1().ResourceQuotas("admin").Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(t, c.kube, "admin", "workspace", "count/configmaps", configMaps)
	waitUsed(t, c.kube, "admin", "workspace", rolesName, int64(len(roles.Items)))

	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	for _, ns := range []string{"team-1", "team-2"} {
		if _, err := c.kube.CoreV1().ConfigMaps(ns).Create(ctx, cm("spread"), metav1.CreateOptions{}); err != nil {
			t.Fatalf("configmap in %s within the workspace quota: %v", ns, err)
		}
	}
	_, err = c.kube.CoreV1().ConfigMaps("default").Create(ctx, cm("spread"), metav1.CreateOptions{})
	requireExceeded(t, err, "configmap in a third namespace over the workspace quota", "workspace", "count/configmaps", configMaps+2)

	role := func(name string) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	if _, err := c.kube.RbacV1().ClusterRoles().Create(ctx, role("extra-1"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("cluster role within the workspace quota: %v", err)
	}
	_, err = c.kube.RbacV1().ClusterRoles().Create(ctx, role("extra-2"), metav1.CreateOptions{})
	requireExceeded(t, err, "cluster role over the workspace quota", "workspace", rolesName, int64(len(roles.Items))+1)

	// Deleting a cluster-scoped object frees room.
	if err := c.kube.RbacV1().ClusterRoles().Delete(ctx, "extra-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("workspace-wide status after a delete: %v", waitUsed(t, c.kube, "admin", "workspace", rolesName, int64(len(roles.Items))))
	if _, err := c.kube.RbacV1().ClusterRoles().Create(ctx, role("extra-2"), metav1.CreateOptions{}); err != nil {
		t.Errorf("cluster role after a deletion freed room: %v", err)
	}

	// Another workspace is not limited by it.
	waitForNamespace(t, other.kube, "default")
	for i := 0; i < 3; i++ {
		if _, err := other.kube.RbacV1().ClusterRoles().Create(ctx, role(fmt.Sprintf("extra-%d", i)), metav1.CreateOptions{}); err != nil {
			t.Fatalf("cluster role %d in another workspace: %v", i, err)
		}
	}
}

// TestResourceQuotaHoldsUnderConcurrentCreates: racing many creates at once
// does not get more objects past a quota than it allows.
func TestResourceQuotaHoldsUnderConcurrentCreates(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	c := newKCCluster(ctx, t, s, "quota-race")
	createNamespace(ctx, t, c.kube, "team")
	createQuota(ctx, t, c.kube, "team", "secrets", corev1.ResourceList{"count/secrets": resource.MustParse("3")})

	const attempts = 12
	errs := make(chan error, attempts)
	for i := 0; i < attempts; i++ {
		go func(i int) {
			_, err := c.kube.CoreV1().Secrets("team").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", i)}}, metav1.CreateOptions{})
			errs <- err
		}(i)
	}
	created := 0
	for i := 0; i < attempts; i++ {
		err := <-errs
		switch {
		case err == nil:
			created++
		case !strings.Contains(err.Error(), "exceeded quota"):
			t.Errorf("concurrent create: %v, want success or exceeded quota", err)
		}
	}
	list, err := c.kube.CoreV1().Secrets("team").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created != 3 || len(list.Items) != 3 {
		t.Errorf("%d creates succeeded and %d secrets exist, want 3 of each", created, len(list.Items))
	}
	waitUsed(t, c.kube, "team", "secrets", "count/secrets", 3)
}
