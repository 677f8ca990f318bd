package e2esystem

import (
	"context"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/home"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

// homeOf asks root, through the front-proxy, for a user's home until it
// is Ready (429 while it is created).
func homeOf(ctx context.Context, t *testing.T, user string) *tenancyv1alpha1.Workspace {
	t.Helper()
	c := kcp(t, sys.UserConfig(t, user, ""))
	got := &tenancyv1alpha1.Workspace{}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, framework.EventuallyTimeout, true, func(ctx context.Context) (bool, error) {
		last = c.Get(ctx, logicalcluster.Root, workspacesGVR, home.WorkspaceName, got)
		if apierrors.IsTooManyRequests(last) {
			return false, nil
		}
		return last == nil, last
	})
	if err != nil {
		t.Fatalf("home of %s through the front-proxy: %v (last: %v)", user, err, last)
	}
	return got
}

// TestHomeWorkspaceThroughTheFrontProxy: a user's home is created through
// the front-proxy, is reached there by user:<name> and its cluster name, a
// workspace nested in it (on another shard when there is one) by
// user:<name>:<child>, and another user gets into neither.
func TestHomeWorkspaceThroughTheFrontProxy(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	const owner, other = "user-4", "user-5"
	ws := homeOf(ctx, t, owner)
	if want := string(home.ClusterName(owner)); ws.Spec.Cluster != want {
		t.Errorf("home of %s is cluster %q, want %q", owner, ws.Spec.Cluster, want)
	}
	if want := sys.URL(t) + "/clusters/user:" + owner; ws.Spec.URL != want {
		t.Errorf("home spec.URL = %q, want the front-proxy's %q", ws.Spec.URL, want)
	}
	again := homeOf(ctx, t, owner)
	if again.Spec.Cluster != ws.Spec.Cluster || !again.CreationTimestamp.Equal(&ws.CreationTimestamp) {
		t.Errorf("second access: %s created %v, first %s created %v", again.Spec.Cluster, again.CreationTimestamp, ws.Spec.Cluster, ws.CreationTimestamp)
	}

	byPath := kube(t, sys.UserConfig(t, owner, "user:"+owner))
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := byPath.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "at-home"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}, "create a configmap in the home by path")
	if out := kubectlAs(ctx, t, ws.Spec.URL, owner, "get", "configmap", "at-home", "-n", "default", "-o", "jsonpath={.data.k}"); out != "v" {
		t.Errorf("kubectl at the home's spec.URL: %q", out)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := kube(t, sys.UserConfig(t, owner, ws.Spec.Cluster)).CoreV1().ConfigMaps("default").Get(ctx, "at-home", metav1.GetOptions{})
		return err
	}, "read the configmap by the home's cluster name")
	// Ours, beyond kcp: kubectl ws's "~" as a server path.
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := kube(t, sys.UserConfig(t, owner, "~")).CoreV1().ConfigMaps("default").Get(ctx, "at-home", metav1.GetOptions{})
		return err
	}, "read the configmap at /clusters/~ through the front-proxy")

	// A workspace below the home, placed on another shard when there is one.
	childShard := "root"
	if shards > 1 {
		childShard = "shard-1"
	}
	c := kcp(t, sys.UserConfig(t, owner, ""))
	child := &tenancyv1alpha1.Workspace{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
		ObjectMeta: metav1.ObjectMeta{Name: "project"},
		Spec: tenancyv1alpha1.WorkspaceSpec{Location: &tenancyv1alpha1.WorkspaceLocation{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1alpha1.ShardNameLabel: childShard}},
		}},
	}
	homePath := logicalcluster.Name("user:" + owner)
	framework.Eventually(t, func(ctx context.Context) error {
		err := c.Create(ctx, homePath, workspacesGVR, child, &tenancyv1alpha1.Workspace{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}, "create a workspace in the home")
	framework.Eventually(t, func(ctx context.Context) error {
		got := &tenancyv1alpha1.Workspace{}
		if err := c.Get(ctx, homePath, workspacesGVR, "project", got); err != nil {
			return err
		}
		if got.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
			return apierrors.NewTooManyRequests("phase "+string(got.Status.Phase), 1)
		}
		if shardOf(got) != childShard {
			t.Errorf("nested workspace on shard %q, want %q", shardOf(got), childShard)
		}
		return nil
	}, "the nested workspace becomes Ready")
	nested := kube(t, sys.UserConfig(t, owner, "user:"+owner+":project"))
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := nested.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "nested"}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}, "create a configmap in user:%s:project", owner)
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := kube(t, sys.UserConfig(t, owner, "~:project")).CoreV1().ConfigMaps("default").Get(ctx, "nested", metav1.GetOptions{})
		return err
	}, "read the configmap at /clusters/~:project through the front-proxy")

	// Another user is kept out of both, with the answer of a path that
	// does not exist.
	client := proxyClient(t)
	token := sys.UserToken(other)
	for _, path := range []string{"user:" + owner, "user:" + owner + ":project", ws.Spec.Cluster} {
		code, body := rawGet(ctx, t, client, "/clusters/"+path+"/api/v1/namespaces/default/configmaps", token, nil)
		if code != http.StatusForbidden {
			t.Errorf("%s reading %s: %d %s, want 403", other, path, code, body)
		}
	}
	if otherHome := homeOf(ctx, t, other); otherHome.Spec.Cluster == ws.Spec.Cluster {
		t.Errorf("%s and %s share home %s", owner, other, ws.Spec.Cluster)
	}
}

// kubectlAs runs kubectl against server as a token user.
func kubectlAs(ctx context.Context, t *testing.T, server, user string, args ...string) string {
	t.Helper()
	return kubectl(ctx, t, server, append([]string{"--token=" + sys.UserToken(user)}, args...)...)
}
