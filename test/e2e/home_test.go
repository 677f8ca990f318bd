package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/home"
	"github.com/shardplane/shardplane/test/framework"
)

// Users of the home workspace tests, with names a user may have.
const (
	homeAlice = "alice"
	homeBob   = "bob"
	// homeRobot looks like a service account but is a token user.
	homeRobot = "system:serviceaccount:ns:robot"
	homeEmail = "a@b.c"
)

// homeLongUser is a user name longer than any path segment may be.
var homeLongUser = "long-" + strings.Repeat("x", 120)

// startHomeShard starts a shard with the home test users (groups team-1
// for alice, team-2 for the others) and extra flags, and waits for root's
// bootstrap.
func startHomeShard(t *testing.T, args ...string) *wsEnv {
	t.Helper()
	users := []framework.TokenUser{{Name: homeAlice, Groups: []string{"team-1"}}}
	for _, name := range []string{homeBob, homeRobot, homeEmail, homeLongUser} {
		users = append(users, framework.TokenUser{Name: name, Groups: []string{"team-2"}})
	}
	e := &wsEnv{s: framework.StartShard(t, framework.WithTokenUsers(users...), framework.WithArgs(args...))}
	e.waitForRootBootstrap(t)
	return e
}

// getHome asks root for who's home Workspace once. It sends the request
// itself: client-go would wait out the 429s that the test wants to see.
func (e *wsEnv) getHome(ctx context.Context, t *testing.T, who string) (*tenancyv1alpha1.Workspace, error) {
	t.Helper()
	token := ""
	switch who {
	case kcpAdmin, shardAdmin:
		token = e.s.KubeconfigToken(t, who)
	default:
		token = e.s.UserToken(t, who)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.s.ClusterURL(t, "root", "/apis/tenancy.kcp.io/v1alpha1/workspaces/~"), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := e.s.HTTPClient(t).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		status := metav1.Status{}
		if err := json.Unmarshal(body, &status); err != nil || status.Code == 0 {
			return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, body)
		}
		if status.Code == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "1" {
			return nil, fmt.Errorf("429 with Retry-After %q, want 1", resp.Header.Get("Retry-After"))
		}
		return nil, &apierrors.StatusError{ErrStatus: status}
	}
	ws := &tenancyv1alpha1.Workspace{}
	return ws, json.Unmarshal(body, ws)
}

// readyHome asks for who's home until it is Ready, tolerating 429 (being
// created), and returns it.
func (e *wsEnv) readyHome(ctx context.Context, t *testing.T, who string) *tenancyv1alpha1.Workspace {
	t.Helper()
	var got *tenancyv1alpha1.Workspace
	var last error
	err := wait.PollUntilContextTimeout(ctx, wsPoll, wsTimeout, true, func(ctx context.Context) (bool, error) {
		got, last = e.getHome(ctx, t, who)
		if apierrors.IsTooManyRequests(last) {
			return false, nil
		}
		return last == nil, last
	})
	if err != nil {
		t.Fatalf("home of %s never became Ready: %v (last: %v)", who, err, last)
	}
	return got
}

// homeKube is a client of who in a home addressed by its path or name.
func (e *wsEnv) homeKube(t *testing.T, who, cluster string) kubernetes.Interface {
	t.Helper()
	return e.kube(t, who, cluster)
}

// putConfigMap creates a configmap in namespace default once the caller is
// let in (RBAC of a new home reaches the authorizer moments after it is
// Ready).
func putConfigMap(ctx context.Context, t *testing.T, c kubernetes.Interface, name, value string) *corev1.ConfigMap {
	t.Helper()
	var cm *corev1.ConfigMap
	eventuallyAllowed(ctx, t, "create configmap "+name, func(ctx context.Context) error {
		var err error
		cm, err = c.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"value": value}}, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			// The namespace default is created with the cluster; not yet seen.
			return apierrors.NewForbidden(corev1.Resource("namespaces"), "default", err)
		}
		return err
	})
	return cm
}

// requireHomeWorkspace checks the Workspace ~ answered for user.
func requireHomeWorkspace(t *testing.T, e *wsEnv, ws *tenancyv1alpha1.Workspace, user string) {
	t.Helper()
	wantPath := "user:" + user
	if strings.ContainsAny(user, ":@") || len(user) > 63 {
		wantPath = string(home.ClusterName(user))
	}
	if ws.Spec.Cluster != string(home.ClusterName(user)) {
		t.Errorf("home of %s is cluster %q, want %q", user, ws.Spec.Cluster, home.ClusterName(user))
	}
	if want := e.s.BaseURL(t) + "/clusters/" + wantPath; ws.Spec.URL != want {
		t.Errorf("home of %s has URL %q, want %q", user, ws.Spec.URL, want)
	}
	if ws.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
		t.Errorf("home of %s answered in phase %q", user, ws.Status.Phase)
	}
	if ws.Spec.Type == nil || ws.Spec.Type.String() != "root:home" {
		t.Errorf("home of %s has type %v, want root:home", user, ws.Spec.Type)
	}
}

func TestHomeWorkspaces(t *testing.T) {
	e := startHomeShard(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin := e.kcp(t, kcpAdmin)
	aliceHome := string(home.ClusterName(homeAlice))

	var first *tenancyv1alpha1.Workspace
	t.Run("first access creates the home, 429 until it is Ready", func(t *testing.T) {
		err := admin.get(ctx, aliceHome, logicalClustersGVR, corev1alpha1.LogicalClusterName, &corev1alpha1.LogicalCluster{})
		if !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
			t.Fatalf("alice's home exists before she asked for it: %v", err)
		}
		_, err = e.getHome(ctx, t, homeAlice)
		if !apierrors.IsTooManyRequests(err) {
			t.Fatalf("first access: %v, want 429 with Retry-After 1", err)
		}
		first = e.readyHome(ctx, t, homeAlice)
		requireHomeWorkspace(t, e, first, homeAlice)

		lc := getLogicalCluster(ctx, t, admin, aliceHome)
		if lc.Spec.Owner != nil {
			t.Errorf("home has an owner %+v; a home is rootless", lc.Spec.Owner)
		}
		if got := lc.Annotations["kcp.io/path"]; got != "user:alice" {
			t.Errorf("home path %q, want user:alice", got)
		}
		if got := lc.Annotations[corev1alpha1.LogicalClusterTypeAnnotationKey]; got != "root:home" {
			t.Errorf("home type %q, want root:home", got)
		}
		crb, err := e.kube(t, kcpAdmin, aliceHome).RbacV1().ClusterRoleBindings().Get(ctx, "workspace-admin", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("workspace-admin binding of alice's home: %v", err)
		}
		if crb.RoleRef.Name != "cluster-admin" || len(crb.Subjects) != 1 || crb.Subjects[0].Name != homeAlice || crb.Subjects[0].Kind != "User" {
			t.Errorf("workspace-admin binding %+v %+v, want alice as cluster-admin", crb.RoleRef, crb.Subjects)
		}
	})
	if first == nil {
		t.FailNow()
	}

	t.Run("a second access returns the same home", func(t *testing.T) {
		again, err := e.getHome(ctx, t, homeAlice)
		if err != nil {
			t.Fatal(err)
		}
		if again.Spec.Cluster != first.Spec.Cluster || !again.CreationTimestamp.Equal(&first.CreationTimestamp) {
			t.Errorf("second access: cluster %s created %v, first %s created %v", again.Spec.Cluster, again.CreationTimestamp, first.Spec.Cluster, first.CreationTimestamp)
		}
	})

	var aliceCM *corev1.ConfigMap
	t.Run("user:alice and the cluster name both reach the home", func(t *testing.T) {
		aliceCM = putConfigMap(ctx, t, e.homeKube(t, homeAlice, "user:alice"), "mine", "alice")
		requireConfigMap(ctx, t, e.homeKube(t, homeAlice, aliceHome), "the cluster name", aliceCM, aliceHome)
		if _, err := e.homeKube(t, homeAlice, "user:alice").RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("alice is not cluster-admin in her home: %v", err)
		}
	})

	t.Run("/clusters/~ is the caller's home", func(t *testing.T) {
		// Ours, beyond kcp: kubectl ws's "~" as a server path.
		requireConfigMap(ctx, t, e.homeKube(t, homeAlice, "~"), "/clusters/~", aliceCM, aliceHome)
		_, err := e.homeKube(t, homeBob, "~").CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "mine", metav1.GetOptions{})
		if err == nil {
			t.Errorf("bob reads alice's configmap at his /clusters/~")
		}
	})

	t.Run("two users get different homes and cannot enter each other's", func(t *testing.T) {
		bob := e.readyHome(ctx, t, homeBob)
		requireHomeWorkspace(t, e, bob, homeBob)
		if bob.Spec.Cluster == first.Spec.Cluster {
			t.Fatalf("alice and bob share home %s", bob.Spec.Cluster)
		}
		putConfigMap(ctx, t, e.homeKube(t, homeBob, "user:bob"), "mine", "bob")
		for _, c := range []struct{ who, cluster string }{
			{homeBob, "user:alice"}, {homeBob, aliceHome}, {homeAlice, "user:bob"}, {homeAlice, bob.Spec.Cluster},
		} {
			_, err := e.homeKube(t, c.who, c.cluster).CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "mine", metav1.GetOptions{})
			requireAccessDenied(t, err, c.who+" reading "+c.cluster)
		}
	})

	t.Run("users with unusual names get a home at its cluster name", func(t *testing.T) {
		for _, user := range []string{homeRobot, homeEmail, homeLongUser} {
			ws := e.readyHome(ctx, t, user)
			requireHomeWorkspace(t, e, ws, user)
			putConfigMap(ctx, t, e.homeKube(t, user, ws.Spec.Cluster), "mine", user)
		}
		// Their user:<name> is no path: a clear 400, not a 500.
		_, err := e.homeKube(t, homeEmail, "user:"+homeEmail).CoreV1().ConfigMaps(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		requireAPIError(t, err, http.StatusBadRequest, "user:a@b.c as a path", "invalid workspace path")
		// No unusual name takes a path of somebody else's home.
		if _, err := e.homeKube(t, homeRobot, "user:system:serviceaccount:ns:robot").CoreV1().ConfigMaps(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{}); err == nil {
			t.Errorf("user:system:serviceaccount:ns:robot resolves to a workspace")
		}
	})

	t.Run("a workspace nested in the home resolves by path", func(t *testing.T) {
		alice := e.kcp(t, homeAlice)
		project := readyWorkspace(ctx, t, alice, "user:alice", "project", nil)
		lc := getLogicalCluster(ctx, t, admin, project.cluster())
		if got := lc.Annotations["kcp.io/path"]; got != "user:alice:project" {
			t.Errorf("nested workspace has path %q, want user:alice:project", got)
		}
		if want := e.s.BaseURL(t) + "/clusters/user:alice:project"; project.obj.Spec.URL != want {
			t.Errorf("nested workspace URL %q, want %q", project.obj.Spec.URL, want)
		}
		cm := putConfigMap(ctx, t, e.homeKube(t, homeAlice, "user:alice:project"), "nested", "deep")
		requireConfigMap(ctx, t, e.homeKube(t, homeAlice, project.cluster()), "the nested cluster name", cm, project.cluster())
		// The home's cluster name stands for its path: <home>:project.
		home := e.readyHome(ctx, t, homeAlice)
		requireConfigMap(ctx, t, e.homeKube(t, homeAlice, home.Spec.Cluster+":project"), "the home's cluster name and the nested name", cm, project.cluster())
		_, err := e.homeKube(t, homeBob, "user:alice:project").CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "nested", metav1.GetOptions{})
		requireAccessDenied(t, err, "bob reading alice's nested workspace")
	})

	t.Run("~ works with kubectl", func(t *testing.T) {
		token := "--token=" + e.s.UserToken(t, homeAlice)
		url, _, err := e.s.Kubectl(ctx, "", token, "get", "workspaces", "~", "-o", "jsonpath={.spec.URL}")
		if err != nil {
			t.Fatal(err)
		}
		if url != first.Spec.URL {
			t.Fatalf("kubectl get workspace ~ gave URL %q, want %q", url, first.Spec.URL)
		}
		// The URL is a server kubectl works against, as alice.
		if _, _, err := e.s.Kubectl(ctx, "", token, "--server="+url, "create", "configmap", "from-kubectl", "--from-literal=value=hi"); err != nil {
			t.Fatal(err)
		}
		out, _, err := e.s.Kubectl(ctx, "", token, "--server="+url, "get", "configmap", "from-kubectl", "-o", "jsonpath={.data.value}")
		if err != nil || out != "hi" {
			t.Fatalf("kubectl get configmap in the home: %q %v", out, err)
		}
		// Without credentials there is no home.
		_, stderr, err := e.s.Kubectl(ctx, "", "--token=not-a-token", "get", "workspaces", "~")
		if err == nil || !strings.Contains(stderr, "Unauthorized") {
			t.Errorf("kubectl with a bad token: %v %s", err, stderr)
		}
	})

	t.Run("a restart keeps the homes", func(t *testing.T) {
		e.s.Restart(t)
		after := e.readyHome(ctx, t, homeAlice)
		if after.Spec.Cluster != first.Spec.Cluster || !after.CreationTimestamp.Equal(&first.CreationTimestamp) {
			t.Errorf("after restart: home %s created %v, before %s created %v", after.Spec.Cluster, after.CreationTimestamp, first.Spec.Cluster, first.CreationTimestamp)
		}
		if aliceCM != nil {
			eventuallyAllowed(ctx, t, "read alice's configmap after the restart", func(ctx context.Context) error {
				_, err := e.homeKube(t, homeAlice, "user:alice").CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, aliceCM.Name, metav1.GetOptions{})
				return err
			})
			requireConfigMap(ctx, t, e.homeKube(t, homeAlice, "user:alice"), "user:alice after restart", aliceCM, aliceHome)
		}
	})
}

func TestHomeWorkspacesOnlyForTheCreatorGroups(t *testing.T) {
	e := startHomeShard(t, "--home-workspaces-home-creator-groups=team-1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	requireHomeWorkspace(t, e, e.readyHome(ctx, t, homeAlice), homeAlice)
	_, err := e.getHome(ctx, t, homeBob)
	requireAPIError(t, err, http.StatusForbidden, "bob (team-2) asking for a home", `"~"`, "none of the groups")
	err = e.kcp(t, kcpAdmin).get(ctx, string(home.ClusterName(homeBob)), logicalClustersGVR, corev1alpha1.LogicalClusterName, &corev1alpha1.LogicalCluster{})
	if err == nil {
		t.Errorf("bob got a home although he is in no creator group")
	}
}

func TestHomeWorkspacesTurnedOff(t *testing.T) {
	e := startHomeShard(t, "--enable-home-workspaces=false")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, who := range []string{homeAlice, kcpAdmin} {
		_, err := e.getHome(ctx, t, who)
		requireAPIError(t, err, http.StatusNotFound, fmt.Sprintf("%s asking for a home", who), `"~" not found`)
	}
	_, err := e.kube(t, homeAlice, "user:alice").CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	requireAccessDenied(t, err, "user:alice without home workspaces")
}
