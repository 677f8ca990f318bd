package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/test/framework"
)

// authorizationWebhook is an authorization webhook that allows or denies
// every SubjectAccessReview, as kcp's test webhook with the policies
// kubernetes:authz:allow and kubernetes:authz:deny.
type authorizationWebhook struct {
	allow atomic.Bool
	*httptest.Server
}

func startAuthorizationWebhook(t *testing.T, allow bool) *authorizationWebhook {
	t.Helper()
	w := &authorizationWebhook{}
	w.allow.Store(allow)
	w.Server = httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		var review authorizationv1.SubjectAccessReview
		if err := json.NewDecoder(req.Body).Decode(&review); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		allowed := w.allow.Load()
		review.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: allowed, Denied: !allowed, Reason: "test webhook"}
		rw.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(rw).Encode(review)
	}))
	t.Cleanup(w.Close)
	return w
}

// kubeconfig writes the webhook's kubeconfig for --authorization-webhook-config-file.
func (w *authorizationWebhook) kubeconfig(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["webhook"] = &clientcmdapi.Cluster{Server: w.URL, CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: w.Certificate().Raw})}
	cfg.AuthInfos["shard"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["webhook"] = &clientcmdapi.Context{Cluster: "webhook", AuthInfo: "shard"}
	cfg.CurrentContext = "webhook"
	path := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAuthorizationOrder mirrors kcp's TestAuthorizationOrder
// (test/e2e/authorizer): a shard with an authorization webhook at three
// places of --authorization-order, the webhook switched from allowing to
// denying, the admin's requests and the always-allowed health paths.
func TestAuthorizationOrder(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T, order string, webhook *authorizationWebhook) *framework.Shard {
		// Deliberately different from kcp's test: the framework probes
		// /readyz without credentials while the webhook still allows, and the
		// webhook authorizer would cache that for minutes (kcp's harness
		// probes as system:masters, which never reaches the webhook).
		args := []string{"--authorization-webhook-config-file", webhook.kubeconfig(t), "--authorization-webhook-cache-authorized-ttl=1ns"}
		if order != "" {
			args = append(args, "--authorization-order", order)
		}
		return framework.StartShard(t, framework.WithSubcommand("start"), framework.WithArgs(args...))
	}
	// The health endpoints without credentials, as kcp's verifyEndpointAccess.
	endpoint := func(ctx context.Context, t *testing.T, s *framework.Shard, path string) int {
		t.Helper()
		client, err := rest.HTTPClientFor(rest.AnonymousClientConfig(s.ClientConfig(t, "shard-base")))
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.BaseURL(t)+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	t.Run("Authorization order 1", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		webhook := startAuthorizationWebhook(t, true)
		s := setup(t, "AlwaysAllowGroups,AlwaysAllowPaths,Webhook,RBAC", webhook)
		kcp := newKCPREST(t, s.ClientConfig(t, "base"))
		if err := kcp.list(ctx, "root", workspacesGVR, &tenancyv1alpha1.WorkspaceList{}); err != nil {
			t.Errorf("admin listing Workspaces with an allowing webhook: %v", err)
		}
		webhook.allow.Store(false)
		if _, err := kubeClient(t, s, "base", "root").CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err == nil {
			t.Errorf("admin listed ConfigMaps although the webhook, before RBAC, denies")
		}
		if code := endpoint(ctx, t, s, "/healthz"); code != http.StatusOK {
			t.Errorf("/healthz: %d, want 200 (always-allowed paths come before the webhook)", code)
		}
	})

	t.Run("Authorization order 2", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		webhook := startAuthorizationWebhook(t, true)
		s := setup(t, "Webhook,AlwaysAllowGroups,AlwaysAllowPaths,RBAC", webhook)
		if code := endpoint(ctx, t, s, "/livez"); code != http.StatusOK {
			t.Errorf("/livez: %d, want 200", code)
		}
		kcp := newKCPREST(t, s.ClientConfig(t, "base"))
		if err := kcp.list(ctx, "root", workspacesGVR, &tenancyv1alpha1.WorkspaceList{}); err != nil {
			t.Errorf("admin listing Workspaces with an allowing webhook: %v", err)
		}
		webhook.allow.Store(false)
		if err := kcp.list(ctx, "root", logicalClustersGVR, &corev1alpha1.LogicalClusterList{}); err == nil {
			t.Errorf("admin listed LogicalClusters although the webhook, first, denies")
		}
		if _, err := kubeClient(t, s, "base", "root").CoreV1().Services("default").List(ctx, metav1.ListOptions{}); err == nil {
			t.Errorf("admin listed Services although the webhook, first, denies")
		}
		if code := endpoint(ctx, t, s, "/readyz"); code == http.StatusOK {
			t.Errorf("/readyz: 200, want a denial (the webhook comes before the always-allowed paths)")
		}
	})

	t.Run("Default authorization order", func(t *testing.T) {
		t.Parallel()
		ctx := testContext(t)
		// AlwaysAllowGroups,AlwaysAllowPaths,RBAC,Webhook
		s := setup(t, "", startAuthorizationWebhook(t, false))
		if code := endpoint(ctx, t, s, "/healthz"); code != http.StatusOK {
			t.Errorf("/healthz: %d, want 200", code)
		}
		kcp := newKCPREST(t, s.ClientConfig(t, "base"))
		if err := kcp.list(ctx, "root", workspacesGVR, &tenancyv1alpha1.WorkspaceList{}); err != nil {
			t.Errorf("admin listing Workspaces (RBAC before the denying webhook): %v", err)
		}
	})
}
