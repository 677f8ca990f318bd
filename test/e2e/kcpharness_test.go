package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/shardplane/shardplane/pkg/bootstrap"
	"github.com/shardplane/shardplane/pkg/rootdir"
	"github.com/shardplane/shardplane/test/framework"
)

// kcpAuditPolicy is kcp's test/e2e/audit/policy.yaml.
const kcpAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: Request
    verbs: ["list"]
    resources:
      - group: ""
        resources: ["configmaps"]
    namespaces: ["default"]
`

// kcpTestProcessFeatureGates is what kcp's harness passes as
// --feature-gates: the gates kcp's features package sets in the test
// process (pkg/features/kcp_features.go, disableFeatures).
const kcpTestProcessFeatureGates = "DRAExtendedResource=false,SizeBasedListCostEstimate=false,UnknownVersionInteroperabilityProxy=false,WatchCacheInitializationPostStartHook=false"

// kcpPrivateServerArgs builds the command line kcp's harness gives `kcp
// start` for a private server (sdk/testing/server Config.BuildArgs and
// sdk/testing PrivateKcpServer): fixed flags, the test's own, a default
// audit policy, and the mount proxy's request-header CA and certificate.
func kcpPrivateServerArgs(t *testing.T, s *framework.Shard, artifactDir string, custom ...string) []string {
	t.Helper()
	dataDir := s.RootDir()
	etcdClient, etcdPeer := s.EtcdPorts()
	args := []string{
		"--root-directory", dataDir,
		"--secure-port=" + strconv.Itoa(s.SecurePort()),
		"--embedded-etcd-client-port=" + strconv.Itoa(etcdClient),
		"--embedded-etcd-peer-port=" + strconv.Itoa(etcdPeer),
		"--embedded-etcd-wal-size-bytes=" + strconv.Itoa(5*1000),
		"--kubeconfig-path=" + filepath.Join(dataDir, "admin.kubeconfig"),
		"--audit-log-path", filepath.Join(artifactDir, "kcp.audit"),
		"--v=4",
		"--feature-gates=" + kcpTestProcessFeatureGates,
		"--bind-address=127.0.0.1",
	}
	args = append(args, custom...)
	if !slices.Contains(args, "--audit-policy-file") {
		args = append(args, "--audit-policy-file", writeFile(t, "audit-policy.yaml", kcpAuditPolicy))
	}
	if !slices.Contains(args, "--requestheader-client-ca-file") {
		dir, err := rootdir.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		ca, err := dir.EnsureCA("requestheader-ca", "kcp-requestheader-ca")
		if err != nil {
			t.Fatal(err)
		}
		cert, key, err := dir.EnsureClientCert("mounts-proxy", "requestheader-ca", "kcp-mounts-proxy")
		if err != nil {
			t.Fatal(err)
		}
		args = append(args,
			"--requestheader-client-ca-file", ca,
			"--requestheader-username-headers=X-Remote-User",
			"--requestheader-group-headers=X-Remote-Group",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			"--requestheader-allowed-names=kcp-mounts-proxy",
			"--mount-proxy-client-cert-file", cert,
			"--mount-proxy-client-key-file", key,
			"--mount-proxy-server-ca-file", filepath.Join(dataDir, "apiserver.crt"),
		)
	}
	return args
}

// writeFile writes content to a new file of the test and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// requireKCPReady checks readiness as kcp's fixture does (WaitForReady):
// /readyz and /livez answer 200 to the shard-base context.
func requireKCPReady(t *testing.T, s *framework.Shard) {
	t.Helper()
	client, err := rest.HTTPClientFor(s.ClientConfig(t, "shard-base"))
	if err != nil {
		t.Fatal(err)
	}
	for _, endpoint := range []string{"/readyz", "/livez"} {
		framework.Eventually(t, func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.BaseURL(t)+endpoint, nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %d", endpoint, resp.StatusCode)
			}
			return nil
		}, "%s never answered 200 to shard-base", endpoint)
	}
}

// requireLogSays fails the test for each text the shard's log lacks.
func requireLogSays(t *testing.T, s *framework.Shard, texts ...string) {
	t.Helper()
	data, err := os.ReadFile(s.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range texts {
		if !strings.Contains(string(data), want) {
			t.Errorf("shard log does not say %q", want)
		}
	}
}

// TestKCPPrivateServerCommandLineStartsTheShard starts the shard with the
// command line kcp's harness gives `kcp start` for a private server, with
// the flags kcp's private-server tests add (audit: TestAuditLogs;
// authorization webhook and order: TestAuthorizationOrder, which
// authorizationorder_test.go mirrors; object counts:
// the logical cluster object count test; token file and gates: the shared
// server's init), all on one command line. The shard becomes ready, warns
// about the settings it has no feature for, and, as kcp's TestAuditLogs
// checks, writes audit events annotated with the workspace and with the
// decisions of kcp's authorizer steps.
func TestKCPPrivateServerCommandLineStartsTheShard(t *testing.T) {
	t.Parallel()
	artifactDir := t.TempDir()
	tokens := writeFile(t, "auth-tokens.csv", "user-1-token,user-1,1111-1111-1111-1111,\"team-1\"\n")
	webhook := startAuthorizationWebhook(t, true).kubeconfig(t)
	s := framework.StartShard(t,
		framework.WithSubcommand("start"),
		framework.WithCommandLine(func(s *framework.Shard) []string {
			return kcpPrivateServerArgs(t, s, artifactDir,
				// kcp's policy, and SubjectAccessReviews for the checks below.
				"--audit-policy-file", writeFile(t, "policy.yaml", kcpAuditPolicy+sarAuditRule),
				"--authorization-webhook-config-file", webhook,
				// kcp's default order, written out: the shard's chain decides
				// before the webhook, so its steps' audit annotations appear.
				"--authorization-order", "AlwaysAllowGroups,AlwaysAllowPaths,RBAC,Webhook",
				"--logical-cluster-object-count-scan-interval=1s",
				"--token-auth-file", tokens,
				"--feature-gates=WorkspaceMounts=true,CacheAPIs=true,WorkspaceAuthentication=true,KcpNativeGarbageCollector=false",
			)
		}),
	)
	requireKCPReady(t, s)
	requireLogSays(t, s,
		"--mount-proxy-client-cert-file is accepted and ignored",
		"kcp feature gate KcpNativeGarbageCollector=false is not implemented by this shard and is ignored",
	)

	// kcp's TestAuditLogs: an org workspace, a list of its configmaps in
	// default, and the audit events of that list.
	ctx := testContext(t)
	org := readyWorkspace(ctx, t, newKCPREST(t, s.ClientConfig(t, "base")), "root", framework.UniqueClusterName("audit"), nil)
	if _, err := kubeClient(t, s, "base", org.path()).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list configmaps in %s: %v", org.path(), err)
	}
	cluster := org.obj.Spec.Cluster
	var request, response *auditv1.Event
	framework.Eventually(t, func(context.Context) error {
		request, response = nil, nil
		for _, e := range readAuditEvents(t, filepath.Join(artifactDir, "kcp.audit")) {
			if e.ObjectRef == nil || e.ObjectRef.Resource != "configmaps" || e.Annotations["tenancy.kcp.io/workspace"] != cluster {
				continue
			}
			switch e.Stage {
			case auditv1.StageRequestReceived:
				request = &e
			case auditv1.StageResponseComplete:
				response = &e
			}
		}
		if request == nil || response == nil {
			return fmt.Errorf("no RequestReceived and ResponseComplete events annotated tenancy.kcp.io/workspace=%s yet", cluster)
		}
		return nil
	}, "the audit log never had the list of configmaps in %s", org.path())
	for _, annotation := range []string{
		"request.auth.kcp.io/01-requiredgroups",
		"request.auth.kcp.io/02-content",
		"request.auth.kcp.io/03-systemcrd",
		"request.auth.kcp.io/04-maxpermissionpolicy",
		"request.auth.kcp.io/05-bootstrap",
	} {
		for _, suffix := range []string{"-decision", "-reason"} {
			if _, ok := response.Annotations[annotation+suffix]; !ok {
				t.Errorf("response audit event has no annotation %s%s: %v", annotation, suffix, response.Annotations)
			}
		}
	}

	// Beyond kcp's test, what its authorizer chain writes too: kcp-admin is
	// allowed by the bootstrap policy; a user granted in the workspace by
	// its own RBAC is allowed by 05-local after 05-bootstrap had no
	// opinion; the checks a SubjectAccessReview asks for are annotated
	// under sar.auth.kcp.io.
	if got := response.Annotations["request.auth.kcp.io/05-bootstrap-decision"]; got != "Allowed" {
		t.Errorf("kcp-admin's list: 05-bootstrap-decision %q, want Allowed", got)
	}
	admin := kubeClient(t, s, "base", org.path())
	for name, role := range map[string]string{"user-1-enters": bootstrap.WorkspaceAccessClusterRole, "user-1-views": "view"} {
		if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "user-1"}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	userCfg := rest.AnonymousClientConfig(s.ClusterConfig(t, "base", org.path()))
	userCfg.BearerToken = "user-1-token"
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := newKubeClient(t, userCfg).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		return err
	}, "user-1 never listed configmaps in %s", org.path())
	if _, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "user-1",
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "list", Resource: "configmaps"},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(context.Context) error {
		var userList, review bool
		for _, e := range readAuditEvents(t, filepath.Join(artifactDir, "kcp.audit")) {
			if e.Stage != auditv1.StageResponseComplete || e.ObjectRef == nil || e.Annotations["tenancy.kcp.io/workspace"] != cluster {
				continue
			}
			a := e.Annotations
			switch {
			case e.User.Username == "user-1" && e.ObjectRef.Resource == "configmaps" && e.ResponseStatus != nil && e.ResponseStatus.Code == http.StatusOK:
				userList = a["request.auth.kcp.io/05-bootstrap-decision"] == "NoOpinion" && a["request.auth.kcp.io/05-local-decision"] == "Allowed" &&
					strings.HasPrefix(a["request.auth.kcp.io/05-local-reason"], "local policy for cluster")
			case e.ObjectRef.Resource == "subjectaccessreviews":
				review = a["sar.auth.kcp.io/05-local-decision"] == "Allowed"
			}
		}
		if !userList || !review {
			return fmt.Errorf("user-1's list annotated 05-local: %v; the review's check annotated under sar.auth.kcp.io: %v", userList, review)
		}
		return nil
	}, "the audit log never told which RBAC step allowed user-1")
}

// sarAuditRule logs SubjectAccessReviews, whose checks kcp annotates
// under sar.auth.kcp.io.
const sarAuditRule = `  - level: Metadata
    verbs: ["create"]
    resources:
      - group: "authorization.k8s.io"
        resources: ["subjectaccessreviews"]
`

// readAuditEvents parses the JSON lines of an audit log.
func readAuditEvents(t *testing.T, path string) []auditv1.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		t.Fatal(err)
	}
	defer f.Close()
	var events []auditv1.Event
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for scanner.Scan() {
		var e auditv1.Event
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			t.Fatalf("audit log line %q: %v", scanner.Text(), err)
		}
		events = append(events, e)
	}
	return events
}

// TestKCPShardedTestServerCommandLineStartsTheShard starts the shard with
// the command line kcp's sharded-test-server gives its root shard
// (cmd/sharded-test-server/shard.go): shared client, request-header and
// serving CAs, service account keys from a self-signed CA, kcp's admin
// kubeconfigs for other shards and the front-proxy, the client certificate
// for an external virtual-workspaces server. The shard becomes ready and
// accepts a client certificate of the shared client CA.
func TestKCPShardedTestServerCommandLineStartsTheShard(t *testing.T) {
	t.Parallel()
	kcpDir, err := rootdir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ensureCA := func(name, cn string) string {
		path, err := kcpDir.EnsureCA(name, cn)
		if err != nil {
			t.Fatal(err)
		}
		return path
	}
	clientCA := ensureCA("client-ca", "kcp-client-ca")
	requestHeaderCA := ensureCA("requestheader-ca", "kcp-front-proxy-requestheader-ca")
	servingCA := ensureCA("serving-ca", "kcp-serving-ca")
	serviceAccountCert := ensureCA("service-account", "kcp-service-account-signing-ca")
	shardClientCert, shardClientKey, err := kcpDir.EnsureClientCert("shard-client-cert", "client-ca", "kcp-shard-0", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	adminCert, adminKey, err := kcpDir.EnsureClientCert("kcp-admin", "client-ca", "kcp-admin", "system:kcp:admin")
	if err != nil {
		t.Fatal(err)
	}
	servingCert, servingKey := framework.SharedServingCert(t)
	// kcp's harness writes these for the identities of the two groups.
	certKubeconfig := func(name, group string) string {
		cert, key, err := kcpDir.EnsureClientCert(name, "client-ca", name, group)
		if err != nil {
			t.Fatal(err)
		}
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["base"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthority: servingCert}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificate: cert, ClientKey: key}
		cfg.Contexts["base"] = &clientcmdapi.Context{Cluster: "base", AuthInfo: name}
		cfg.CurrentContext = "base"
		path := kcpDir.Path(name + ".kubeconfig")
		if err := clientcmd.WriteToFile(*cfg, path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	logicalClusterAdmin := certKubeconfig("logical-cluster-admin", "system:kcp:logical-cluster-admin")
	externalLogicalClusterAdmin := certKubeconfig("external-logical-cluster-admin", "system:kcp:external-logical-cluster-admin")
	audit := filepath.Join(t.TempDir(), "audit.log")

	s := framework.StartShard(t,
		framework.WithSubcommand("start"),
		framework.WithCommandLine(func(s *framework.Shard) []string {
			etcdClient, etcdPeer := s.EtcdPorts()
			return []string{
				// kcp's harness runs the root shard on fixed etcd ports; this
				// test picks free ones, as the harness does for shard n>0.
				"--embedded-etcd-client-port=" + strconv.Itoa(etcdClient),
				"--embedded-etcd-peer-port=" + strconv.Itoa(etcdPeer),
				"--bind-address=127.0.0.1",
				"--root-directory=" + s.RootDir(),
				"--client-ca-file=" + clientCA,
				"--requestheader-client-ca-file=" + requestHeaderCA,
				"--requestheader-username-headers=X-Remote-User",
				"--requestheader-group-headers=X-Remote-Group",
				"--requestheader-extra-headers-prefix=X-Remote-Extra-",
				"--service-account-key-file=" + serviceAccountCert,
				"--service-account-private-key-file=" + kcpDir.Path("service-account.key"),
				"--service-account-signing-key-file=" + kcpDir.Path("service-account.key"),
				"--service-account-lookup=false",
				"--audit-log-path", audit,
				"--shard-external-url=https://127.0.0.1:6443",
				"--tls-cert-file=" + servingCert,
				"--tls-private-key-file=" + servingKey,
				"--secure-port=" + strconv.Itoa(s.SecurePort()),
				"--logical-cluster-admin-kubeconfig=" + logicalClusterAdmin,
				"--external-logical-cluster-admin-kubeconfig=" + externalLogicalClusterAdmin,
				"--shard-client-cert-file=" + shardClientCert,
				"--shard-client-key-file=" + shardClientKey,
				"--shard-virtual-workspace-ca-file=" + servingCA,
				"--service-account-lookup=false",
				"--virtual-workspaces-workspaces.authorization-cache.resync-period=1s",
			}
		}),
	)
	requireKCPReady(t, s)

	// kcp's harness writes an admin kubeconfig with kcp-admin's client
	// certificate of the shared client CA.
	cfg := rest.AnonymousClientConfig(s.ClusterConfig(t, "base", "root"))
	cfg.CertFile, cfg.KeyFile = adminCert, adminKey
	if _, err := newKubeClient(t, cfg).CoreV1().Namespaces().Get(testContext(t), metav1.NamespaceDefault, metav1.GetOptions{}); err != nil {
		t.Fatalf("get namespace default in root with kcp-admin's client certificate: %v", err)
	}
}

// TestKCPVirtualWorkspacesCommandLineStartsTheServer starts the
// virtual-workspaces server with the command line kcp's sharded-test-server
// gives its standalone virtual workspaces (cmd/sharded-test-server/
// virtual.go) against a shard: it becomes ready, warns about the flags it
// has no feature for, and writes audit events by the policy.
func TestKCPVirtualWorkspacesCommandLineStartsTheServer(t *testing.T) {
	t.Parallel()
	s := framework.StartShard(t)
	pki, err := rootdir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	requestHeaderCA, err := pki.EnsureCA("requestheader-ca", "kcp-front-proxy-requestheader-ca")
	if err != nil {
		t.Fatal(err)
	}
	// The shard's system:masters credential, as kcp's virtualworkspace.kubeconfig.
	shardCA := filepath.Join(s.RootDir(), rootdir.ServingCertPairName+".crt")
	shardAdmin := s.ClientConfig(t, "shard-base")
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["shard"] = &clientcmdapi.Cluster{Server: s.BaseURL(t) + "/clusters/system:admin", CertificateAuthority: shardCA}
	kubeconfig.AuthInfos["virtualworkspace"] = &clientcmdapi.AuthInfo{Token: shardAdmin.BearerToken}
	kubeconfig.Contexts["shard"] = &clientcmdapi.Context{Cluster: "shard", AuthInfo: "virtualworkspace"}
	kubeconfig.CurrentContext = "shard"
	kubeconfigPath := filepath.Join(t.TempDir(), "virtualworkspace.kubeconfig")
	if err := clientcmd.WriteToFile(*kubeconfig, kubeconfigPath); err != nil {
		t.Fatal(err)
	}
	servingCert, servingKey := framework.SharedServingCert(t)
	policy := writeFile(t, "audit-policy.yaml", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n  - level: Metadata\n")
	audit := filepath.Join(t.TempDir(), "audit.log")
	port := framework.FreePort(t)

	p := &framework.Process{
		Name:    "virtual-workspaces",
		Binary:  framework.CommandBinary(t, "virtual-workspaces"),
		WorkDir: t.TempDir(),
		Args: func() []string {
			return []string{
				"--kubeconfig=" + kubeconfigPath,
				"--shard-external-url=https://127.0.0.1:6443",
				"--cache-kubeconfig=" + s.Kubeconfig(),
				"--authentication-kubeconfig=" + s.Kubeconfig(),
				"--client-ca-file=" + filepath.Join(s.RootDir(), rootdir.ClientCACertFile),
				"--tls-private-key-file=" + servingKey,
				"--tls-cert-file=" + servingCert,
				"--secure-port=" + strconv.Itoa(port),
				"--audit-log-maxsize=1024",
				"--audit-log-mode=batch",
				"--audit-log-batch-max-wait=1s",
				"--audit-log-batch-max-size=1000",
				"--audit-log-batch-buffer-size=10000",
				"--audit-log-batch-throttle-burst=15",
				"--audit-log-batch-throttle-enable=true",
				"--audit-log-batch-throttle-qps=10",
				"--audit-policy-file=" + policy,
				"--authentication-skip-lookup",
				"--requestheader-username-headers=X-Remote-User",
				"--requestheader-group-headers=X-Remote-Group",
				"--requestheader-client-ca-file=" + requestHeaderCA,
				"--v=4",
				"--audit-log-path", audit,
			}
		},
		ReadyURL: fmt.Sprintf("https://127.0.0.1:%d/readyz", port),
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("tail of %s:\n%s", p.LogPath(), p.LogTail(60))
		}
		if err := p.Stop(); err != nil {
			t.Errorf("stop virtual-workspaces: %v", err)
		}
	})
	if err := p.Start(); err != nil {
		t.Fatalf("start virtual-workspaces with kcp's command line: %v", err)
	}
	data, err := os.ReadFile(p.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"--shard-external-url is accepted and ignored",
	} {
		if !strings.Contains(string(data), want) {
			t.Errorf("virtual-workspaces log does not say %q", want)
		}
	}
	// --authentication-kubeconfig: bearer tokens the shard knows are
	// reviewed there; the shard's system:masters token may read /metrics.
	metrics := func(ctx context.Context, token string) int {
		client, err := rest.HTTPClientFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: servingCert}})
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", port), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	ctx := testContext(t)
	if code := metrics(ctx, shardAdmin.BearerToken); code != http.StatusOK {
		t.Errorf("/metrics with the shard's system:masters token: %d, want 200", code)
	}
	if code := metrics(ctx, "not-a-token"); code != http.StatusUnauthorized {
		t.Errorf("/metrics with a token nobody knows: %d, want 401", code)
	}

	framework.Eventually(t, func(context.Context) error {
		for _, e := range readAuditEvents(t, audit) {
			if e.RequestURI == "/readyz" {
				return nil
			}
		}
		return fmt.Errorf("no audit event of /readyz in %s yet", audit)
	}, "the virtual-workspaces server never wrote the audit events of its policy")
}

// TestKCPBindFreePortServesOnThePortTheKubeconfigNames starts the shard as
// kcp's earlier harness did for concurrent servers
// (TestServerArgsForConcurrent): --experimental-bind-free-port with
// --secure-port=0; the admin kubeconfig names the port it serves on.
func TestKCPBindFreePortServesOnThePortTheKubeconfigNames(t *testing.T) {
	t.Parallel()
	s := framework.StartShard(t,
		framework.WithSubcommand("start"),
		framework.WithReadinessFromKubeconfig(),
		framework.WithCommandLine(func(s *framework.Shard) []string {
			etcdClient, etcdPeer := s.EtcdPorts()
			return []string{
				"--root-directory", s.RootDir(),
				"--embedded-etcd-client-port=" + strconv.Itoa(etcdClient),
				"--embedded-etcd-peer-port=" + strconv.Itoa(etcdPeer),
				"--experimental-bind-free-port=true",
				"--secure-port=0",
				"--bind-address=127.0.0.1",
			}
		}),
	)
	requireKCPReady(t, s)
	if _, err := kubeClient(t, s, "base", "root").CoreV1().Namespaces().Get(testContext(t), metav1.NamespaceDefault, metav1.GetOptions{}); err != nil {
		t.Errorf("root's default namespace at %s: %v", s.BaseURL(t), err)
	}
}
