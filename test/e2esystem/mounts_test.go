package e2esystem

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/rootdir"
	"github.com/shardplane/shardplane/test/framework"
)

// mountBackend is the endpoint a mount object points at: an HTTPS server
// on 127.0.0.1 that answers a list of APIExports below /clusters/mounted
// and records who asked. It presents the root shard's serving certificate,
// which the front-proxy trusts as it trusts every shard's.
type mountBackend struct {
	url   string
	mu    sync.Mutex
	users []string
}

func startMountBackend(t *testing.T) *mountBackend {
	t.Helper()
	dir := sys.ShardDir("root")
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, rootdir.ServingCertPairName+".crt"), filepath.Join(dir, rootdir.ServingCertPairName+".key"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &mountBackend{url: "https://" + ln.Addr().String() + "/clusters/mounted"}
	srv := &http.Server{
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/clusters/mounted/apis/apis.kcp.io/v1alpha1/apiexports" {
				http.NotFound(w, r)
				return
			}
			b.mu.Lock()
			b.users = append(b.users, r.Header.Get("X-Remote-User"))
			b.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"apiVersion":"apis.kcp.io/v1alpha1","kind":"APIExportList","metadata":{},"items":[]}`)
		}),
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return b
}

func (b *mountBackend) askedBy() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.users...)
}

// setMountStatus writes the mount object's status as the mount's
// implementation would.
func setMountStatus(ctx context.Context, t *testing.T, mounts dynamic.ResourceInterface, status map[string]interface{}) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := mounts.Get(ctx, "proxy-cluster", metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Object["status"] = status
		_, err = mounts.UpdateStatus(ctx, current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update mount status: %v", err)
	}
}

// TestMountsMachinery mirrors kcp's test of the same name
// (test/e2e/mounts): a KubeCluster CRD and object in a source workspace, a
// Workspace "mount" there with spec.mount naming the object, the object
// reporting Ready with a URL, the workspace's WorkspaceMountReady
// condition, a list of APIExports through the front-proxy at the mount's
// path; then the object Connecting, the workspace Unavailable, and the
// list failing. Deliberately different: kcp points the mount at another
// workspace through its own front-proxy; ours points at a test server (the
// front-proxy trusts only the shards' certificates), which shows that the
// request, with the rest of its path and the caller's identity, leaves
// for the mount's URL.
func TestMountsMachinery(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	org := readyWorkspace(ctx, t, "root", uniqueName("mounts"), "", "")
	source := readyWorkspace(ctx, t, org.Spec.Cluster, "source", "", "")
	sourcePath := logicalcluster.Path("root:" + org.Name + ":source")
	backend := startMountBackend(t)

	t.Logf("Install a mount object CRD into workspace %s", sourcePath)
	crds := apiextensionsclient.NewForConfigOrDie(sys.AdminConfig(t, source.Spec.Cluster)).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, framework.KubeClusterCRD(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	mounts := dynamic.NewForConfigOrDie(sys.AdminConfig(t, source.Spec.Cluster)).Resource(framework.KubeClustersGVR)
	t.Log("Install a mount object")
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := mounts.Create(ctx, framework.KubeCluster("proxy-cluster"), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}, "create the mount object")

	t.Log("Create the mounted workspace")
	c := kcp(t, sys.AdminConfig(t, ""))
	ws := framework.MountedWorkspace("mount", "proxy-cluster")
	parent := logicalcluster.Name(source.Spec.Cluster)
	if err := c.Create(ctx, parent, workspacesGVR, ws, &tenancyv1alpha1.Workspace{}); err != nil {
		t.Fatalf("create mounted workspace: %v", err)
	}

	t.Log("Updating the mount object to be ready")
	setMountStatus(ctx, t, mounts, map[string]interface{}{
		"URL": backend.url,
		"conditions": []interface{}{map[string]interface{}{
			"lastTransitionTime": "2024-10-19T12:30:47Z", "message": "The agent sent a heartbeat", "reason": "AgentReady", "status": "True", "type": "WorkspaceClusterReady",
		}},
		"phase": "Ready",
	})

	t.Log("Workspace should have the WorkspaceMountReady condition true")
	var got tenancyv1alpha1.Workspace
	framework.Eventually(t, func(ctx context.Context) error {
		if err := c.Get(ctx, parent, workspacesGVR, "mount", &got); err != nil {
			return err
		}
		if !got.Status.Conditions.IsTrue(tenancyv1alpha1.MountConditionReady) {
			return fmt.Errorf("status %+v", got.Status)
		}
		return nil
	}, "WorkspaceMountReady never true")
	if got.Spec.URL != backend.url || got.Status.Phase != corev1alpha1.LogicalClusterPhaseReady || got.Spec.Cluster != "" || got.Spec.Type != nil {
		t.Errorf("mounted workspace spec %+v phase %s, want the mount's URL, Ready, no cluster and no type", got.Spec, got.Status.Phase)
	}

	mountPath := string(sourcePath) + ":mount"
	list := func(ctx context.Context) (int, error) {
		var code int
		err := kube(t, sys.AdminConfig(t, mountPath)).CoreV1().RESTClient().Get().AbsPath("/apis/apis.kcp.io/v1alpha1/apiexports").Do(ctx).StatusCode(&code).Error()
		return code, err
	}
	t.Log("Workspace access should work")
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := list(ctx)
		return err
	}, "list APIExports in %s through the front-proxy", mountPath)
	users := backend.askedBy()
	if len(users) == 0 || users[len(users)-1] == "" {
		t.Errorf("the mount backend was asked by %q, want the caller's name", users)
	}
	// Authentication applies as for any workspace: an anonymous request
	// never leaves the front-proxy.
	if code, _ := rawGet(ctx, t, proxyClient(t), "/clusters/"+mountPath+"/apis/apis.kcp.io/v1alpha1/apiexports", "", nil); code != http.StatusUnauthorized {
		t.Errorf("anonymous GET in a mount: %d, want 401", code)
	}
	if after := backend.askedBy(); len(after) != len(users) {
		t.Errorf("an anonymous request reached the mount backend as %q", after[len(users):])
	}

	t.Log("Set mount to not ready")
	setMountStatus(ctx, t, mounts, map[string]interface{}{"URL": backend.url, "phase": "Connecting"})

	t.Log("Workspace phase should become unavailable")
	framework.Eventually(t, func(ctx context.Context) error {
		if err := c.Get(ctx, parent, workspacesGVR, "mount", &got); err != nil {
			return err
		}
		if got.Status.Phase != corev1alpha1.LogicalClusterPhaseUnavailable {
			return fmt.Errorf("status %+v", got.Status)
		}
		return nil
	}, "mounted workspace never Unavailable")
	cond := got.Status.Conditions.Get(tenancyv1alpha1.MountConditionReady)
	if cond == nil || cond.Status != corev1.ConditionFalse || cond.Reason != tenancyv1alpha1.MountObjectNotReadyReason ||
		cond.Message != `Mount is not reporting ready. See KubeCluster "proxy-cluster" status for more details` {
		t.Errorf("WorkspaceMountReady = %+v, want kcp's MountObjectNotReady", cond)
	}

	t.Log("Workspace access should eventually fail")
	framework.Eventually(t, func(ctx context.Context) error {
		if _, err := list(ctx); !apierrors.IsServiceUnavailable(err) {
			return fmt.Errorf("list: %v, want 503", err)
		}
		return nil
	}, "list in an Unavailable mount still answers")
	// kcp's front-proxy answers in plain text.
	code, body := rawGet(ctx, t, proxyClient(t), "/clusters/"+mountPath+"/apis/apis.kcp.io/v1alpha1/apiexports", sys.AdminConfig(t, "").BearerToken, nil)
	if code != http.StatusServiceUnavailable || body != "Not available.\n" {
		t.Errorf("GET in an Unavailable mount: %d %q, want 503 \"Not available.\"", code, body)
	}
}
