package e2esystem

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/rootdir"
	"github.com/shardplane/shardplane/test/framework"
)

var workspacesGVR = tenancyv1alpha1.SchemeGroupVersion.WithResource("workspaces")

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func kube(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	return framework.KubeClient(t, cfg)
}

func kcp(t *testing.T, cfg *rest.Config) *kcpclient.Client {
	return framework.KCPClient(t, cfg)
}

var nameCounter struct {
	sync.Mutex
	n int
}

func uniqueName(prefix string) string {
	nameCounter.Lock()
	defer nameCounter.Unlock()
	nameCounter.n++
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1000000, nameCounter.n)
}

// readyWorkspace creates a workspace below parent through the front-proxy
// (on the shard named by onShard, if set) and waits for Ready and for the
// front-proxy to route requests into it.
func readyWorkspace(ctx context.Context, t *testing.T, parent, name, typ, onShard string) *tenancyv1alpha1.Workspace {
	t.Helper()
	var ref *tenancyv1alpha1.WorkspaceTypeReference
	if typ != "" {
		ref = &tenancyv1alpha1.WorkspaceTypeReference{Name: tenancyv1alpha1.WorkspaceTypeName(typ), Path: "root"}
	}
	return readyWorkspaceOfType(ctx, t, parent, name, ref, onShard)
}

// readyWorkspaceOfType is readyWorkspace with a type of any workspace.
func readyWorkspaceOfType(ctx context.Context, t *testing.T, parent, name string, typ *tenancyv1alpha1.WorkspaceTypeReference, onShard string) *tenancyv1alpha1.Workspace {
	t.Helper()
	c := kcp(t, sys.AdminConfig(t, ""))
	ws := &tenancyv1alpha1.Workspace{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}
	ws.Spec.Type = typ
	if onShard != "" {
		ws.Spec.Location = &tenancyv1alpha1.WorkspaceLocation{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1alpha1.ShardNameLabel: onShard}}}
	}
	cluster := logicalcluster.Name(parent)
	if err := c.Create(ctx, cluster, workspacesGVR, ws, &tenancyv1alpha1.Workspace{}); err != nil {
		t.Fatalf("create workspace %s:%s: %v", parent, name, err)
	}
	var got tenancyv1alpha1.Workspace
	framework.EventuallyEvery(t, 100*time.Millisecond, framework.EventuallyTimeout, func(ctx context.Context) error {
		if err := c.Get(ctx, cluster, workspacesGVR, name, &got); err != nil {
			return err
		}
		if got.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
			return fmt.Errorf("status %+v", got.Status)
		}
		return nil
	}, "workspace %s:%s never Ready", parent, name)
	// The front-proxy learns of the new logical cluster from a watch of its
	// shard, which may still be backing off after that shard restarted.
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := kube(t, sys.AdminConfig(t, got.Spec.Cluster)).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		return err
	}, "reach %s through the front-proxy", name)
	return &got
}

// shardOf returns the shard a workspace was scheduled to.
func shardOf(ws *tenancyv1alpha1.Workspace) string {
	return ws.Annotations[corev1alpha1.ShardAnnotationKey]
}

func kubectl(ctx context.Context, t *testing.T, server string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl not found in PATH; install it, see README")
	}
	all := append([]string{"--kubeconfig=" + sys.Kubeconfig(), "--context=base", "--server=" + server}, args...)
	cmd := exec.CommandContext(ctx, "kubectl", all...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestKubectlWorksThroughTheFrontProxyByPath: an organization and a team
// below it, on different shards when there are several, are used by path
// through the one URL with kubectl.
func TestKubectlWorksThroughTheFrontProxyByPath(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	org := readyWorkspace(ctx, t, "root", uniqueName("org"), "organization", "root")
	teamShard := "root"
	if shards > 1 {
		teamShard = "shard-1"
	}
	orgPath := "root:" + org.Name
	team := readyWorkspace(ctx, t, orgPath, "team", "team", teamShard)
	if got := shardOf(team); got != teamShard {
		t.Errorf("team scheduled to shard %q, want %q", got, teamShard)
	}
	if want := sys.URL(t) + "/clusters/" + orgPath + ":team"; team.Spec.URL != want {
		t.Errorf("team spec.URL = %q, want the front-proxy's %q", team.Spec.URL, want)
	}
	server := sys.URL(t) + "/clusters/" + orgPath + ":team"
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := kube(t, sys.AdminConfig(t, orgPath+":team")).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err
	}, "reach the team through the proxy")
	kubectl(ctx, t, server, "create", "configmap", "via-proxy", "-n", "default", "--from-literal=k=v")
	out := kubectl(ctx, t, server, "get", "configmap", "via-proxy", "-n", "default", "-o", "jsonpath={.data.k}")
	if out != "v" {
		t.Errorf("kubectl get through the proxy: %q", out)
	}
	apply := filepath.Join(t.TempDir(), "cm.yaml")
	if err := os.WriteFile(apply, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: default\ndata:\n  a: b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(ctx, t, server, "apply", "--server-side", "-f", apply)
	out = kubectl(ctx, t, server, "get", "configmap", "applied", "-n", "default", "-o", "jsonpath={.metadata.managedFields[0].manager}")
	if out != "kubectl" {
		t.Errorf("server-side apply manager = %q", out)
	}
	if out := kubectl(ctx, t, server, "explain", "configmap.data"); !strings.Contains(out, "configuration data") {
		t.Errorf("kubectl explain through the proxy:\n%s", out)
	}
	// The same workspace by its logical cluster name.
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := kube(t, sys.AdminConfig(t, team.Spec.Cluster)).CoreV1().ConfigMaps("default").Get(ctx, "via-proxy", metav1.GetOptions{})
		return err
	}, "reach the team by cluster name")
}

// rawGet sends a GET through the front-proxy with a bearer token (may be
// empty) and extra headers, and returns the status code and body.
func rawGet(ctx context.Context, t *testing.T, client *http.Client, path, token string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, sys.URL(t)+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range headers {
		req.Header.Add(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func proxyClient(t *testing.T, certs ...tls.Certificate) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(filepath.Join(sys.Dir, "front-proxy", rootdir.ServingCertPairName+".crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: certs, MinVersion: tls.VersionTLS12}}}
}

// TestNoAccessAndNoWorkspaceLookTheSame: a user without access to a
// workspace gets the same 403 for it as for a path that does not exist.
func TestNoAccessAndNoWorkspaceLookTheSame(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	org := readyWorkspace(ctx, t, "root", uniqueName("private"), "organization", "")
	client := proxyClient(t)
	token := sys.UserToken("user-1")
	var existing string
	var code int
	framework.Eventually(t, func(ctx context.Context) error {
		code, existing = rawGet(ctx, t, client, "/clusters/root:"+org.Name+"/api/v1/namespaces", token, nil)
		if code != http.StatusForbidden {
			return fmt.Errorf("%d: %s", code, existing)
		}
		return nil
	}, "403 for the existing workspace")
	code, missing := rawGet(ctx, t, client, "/clusters/root:"+org.Name+"-missing/api/v1/namespaces", token, nil)
	if code != http.StatusForbidden {
		t.Fatalf("missing workspace: %d %s", code, missing)
	}
	if existing != missing {
		t.Errorf("the answers differ:\nexisting: %s\nmissing:  %s", existing, missing)
	}
	if !strings.Contains(missing, "workspace access not permitted") {
		t.Errorf("403 body lacks the reason: %s", missing)
	}
	// Unauthenticated clients learn nothing either.
	code, _ = rawGet(ctx, t, client, "/clusters/root:"+org.Name+"/api/v1/namespaces", "", nil)
	code2, _ := rawGet(ctx, t, client, "/clusters/root:"+org.Name+"-missing/api/v1/namespaces", "", nil)
	if code != http.StatusUnauthorized || code2 != http.StatusUnauthorized {
		t.Errorf("unauthenticated: %d and %d, want 401 for both", code, code2)
	}
}

func whoami(ctx context.Context, t *testing.T, client *http.Client, token string, headers map[string]string) (int, authenticationv1.UserInfo) {
	t.Helper()
	return whoamiAt(ctx, t, sys.URL(t), client, token, headers)
}

// whoamiAt asks the front-proxy at baseURL who the request is in root.
func whoamiAt(ctx context.Context, t *testing.T, baseURL string, client *http.Client, token string, headers map[string]string) (int, authenticationv1.UserInfo) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/clusters/root/apis/authentication.k8s.io/v1/selfsubjectreviews",
		strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range headers {
		req.Header.Add(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var review authenticationv1.SelfSubjectReview
	body, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(body, &review)
	return resp.StatusCode, review.Status.UserInfo
}

// TestForgedIdentityGainsNothing: authenticating-proxy headers sent by a
// client are dropped, and privileged groups never pass the proxy, whether
// they come from a token or a client certificate.
func TestForgedIdentityGainsNothing(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	client := proxyClient(t)
	forged := map[string]string{"X-Remote-User": "admin", "X-Remote-Group": "system:masters", "X-Remote-Extra-Scopes": "none"}

	code, u := whoami(ctx, t, client, sys.UserToken("user-1"), forged)
	if code != http.StatusCreated || u.Username != "user-1" || contains(u.Groups, "system:masters") || len(u.Extra) != 0 {
		t.Errorf("user-1 with forged headers: %d %+v", code, u)
	}
	if code, _ := whoami(ctx, t, client, "", forged); code != http.StatusUnauthorized {
		t.Errorf("forged headers alone: %d, want 401", code)
	}
	// admin is system:masters in the token file: not through the proxy.
	code, u = whoami(ctx, t, client, sys.UserToken("admin"), nil)
	if code != http.StatusCreated || u.Username != "admin" || contains(u.Groups, "system:masters") {
		t.Errorf("admin through the proxy: %d %+v", code, u)
	}
	_, err := kube(t, sys.UserConfig(t, "admin", "root")).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("admin (system:masters dropped) listing root's secrets: %v, want 403", err)
	}

	// A client certificate of the shards' client CA with O=system:masters.
	dir, err := rootdir.Open(sys.ShardDir("root"))
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := dir.EnsureClientCert("e2e-masters", "client-ca", "cert-user", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	code, u = whoami(ctx, t, proxyClient(t, cert), "", nil)
	if code != http.StatusCreated || u.Username != "cert-user" || contains(u.Groups, "system:masters") {
		t.Errorf("client certificate with O=system:masters: %d %+v", code, u)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestWildcardIsRefusedAtTheProxy: /clusters/* is for the shards' own
// privileged clients only.
func TestWildcardIsRefusedAtTheProxy(t *testing.T) {
	t.Parallel()
	_, err := kube(t, sys.AdminConfig(t, "*")).CoreV1().ConfigMaps("").List(testContext(t), metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("wildcard list through the proxy: %v, want 403", err)
	}
}

// TestDeletedWorkspacePathGoesAway: once a workspace is deleted its path is
// refused like any unknown path.
func TestDeletedWorkspacePathGoesAway(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	org := readyWorkspace(ctx, t, "root", uniqueName("gone"), "organization", "")
	path := "root:" + org.Name
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := kube(t, sys.AdminConfig(t, path)).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		return err
	}, "reach the workspace")
	if err := kcp(t, sys.AdminConfig(t, "")).Delete(ctx, logicalcluster.Root, workspacesGVR, org.Name, nil); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := kube(t, sys.AdminConfig(t, path)).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "workspace access not permitted") {
			return nil
		}
		return fmt.Errorf("still answered: %v", err)
	}, "403 after deletion")
}

// TestWatchThroughTheProxyLosesNothing: a watch streams every event of a
// thousand creates.
func TestWatchThroughTheProxyLosesNothing(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	org := readyWorkspace(ctx, t, "root", uniqueName("watch"), "organization", "")
	path := "root:" + org.Name
	c := kube(t, sys.AdminConfig(t, path))
	var w watch.Interface
	// The watch lives as long as the test, not as one poll.
	watchCtx := ctx
	framework.Eventually(t, func(context.Context) error {
		var err error
		w, err = c.CoreV1().ConfigMaps("default").Watch(watchCtx, metav1.ListOptions{})
		return err
	}, "start the watch")
	defer w.Stop()
	const n = 1000
	errs := make(chan error, n)
	work := make(chan int)
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				_, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", j)}}, metav1.CreateOptions{})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("create: %v", err)
	}
	seen := map[string]bool{}
	timeout := time.After(2 * time.Minute)
	for len(seen) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %d of %d events", len(seen), n)
			}
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type == watch.Added && strings.HasPrefix(cm.Name, "cm-") {
				seen[cm.Name] = true
			}
		case <-timeout:
			t.Fatalf("saw %d of %d events", len(seen), n)
		}
	}
}

// TestShardOutageOnlyFailsItsWorkspaces: with a shard down, its
// workspaces answer 503 naming it, the others keep working, and its
// workspaces come back when it does.
func TestShardOutageOnlyFailsItsWorkspaces(t *testing.T) {
	if shards < 2 {
		t.Skip("needs a second shard (SHARDPLANE_E2E_SYSTEM_SHARDS >= 2)")
	}
	// Not parallel: it stops a shard the other tests use.
	ctx := testContext(t)
	onRoot := readyWorkspace(ctx, t, "root", uniqueName("on-root"), "organization", "root")
	onBeta := readyWorkspace(ctx, t, "root", uniqueName("on-beta"), "organization", "shard-1")
	get := func(ctx context.Context, path string) error {
		_, err := kube(t, sys.AdminConfig(t, path)).CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err
	}
	framework.Eventually(t, func(ctx context.Context) error { return get(ctx, "root:"+onBeta.Name) }, "reach the workspace on shard-1")

	sys.StopProcess(t, "shard-1")
	restarted := false
	defer func() {
		if !restarted {
			sys.RestartExited(t, "shard-1", sys.ShardURL(t, "shard-1")+"/livez")
		}
	}()
	err := get(ctx, "root:"+onBeta.Name)
	if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), "shard-1") {
		t.Errorf("workspace on the stopped shard: %v, want 503 naming shard-1", err)
	}
	if err := get(ctx, "root:"+onRoot.Name); err != nil {
		t.Errorf("workspace on root while shard-1 is down: %v", err)
	}
	sys.RestartExited(t, "shard-1", sys.ShardURL(t, "shard-1")+"/livez")
	restarted = true
	framework.Eventually(t, func(ctx context.Context) error { return get(ctx, "root:"+onBeta.Name) }, "workspace on shard-1 after its restart")
}

// TestFrontProxiesAreStatelessAndInterchangeable: what one front-proxy
// writes, the other one serves.
func TestFrontProxiesAreStatelessAndInterchangeable(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	urls := sys.ProxyURLs(t)
	if len(urls) < 2 {
		t.Fatalf("the system runs %d front-proxies, want 2", len(urls))
	}
	org := readyWorkspace(ctx, t, "root", uniqueName("twoproxies"), "organization", "")
	path := "root:" + org.Name
	via := func(i int) kubernetes.Interface {
		cfg := sys.AdminConfig(t, "")
		cfg.Host = logicalcluster.Path(path).URL(urls[i])
		return kube(t, cfg)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := via(0).CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared"}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}, "create through the first front-proxy")
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := via(1).CoreV1().ConfigMaps("default").Get(ctx, "shared", metav1.GetOptions{})
		return err
	}, "read through the second front-proxy")
}
