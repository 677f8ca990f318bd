package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/test/framework"
)

// twoShards are a root shard and shard beta that joined it, both serving
// one certificate and accepting one logical-cluster-admin token, as the
// shards of a system do.
type twoShards struct {
	root, beta *wsEnv
	// betaExternalURL is beta's --shard-external-url (the front-proxy's URL
	// in a system; nothing listens there in this test).
	betaExternalURL string
}

// startTwoShards starts root and then beta with --root-shard-kubeconfig
// and --cache-kubeconfig pointing at root's admin.kubeconfig (root serves
// the cache in-process).
func startTwoShards(t *testing.T) twoShards {
	t.Helper()
	cert, key := framework.SharedServingCert(t)
	token := framework.RandomToken(t)
	lca := framework.TokenUser{Name: "system:kcp:logical-cluster-admin", Groups: []string{"system:kcp:logical-cluster-admin"}, Token: token}
	// A user both shards know, as behind a front-proxy.
	user := framework.TokenUser{Name: "user-1", Groups: []string{"team-1"}, Token: framework.RandomToken(t)}
	// The server is replaced by each Shard's baseURL.
	lcaKubeconfig := framework.WriteTokenKubeconfig(t, "logical-cluster-admin", "https://127.0.0.1", cert, token)
	common := []string{"--tls-cert-file=" + cert, "--tls-private-key-file=" + key, "--logical-cluster-admin-kubeconfig=" + lcaKubeconfig}

	root := &wsEnv{s: framework.StartShard(t, framework.WithTokenUsers(lca, user), framework.WithArgs(common...))}
	root.waitForRootBootstrap(t)

	external := "https://127.0.0.1:" + strconv.Itoa(framework.FreePort(t))
	beta := &wsEnv{s: framework.StartShard(t, framework.WithTokenUsers(lca, user), framework.WithArgs(append(common,
		"--shard-name=beta",
		"--root-shard-kubeconfig="+root.s.Kubeconfig(),
		// root serves the cache in-process; shard-admin (system:masters)
		// may write it.
		"--cache-kubeconfig="+kubeconfigWithContext(t, root.s.Kubeconfig(), "shard-base"),
		"--shard-external-url="+external,
	)...))}
	return twoShards{root: root, beta: beta, betaExternalURL: external}
}

// kubeconfigWithContext writes a copy of the kubeconfig at path whose
// current context is context.
func kubeconfigWithContext(t *testing.T, path, context string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg.CurrentContext = context
	out := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// onShard selects the shard named name (label name=<shard> of its Shard).
func onShard(name string) *tenancyv1alpha1.WorkspaceLocation {
	return &tenancyv1alpha1.WorkspaceLocation{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1alpha1.ShardNameLabel: name}}}
}

// readyWorkspaceAt creates a workspace in parent (its location nil or a
// selector) and waits until it is Ready.
func readyWorkspaceAt(ctx context.Context, t *testing.T, c *kcpREST, parent, name string, typ *tenancyv1alpha1.WorkspaceTypeReference, location *tenancyv1alpha1.WorkspaceLocation) ws {
	t.Helper()
	obj := newWorkspace(name, typ)
	obj.Spec.Location = location
	out := &tenancyv1alpha1.Workspace{}
	if err := c.create(ctx, parent, workspacesGVR, obj, out); err != nil {
		t.Fatalf("create workspace %s in %s: %v", name, parent, err)
	}
	return waitForPhase(t, c, ws{parent: parent, name: name, obj: out}, corev1alpha1.LogicalClusterPhaseReady)
}

// shardOfWorkspace is the shard a workspace was scheduled to.
func shardOfWorkspace(w ws) string { return w.obj.Annotations[corev1alpha1.ShardAnnotationKey] }

// requireOnShard fails unless the workspace is scheduled to shard and its
// LogicalCluster lives there, carrying the workspace's path.
func requireOnShard(ctx context.Context, t *testing.T, shard string, on *wsEnv, w ws) {
	t.Helper()
	if got := shardOfWorkspace(w); got != shard {
		t.Fatalf("workspace %s is on shard %q, want %s", w.path(), got, shard)
	}
	lc := getLogicalCluster(ctx, t, on.kcp(t, kcpAdmin), w.cluster())
	if got := lc.Annotations["kcp.io/path"]; got != w.path() {
		t.Errorf("LogicalCluster of %s on shard %s has path %q, want %q", w.path(), shard, got, w.path())
	}
}

// requireBoundToRootTenancy fails unless the workspace, on shard on, has
// its default APIBinding to root's tenancy.kcp.io Bound: on a shard
// without root, the export is read from root (or the copy of it).
func requireBoundToRootTenancy(ctx context.Context, t *testing.T, on *wsEnv, w ws) {
	t.Helper()
	b, err := defaultBinding(ctx, on.kcp(t, kcpAdmin), w.cluster(), "root", "tenancy.kcp.io")
	if err != nil || b == nil || !bound(b) || b.Status.APIExportClusterName != "root" {
		t.Fatalf("APIBinding of %s to root:tenancy.kcp.io: %+v, %v; want Bound to the export in root", w.path(), b, err)
	}
}

// useWorkspace creates a ConfigMap in the workspace (by cluster name or
// path) and reads it back, as kcp-admin of the shard it lives on.
func useWorkspace(ctx context.Context, t *testing.T, on *wsEnv, cluster, name string) {
	t.Helper()
	c := on.kube(t, kcpAdmin, cluster)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"cluster": cluster}}
	var err error
	_ = wait.PollUntilContextTimeout(ctx, wsPoll, wsTimeout, true, func(ctx context.Context) (bool, error) {
		// The default namespace is created as the workspace starts.
		_, err = c.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, cm, metav1.CreateOptions{})
		return err == nil || !apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("create ConfigMap %s in %s: %v", name, cluster, err)
	}
	got, err := c.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
	if err != nil || got.Data["cluster"] != cluster {
		t.Fatalf("get ConfigMap %s in %s: %v %v", name, cluster, got, err)
	}
}

// wildcardWorkspaces lists /clusters/*/apis/tenancy.kcp.io/v1alpha1/workspaces:<identity>
// on a shard as its shard-admin and returns the status and the names.
func wildcardWorkspaces(ctx context.Context, t *testing.T, on *wsEnv, identity string) (int, map[string]bool) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, on.s.ClusterURL(t, "*", "/apis/tenancy.kcp.io/v1alpha1/workspaces:"+identity), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+on.s.KubeconfigToken(t, shardAdmin))
	resp, err := on.s.HTTPClient(t).Do(req)
	if err != nil {
		t.Fatalf("wildcard list of workspaces:%s: %v", identity, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	list := &tenancyv1alpha1.WorkspaceList{}
	names := map[string]bool{}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, list); err != nil {
			t.Fatalf("decode wildcard list: %v", err)
		}
		for _, w := range list.Items {
			names[w.Name] = true
		}
	}
	return resp.StatusCode, names
}

func TestSecondShardJoinsAndReceivesWorkspaces(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	shards := startTwoShards(t)
	root, beta := shards.root, shards.beta
	rootKCP := root.kcp(t, kcpAdmin)

	// Beta registered itself in root with its URLs.
	shard := &corev1alpha1.Shard{}
	if err := rootKCP.get(ctx, "root", kcpclient.Shards, "beta", shard); err != nil {
		t.Fatalf("Shard beta in root: %v", err)
	}
	if want := fmt.Sprintf("https://127.0.0.1:%d", beta.s.SecurePort()); shard.Spec.BaseURL != want || shard.Spec.ExternalURL != shards.betaExternalURL {
		t.Errorf("Shard beta: baseURL %q externalURL %q, want %q and %q", shard.Spec.BaseURL, shard.Spec.ExternalURL, want, shards.betaExternalURL)
	}

	// An organization on root spreads its new workspaces over both shards:
	// each goes to the shard with fewer workspaces.
	org := readyWorkspaceAt(ctx, t, rootKCP, "root", uniqueName("org"), nil, onShard("root"))
	var children []ws
	for i := range 10 {
		children = append(children, createWorkspace(ctx, t, rootKCP, org.path(), fmt.Sprintf("child-%d", i), nil))
	}
	perShard := map[string][]ws{}
	for _, w := range children {
		w = waitForPhase(t, rootKCP, w, corev1alpha1.LogicalClusterPhaseReady)
		perShard[shardOfWorkspace(w)] = append(perShard[shardOfWorkspace(w)], w)
	}
	// Root counts the organization itself on root: least loaded leaves the
	// two within one of each other.
	onRoot, onBetaCount := len(perShard["root"])+1, len(perShard["beta"])
	t.Logf("10 workspaces of %s: %d on root, %d on beta", org.path(), len(perShard["root"]), onBetaCount)
	if onRoot+onBetaCount != len(children)+1 || onRoot-onBetaCount > 1 || onBetaCount-onRoot > 1 {
		t.Fatalf("10 workspaces: %d on root (and the organization), %d on beta; want the least loaded shard to get each, none elsewhere", onRoot-1, onBetaCount)
	}

	// A workspace on beta: its URL is beta's external URL, its
	// LogicalCluster lives on beta, and it serves there by name and by path.
	onBeta := perShard["beta"][0]
	if want := shards.betaExternalURL + "/clusters/" + onBeta.path(); onBeta.obj.Spec.URL != want {
		t.Errorf("spec.URL of %s = %q, want %q", onBeta.path(), onBeta.obj.Spec.URL, want)
	}
	requireOnShard(ctx, t, "beta", beta, onBeta)
	requireBoundToRootTenancy(ctx, t, beta, onBeta)
	useWorkspace(ctx, t, beta, onBeta.cluster(), "by-name")
	useWorkspace(ctx, t, beta, onBeta.path(), "by-path")
	if w := perShard["root"][0]; w.obj.Spec.URL != root.s.BaseURL(t)+"/clusters/"+w.path() {
		t.Errorf("spec.URL of %s on root = %q, want root's URL", w.path(), w.obj.Spec.URL)
	}

	// A team nested under the organization on root, placed on beta.
	team := readyWorkspaceAt(ctx, t, rootKCP, org.path(), uniqueName("team"), typeRef("team", "root"), onShard("beta"))
	requireOnShard(ctx, t, "beta", beta, team)
	useWorkspace(ctx, t, beta, team.path(), "team")

	// An organization on beta, and children that beta schedules itself:
	// one onto beta, one onto root (with the logical-cluster-admin
	// credentials root accepts).
	orgB := readyWorkspaceAt(ctx, t, rootKCP, "root", uniqueName("orgb"), nil, onShard("beta"))
	requireOnShard(ctx, t, "beta", beta, orgB)
	betaAdmin := beta.kcp(t, shardAdmin)
	local := readyWorkspaceAt(ctx, t, betaAdmin, orgB.path(), "local", nil, onShard("beta"))
	requireOnShard(ctx, t, "beta", beta, local)
	remote := readyWorkspaceAt(ctx, t, betaAdmin, orgB.path(), "remote", nil, onShard("root"))
	requireOnShard(ctx, t, "root", root, remote)
	useWorkspace(ctx, t, root, remote.path(), "from-beta")

	// Users other than system:masters on beta: root's RBAC, read from root,
	// lets them use root's types and passes the maximal permission policy
	// of root:tenancy.kcp.io; orgB's own RBAC does the rest.
	byAdmin := readyWorkspaceAt(ctx, t, beta.kcp(t, kcpAdmin), orgB.path(), "by-admin", nil, onShard("beta"))
	requireOnShard(ctx, t, "beta", beta, byAdmin)
	orgBAdmin := beta.kube(t, kcpAdmin, orgB.cluster())
	bindClusterRole(ctx, t, orgBAdmin, "user-1-access", workspaceAccessRole, userSubject("user-1"))
	bindClusterRole(ctx, t, orgBAdmin, "user-1-admin", "cluster-admin", userSubject("user-1"))
	userKCP := beta.kcp(t, "user-1")
	eventuallyAllowed(ctx, t, "user-1 creates a workspace in "+orgB.path()+" on beta", func(ctx context.Context) error {
		_, err := createWorkspaceOnce(ctx, userKCP, orgB.path(), "by-user", nil)
		return err
	})
	byUser := waitForPhase(t, userKCP, ws{parent: orgB.path(), name: "by-user"}, corev1alpha1.LogicalClusterPhaseReady)
	t.Logf("user-1's workspace %s is on shard %s", byUser.path(), shardOfWorkspace(byUser))

	// Deleting a workspace on beta from root deletes its LogicalCluster there.
	gone := perShard["beta"][len(perShard["beta"])-1]
	if err := rootKCP.delete(ctx, org.path(), workspacesGVR, gone.name); err != nil {
		t.Fatalf("delete workspace %s: %v", gone.path(), err)
	}
	waitGone(t, "LogicalCluster of "+gone.path()+" on beta", func(ctx context.Context) error {
		return beta.kcp(t, shardAdmin).get(ctx, gone.cluster(), logicalClustersGVR, corev1alpha1.LogicalClusterName, &corev1alpha1.LogicalCluster{})
	})

	// Root's identity of tenancy.kcp.io, which beta keeps with root's other
	// objects in its root directory.
	export := &apisv1alpha2.APIExport{}
	if err := rootKCP.get(ctx, "root", apisv1alpha2.SchemeGroupVersion.WithResource("apiexports"), "tenancy.kcp.io", export); err != nil || export.Status.IdentityHash == "" {
		t.Fatalf("APIExport root:tenancy.kcp.io: %v (identity %q)", err, export.Status.IdentityHash)
	}
	identity := export.Status.IdentityHash
	if _, err := os.Stat(filepath.Join(beta.s.RootDir(), "global", "apiexports.apis.kcp.io.json")); err != nil {
		t.Errorf("beta keeps no copy of root's APIExports: %v", err)
	}

	// Beta restarts while root is down: it starts from its copies of root's
	// objects and serves its workspaces; it even schedules, types and binds
	// new ones of its own, for a user whom root's RBAC (from the copy) lets
	// use root's types and the workspaces of root:tenancy.kcp.io.
	if err := root.s.Stop(); err != nil {
		t.Fatalf("stop root: %v", err)
	}
	beta.s.Restart(t)
	useWorkspace(ctx, t, beta, onBeta.cluster(), "after-restart")
	useWorkspace(ctx, t, beta, team.path(), "team-after-restart")
	status, names := wildcardWorkspaces(ctx, t, beta, identity)
	if status != http.StatusOK || !names["local"] || !names["remote"] {
		t.Errorf("wildcard list of workspaces:<root's identity> on beta without root: HTTP %d, names %v; want 200 with local and remote", status, names)
	}
	offline := readyWorkspaceAt(ctx, t, beta.kcp(t, "user-1"), orgB.path(), "offline", nil, onShard("beta"))
	requireOnShard(ctx, t, "beta", beta, offline)
	requireBoundToRootTenancy(ctx, t, beta, offline)
	useWorkspace(ctx, t, beta, offline.cluster(), "offline")

	// Root returns: beta keeps receiving workspaces from it.
	if err := root.s.Start(); err != nil {
		t.Fatalf("restart root: %v", err)
	}
	again := readyWorkspaceAt(ctx, t, root.kcp(t, kcpAdmin), org.path(), "again", nil, onShard("beta"))
	requireOnShard(ctx, t, "beta", beta, again)
}
