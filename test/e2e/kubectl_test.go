package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/shardplane/shardplane/test/framework"
)

// requireKubectl skips the test when kubectl is not installed.
func requireKubectl(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl not found in PATH; install it, see README")
	}
}

// kubectl runs kubectl against the shard and returns its stdout, failing the
// test when it exits unsuccessfully.
func kubectl(ctx context.Context, t *testing.T, s *framework.Shard, stdin string, args ...string) string {
	t.Helper()
	out, _, err := s.Kubectl(ctx, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// serverFlag points kubectl at a logical cluster.
func serverFlag(t *testing.T, s *framework.Shard, cluster string) string {
	t.Helper()
	return "--server=" + s.ClusterURL(t, cluster, "")
}

func TestKubectlServerSideApplyThenGetShowsConfigMap(t *testing.T) {
	requireKubectl(t)
	s := sharedShard(t)
	ctx := testContext(t)
	cluster := s.NewLogicalCluster(t, "apply")
	c := kubeClient(t, s, "base", cluster)
	waitForNamespace(t, c, metav1.NamespaceDefault)

	const manifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: applied
  namespace: default
data:
  greeting: hello
`
	kubectl(ctx, t, s, manifest, serverFlag(t, s, cluster), "apply", "--server-side", "-f", "-")

	out := kubectl(ctx, t, s, "", serverFlag(t, s, cluster), "get", "configmap", "applied", "--namespace=default", "-o", "yaml")
	var cm corev1.ConfigMap
	if err := yaml.Unmarshal([]byte(out), &cm); err != nil {
		t.Fatalf("kubectl get -o yaml: %v\n%s", err, out)
	}
	if cm.Name != "applied" || cm.Data["greeting"] != "hello" {
		t.Errorf("kubectl get -o yaml: name %q data %v, want applied with greeting=hello", cm.Name, cm.Data)
	}
	requireCluster(t, &cm, cluster)

	stored, err := c.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "applied", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get applied configmap: %v", err)
	}
	if !slices.ContainsFunc(stored.ManagedFields, func(e metav1.ManagedFieldsEntry) bool {
		return e.Operation == metav1.ManagedFieldsOperationApply
	}) {
		t.Errorf("configmap has no Apply managed fields entry: %+v", stored.ManagedFields)
	}
}

func TestKubectlAPIResourcesListsCoreResources(t *testing.T) {
	requireKubectl(t)
	s := sharedShard(t)
	ctx := testContext(t)

	out := kubectl(ctx, t, s, "", serverFlag(t, s, s.NewLogicalCluster(t, "discovery")), "api-resources", "-o", "name")
	resources := map[string]bool{}
	for _, line := range strings.Fields(out) {
		resource, _, _ := strings.Cut(line, ".")
		resources[resource] = true
	}
	for _, want := range []string{"configmaps", "namespaces", "roles", "leases", "events"} {
		if !resources[want] {
			t.Errorf("kubectl api-resources lacks %q; got:\n%s", want, out)
		}
	}
}

func TestKubectlExplainPrintsFieldDocumentation(t *testing.T) {
	requireKubectl(t)
	s := sharedShard(t)
	ctx := testContext(t)

	out := kubectl(ctx, t, s, "", serverFlag(t, s, s.NewLogicalCluster(t, "explain")), "explain", "configmap.data")
	if !strings.Contains(out, "configuration data") {
		t.Errorf("kubectl explain configmap.data does not document the field:\n%s", out)
	}
}

func TestKubectlAuthCanIFollowsPerClusterRBAC(t *testing.T) {
	requireKubectl(t)
	s := sharedShard(t)
	ctx := testContext(t)
	a, b := s.NewLogicalCluster(t, "cani-a"), s.NewLogicalCluster(t, "cani-b")

	if out := kubectl(ctx, t, s, "", serverFlag(t, s, a), "auth", "can-i", "create", "configmaps"); strings.TrimSpace(out) != "yes" {
		t.Errorf("kubectl auth can-i create configmaps as kcp-admin in %s: %q, want yes", a, out)
	}

	// user-1 may enter b, but nothing there grants it secrets.
	grantWorkspaceAccess(ctx, t, kubeClient(t, s, "base", b), "team-1")
	// can-i exits 1 when the answer is no, so the output decides.
	out, _, err := s.Kubectl(ctx, "", serverFlag(t, s, b), "--token="+s.UserToken(t, "user-1"), "auth", "can-i", "list", "secrets")
	if strings.TrimSpace(out) != "no" {
		t.Errorf("kubectl auth can-i list secrets as user-1 in %s: %q (%v), want no", b, out, err)
	}
}

func TestKubectlAuthWhoAmIPrintsUser(t *testing.T) {
	requireKubectl(t)
	s := sharedShard(t)
	ctx := testContext(t)

	out := kubectl(ctx, t, s, "", serverFlag(t, s, s.NewLogicalCluster(t, "whoami")), "auth", "whoami", "-o", "json")
	var review authenticationv1.SelfSubjectReview
	if err := json.Unmarshal([]byte(out), &review); err != nil {
		t.Fatalf("kubectl auth whoami -o json: %v\n%s", err, out)
	}
	if got := review.Status.UserInfo.Username; got != "kcp-admin" {
		t.Errorf("kubectl auth whoami: user %q, want kcp-admin", got)
	}
	if groups := review.Status.UserInfo.Groups; !slices.Contains(groups, "system:kcp:admin") {
		t.Errorf("kubectl auth whoami: groups %v, want system:kcp:admin among them", groups)
	}
}

func TestKubectlVersionReportsServerVersion(t *testing.T) {
	requireKubectl(t)
	s := sharedShard(t)
	ctx := testContext(t)

	// The current context of admin.kubeconfig ("root") is used as is.
	out := kubectl(ctx, t, s, "", "version", "-o", "json")
	var version struct {
		ServerVersion *struct {
			GitVersion string `json:"gitVersion"`
		} `json:"serverVersion"`
	}
	if err := json.Unmarshal([]byte(out), &version); err != nil {
		t.Fatalf("kubectl version -o json: %v\n%s", err, out)
	}
	if version.ServerVersion == nil {
		t.Fatalf("kubectl version -o json has no serverVersion:\n%s", out)
	}
	if !strings.HasPrefix(version.ServerVersion.GitVersion, "v1.37") {
		t.Errorf("server gitVersion %q, want v1.37.*", version.ServerVersion.GitVersion)
	}
}
