//go:build cluster

package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// previousChartCommit holds the chart as it was when the real-node test
// was written (issue 45): the upgrade starts from it.
const previousChartCommit = "156a82b532c44c9965088d0f36a15fc3756fda42"

const fullname = releaseName + "-shardplane"

// TestChartOnARealNode installs the two-shard chart on a real single-node
// Kubernetes (kubelet, containerd, runc, kube-proxy, a CNI bridge) the test
// starts, uses it through the front-proxy's Service with kubectl, upgrades
// it from the previous chart while clients write, deletes a shard pod and
// uninstalls it. Run by `make test-cluster`.
func TestChartOnARealNode(t *testing.T) {
	begin := time.Now()
	n := startNode(t)
	figure(t, "time to a running cluster", time.Since(begin))

	installCRDs(t, n.config)
	ctx := context.Background()
	if _, err := n.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	values := []string{"-f", repoPath(t, "test/deploy/testdata/values-two-shards.yaml"), "-f", repoPath(t, "test/deploy/testdata/cluster/values.yaml")}
	secrets := createReleaseSecrets(t, n, values)

	previous := previousChart(t)
	installStart := time.Now()
	helmOnNode(t, n, append([]string{"install", releaseName, previous, "--namespace", namespace, "--wait", "--timeout", "20m"}, values...)...)
	waitPodsReady(t, n, 10*time.Minute)
	figure(t, "time to Ready chart (helm install)", time.Since(installStart))

	fp := newFrontProxyClient(t, n, secrets)
	root := fp.workspace(t, "writes-root", "root")
	beta := fp.workspace(t, "writes-beta", "beta")

	// Upgrade to the current chart while a client writes into a
	// workspace on each shard.
	writers := []*writer{newWriter(fp, root), newWriter(fp, beta)}
	for _, w := range writers {
		go w.run()
	}
	time.Sleep(5 * time.Second)
	upgradeStart := time.Now()
	helmOnNode(t, n, append([]string{"upgrade", releaseName, chartDir(t), "--namespace", namespace, "--wait", "--timeout", "20m"}, values...)...)
	waitPodsReady(t, n, 10*time.Minute)
	figure(t, "helm upgrade duration", time.Since(upgradeStart))
	time.Sleep(10 * time.Second)
	for _, w := range writers {
		w.stop()
	}
	for _, w := range writers {
		acked, lost, failed, window := w.verify(t)
		t.Logf("FIGURE upgrade writes into %s (shard %s): %d acknowledged, %d lost, %d failed, unavailability window %s", w.ws.name, w.ws.shard, acked, lost, failed, window.Round(time.Millisecond))
		if lost > 0 {
			t.Errorf("%d acknowledged writes into %s lost across the upgrade", lost, w.ws.name)
		}
		if acked == 0 {
			t.Errorf("no write into %s was acknowledged", w.ws.name)
		}
	}

	checkReleaseObjects(t, n)
	useThroughFrontProxy(t, n, fp)
	deleteShardPod(t, n, fp, beta, root)

	helmOnNode(t, n, "uninstall", releaseName, "--namespace", namespace, "--wait", "--timeout", "10m")
	err := pollFor(5*time.Minute, func() (bool, string) {
		pods, err := n.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, p := range pods.Items {
			names = append(names, p.Name+"="+string(p.Status.Phase))
		}
		return len(names) == 0, strings.Join(names, ", ")
	})
	if err != nil {
		t.Fatalf("pods still running after helm uninstall: %v", err)
	}
	figure(t, "whole test", time.Since(begin))
}

func figure(t *testing.T, what string, d time.Duration) {
	t.Logf("FIGURE %s: %s", what, d.Round(time.Second))
}

// previousChart writes the chart of previousChartCommit into a directory.
func previousChart(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	archive := exec.Command("git", "archive", previousChartCommit, "deploy/charts/shardplane")
	archive.Dir = repoPath(t, ".")
	out, err := archive.Output()
	if err != nil {
		t.Fatalf("git archive %s: %v", previousChartCommit, err)
	}
	untar := exec.Command("tar", "-x", "-C", dir)
	untar.Stdin = bytes.NewReader(out)
	if b, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("untar the previous chart: %v\n%s", err, b)
	}
	return filepath.Join(dir, "deploy/charts/shardplane")
}

// helmOnNode runs helm against the node's kube-apiserver.
func helmOnNode(t *testing.T, n *node, args ...string) string {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home, "KUBECONFIG="+n.kubeconfig)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helm %s: %v\n%s\n%s", strings.Join(args, " "), err, out, describePods(n))
	}
	return string(out)
}

// describePods summarizes the release's pods for a failure message.
func describePods(n *node) string {
	pods, err := n.kube.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "%s %s", p.Name, p.Status.Phase)
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				fmt.Fprintf(&b, " %s=%s(%s)", c.Type, c.Status, c.Message)
			}
		}
		for _, cs := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, " restarts=%d", cs.RestartCount)
			if cs.State.Waiting != nil {
				fmt.Fprintf(&b, " waiting=%s:%s", cs.State.Waiting.Reason, cs.State.Waiting.Message)
			}
			if cs.LastTerminationState.Terminated != nil {
				fmt.Fprintf(&b, " last=%s:%d", cs.LastTerminationState.Terminated.Reason, cs.LastTerminationState.Terminated.ExitCode)
			}
		}
		b.WriteString("\n")
	}
	events, err := n.kube.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{})
	if err == nil {
		sort.Slice(events.Items, func(i, j int) bool { return events.Items[i].LastTimestamp.Before(&events.Items[j].LastTimestamp) })
		start := max(0, len(events.Items)-25)
		for _, e := range events.Items[start:] {
			if e.Type != corev1.EventTypeNormal {
				fmt.Fprintf(&b, "event %s %s: %s\n", e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
	}
	return b.String()
}

// waitPodsReady waits until every pod of the release is Ready.
func waitPodsReady(t *testing.T, n *node, timeout time.Duration) {
	t.Helper()
	err := pollFor(timeout, func() (bool, string) {
		pods, err := n.kube.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var notReady []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || !podReady(&p) {
				notReady = append(notReady, p.Name)
			}
		}
		return len(pods.Items) > 0 && len(notReady) == 0, "not ready: " + strings.Join(notReady, ", ")
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, describePods(n))
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// createReleaseSecrets creates the Secrets the chart would get from
// cert-manager (issued as test/deploy's certManager issues them) and the
// static token file, and returns them by name.
func createReleaseSecrets(t *testing.T, n *node, values []string) map[string]map[string][]byte {
	t.Helper()
	out, err := runHelm(t, append(append([]string{"template", releaseName, chartDir(t), "--namespace", namespace}, values...), "--set", "pki.certManager.enabled=true")...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeObjects(out)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := issueCertificates(objs)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range secrets {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: corev1.SecretTypeTLS, Data: data}
		if _, err := n.kube.CoreV1().Secrets(namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create Secret %s: %v", name, err)
		}
	}
	tokens := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: releaseName + "-tokens"}, Data: map[string][]byte{"tokens.csv": []byte("alice-token-for-the-node,alice,alice,\"team-a\"\n")}}
	if _, err := n.kube.CoreV1().Secrets(namespace).Create(context.Background(), tokens, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return secrets
}

// frontProxy reaches the front-proxy through its Service's ClusterIP
// (kube-proxy's rules on this machine), as the release's admin.
type frontProxy struct {
	base       string // https://<ClusterIP>:443
	kubeconfig string // kubectl's, server at base
	config     *rest.Config
	http       *http.Client
	external   string // the external URL status fields start with
	serverName string // the name the serving certificate carries
}

func newFrontProxyClient(t *testing.T, n *node, secrets map[string]map[string][]byte) *frontProxy {
	t.Helper()
	svc, err := n.kube.CoreV1().Services(namespace).Get(context.Background(), fullname+"-front-proxy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fp := &frontProxy{base: fmt.Sprintf("https://%s:%d", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port), external: "https://shardplane.test"}
	serverName := fullname + "-front-proxy." + namespace + ".svc"
	fp.serverName = serverName
	ca := secrets[fullname+"-front-proxy-tls"]["ca.crt"]
	admin := secrets[fullname+"-admin-client-tls"]
	fp.config = &rest.Config{Host: fp.base, TLSClientConfig: rest.TLSClientConfig{CAData: ca, CertData: admin["tls.crt"], KeyData: admin["tls.key"], ServerName: serverName}, QPS: 50, Burst: 100, Timeout: 10 * time.Second}
	transport, err := rest.TransportFor(fp.config)
	if err != nil {
		t.Fatal(err)
	}
	fp.http = &http.Client{Transport: transport, Timeout: 10 * time.Second}

	kc := clientcmdapi.NewConfig()
	kc.Clusters["front-proxy"] = &clientcmdapi.Cluster{Server: fp.base + "/clusters/root", CertificateAuthorityData: ca, TLSServerName: serverName}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: admin["tls.crt"], ClientKeyData: admin["tls.key"]}
	kc.Contexts["front-proxy"] = &clientcmdapi.Context{Cluster: "front-proxy", AuthInfo: "admin"}
	kc.CurrentContext = "front-proxy"
	fp.kubeconfig = filepath.Join(t.TempDir(), "front-proxy.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, fp.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return fp
}

// kubectl runs kubectl through the front-proxy in a workspace path.
func (fp *frontProxy) kubectl(t *testing.T, path, stdin string, args ...string) (string, error) {
	t.Helper()
	// kubectl forgets the kubeconfig's tls-server-name once --server is given.
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", fp.kubeconfig, "--server", fp.base + "/clusters/" + path, "--tls-server-name", fp.serverName}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s in %s: %w\n%s", strings.Join(args, " "), path, err, out)
	}
	return string(out), nil
}

func (fp *frontProxy) mustKubectl(t *testing.T, path, stdin string, args ...string) string {
	t.Helper()
	out, err := fp.kubectl(t, path, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// eventuallyKubectl retries a kubectl command until it succeeds.
func (fp *frontProxy) eventuallyKubectl(t *testing.T, path, stdin string, args ...string) string {
	t.Helper()
	var out string
	err := pollFor(2*time.Minute, func() (bool, string) {
		o, err := fp.kubectl(t, path, stdin, args...)
		out = o
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type workspace struct {
	name, shard, path, cluster string
}

// workspace creates a workspace in root placed on a shard, with kubectl
// through the front-proxy, and waits until it is Ready.
func (fp *frontProxy) workspace(t *testing.T, name, shard string) *workspace {
	t.Helper()
	manifest := fmt.Sprintf(`apiVersion: tenancy.kcp.io/v1alpha1
kind: Workspace
metadata:
  name: %s
spec:
  location:
    selector:
      matchLabels:
        name: %s
`, name, shard)
	fp.eventuallyKubectl(t, "root", manifest, "create", "-f", "-")
	ws := &workspace{name: name, shard: shard, path: "root:" + name}
	err := pollFor(3*time.Minute, func() (bool, string) {
		out, err := fp.kubectl(t, "root", "", "get", "workspace", name, "-o", "jsonpath={.status.phase} {.spec.cluster}")
		if err != nil {
			return false, err.Error()
		}
		phase, cluster, _ := strings.Cut(strings.TrimSpace(out), " ")
		ws.cluster = cluster
		return phase == "Ready" && cluster != "", out
	})
	if err != nil {
		t.Fatalf("workspace %s not Ready: %v", name, err)
	}
	if out, err := fp.kubectl(t, ws.path, "", "create", "namespace", "default"); err != nil && !strings.Contains(out, "AlreadyExists") && !strings.Contains(out, "already exists") {
		t.Fatal(err)
	}
	return ws
}

// writer creates ConfigMaps in a workspace through the front-proxy, one
// after another, and remembers which were acknowledged.
type writer struct {
	fp      *frontProxy
	ws      *workspace
	kube    kubernetes.Interface
	done    chan struct{}
	stopped chan struct{}

	mu      sync.Mutex
	acked   []string
	failed  int
	lastOK  time.Time
	longest time.Duration
}

func newWriter(fp *frontProxy, ws *workspace) *writer {
	cfg := rest.CopyConfig(fp.config)
	cfg.Host = fp.base + "/clusters/" + ws.path
	cfg.Timeout = 5 * time.Second
	return &writer{fp: fp, ws: ws, kube: kubernetes.NewForConfigOrDie(cfg), done: make(chan struct{}), stopped: make(chan struct{})}
}

func (w *writer) run() {
	defer close(w.stopped)
	w.lastOK = time.Now()
	for i := 0; ; i++ {
		select {
		case <-w.done:
			return
		default:
		}
		name := fmt.Sprintf("write-%06d", i)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": fmt.Sprint(i)}}
		_, err := w.kube.CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{})
		now := time.Now()
		w.mu.Lock()
		if err == nil {
			w.acked = append(w.acked, name)
			if gap := now.Sub(w.lastOK); gap > w.longest {
				w.longest = gap
			}
			w.lastOK = now
		} else {
			w.failed++
		}
		w.mu.Unlock()
		if err != nil {
			time.Sleep(100 * time.Millisecond)
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func (w *writer) stop() {
	close(w.done)
	<-w.stopped
}

// verify lists the workspace's ConfigMaps and counts acknowledged writes
// that are missing. window is the longest time between two acknowledged
// writes.
func (w *writer) verify(t *testing.T) (acked, lost, failed int, window time.Duration) {
	t.Helper()
	var list *corev1.ConfigMapList
	err := pollFor(time.Minute, func() (bool, string) {
		var err error
		list, err = w.kube.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	if err != nil {
		t.Fatalf("list the writes in %s: %v", w.ws.name, err)
	}
	have := map[string]bool{}
	for _, cm := range list.Items {
		have[cm.Name] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, name := range w.acked {
		if !have[name] {
			lost++
		}
	}
	return len(w.acked), lost, w.failed, w.longest
}

// checkReleaseObjects checks what the kubelet and the controllers made of
// the release: every container has its three probes and requests, every
// PodDisruptionBudget covers pods and allows what it says, every
// ServiceMonitor names a port of a Service it selects.
func checkReleaseObjects(t *testing.T, n *node) {
	t.Helper()
	ctx := context.Background()
	pods, err := n.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	components := map[string]int{}
	for _, p := range pods.Items {
		components[p.Labels["app.kubernetes.io/component"]+"/"+p.Labels["shardplane.io/instance"]]++
		for _, c := range p.Spec.Containers {
			if c.ReadinessProbe == nil || c.LivenessProbe == nil || c.StartupProbe == nil {
				t.Errorf("pod %s container %s: probes readiness=%v liveness=%v startup=%v", p.Name, c.Name, c.ReadinessProbe != nil, c.LivenessProbe != nil, c.StartupProbe != nil)
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("pod %s container %s: requests %v limits %v", p.Name, c.Name, c.Resources.Requests, c.Resources.Limits)
			}
		}
		if !podReady(&p) {
			t.Errorf("pod %s is not Ready: the kubelet's readiness probe does not pass", p.Name)
		}
	}
	t.Logf("pods by component/instance: %v", components)
	for _, want := range []struct {
		key string
		n   int
	}{{"shard/root", 1}, {"shard/beta", 1}, {"front-proxy/", 2}, {"cache-server/", 1}, {"etcd/root", 1}, {"etcd/beta", 1}, {"virtual-workspaces/root", 2}, {"virtual-workspaces/beta", 2}} {
		got := 0
		for k, v := range components {
			if strings.HasPrefix(k, want.key) {
				got += v
			}
		}
		if got != want.n {
			t.Errorf("%d pods of %s, want %d (all: %v)", got, want.key, want.n, components)
		}
	}

	pdbs, err := n.kube.PolicyV1().PodDisruptionBudgets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pdbs.Items) == 0 {
		t.Error("no PodDisruptionBudget in the release")
	}
	for _, pdb := range pdbs.Items {
		err := pollFor(time.Minute, func() (bool, string) {
			got, err := n.kube.PolicyV1().PodDisruptionBudgets(namespace).Get(ctx, pdb.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			s := got.Status
			return s.ObservedGeneration == got.Generation && s.ExpectedPods > 0 && s.CurrentHealthy >= s.DesiredHealthy,
				fmt.Sprintf("expected %d healthy %d desired %d allowed %d", s.ExpectedPods, s.CurrentHealthy, s.DesiredHealthy, s.DisruptionsAllowed)
		})
		if err != nil {
			t.Errorf("PodDisruptionBudget %s: %v", pdb.Name, err)
		}
	}

	dyn := dynamic.NewForConfigOrDie(n.config)
	monitors, err := dyn.Resource(schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(monitors.Items) == 0 {
		t.Error("no ServiceMonitor in the release")
	}
	services, err := n.kube.CoreV1().Services(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range monitors.Items {
		var spec struct {
			Selector  metav1.LabelSelector `json:"selector"`
			Endpoints []struct {
				Port string `json:"port"`
			} `json:"endpoints"`
		}
		raw, _ := json.Marshal(m.Object["spec"])
		if err := json.Unmarshal(raw, &spec); err != nil {
			t.Fatal(err)
		}
		sel, err := metav1.LabelSelectorAsSelector(&spec.Selector)
		if err != nil {
			t.Errorf("ServiceMonitor %s: %v", m.GetName(), err)
			continue
		}
		for _, e := range spec.Endpoints {
			found := false
			for _, svc := range services.Items {
				if !sel.Matches(labels.Set(svc.Labels)) {
					continue
				}
				for _, p := range svc.Spec.Ports {
					found = found || p.Name == e.Port
				}
			}
			if !found {
				t.Errorf("ServiceMonitor %s: no selected Service has port %q", m.GetName(), e.Port)
			}
		}
	}
}

// useThroughFrontProxy creates a provider workspace on root and a consumer
// on beta with kubectl through the front-proxy, exports an API from the
// one, binds it in the other, creates an object of it and reads it back
// through the APIExport's view on the consumer's shard.
func useThroughFrontProxy(t *testing.T, n *node, fp *frontProxy) {
	t.Helper()
	provider := fp.workspace(t, "provider", "root")
	consumer := fp.workspace(t, "consumer", "beta")
	checkWorkspaceOnShard(t, n, provider)
	checkWorkspaceOnShard(t, n, consumer)

	fp.eventuallyKubectl(t, provider.path, `apiVersion: apis.kcp.io/v1alpha1
kind: APIResourceSchema
metadata:
  name: today.cowboys.wildwest.dev
spec:
  group: wildwest.dev
  names: {plural: cowboys, singular: cowboy, kind: Cowboy, listKind: CowboyList}
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      type: object
      properties:
        spec:
          type: object
          properties:
            intent: {type: string}
---
apiVersion: apis.kcp.io/v1alpha2
kind: APIExport
metadata:
  name: today-cowboys
spec:
  resources:
  - {name: cowboys, group: wildwest.dev, schema: today.cowboys.wildwest.dev}
`, "create", "-f", "-")
	fp.eventuallyKubectl(t, consumer.path, fmt.Sprintf(`apiVersion: apis.kcp.io/v1alpha2
kind: APIBinding
metadata:
  name: cowboys
spec:
  reference:
    export:
      path: %s
      name: today-cowboys
`, provider.path), "create", "-f", "-")
	err := pollFor(2*time.Minute, func() (bool, string) {
		out, err := fp.kubectl(t, consumer.path, "", "get", "apibinding", "cowboys", "-o", "jsonpath={.status.phase}")
		if err != nil {
			return false, err.Error()
		}
		return strings.TrimSpace(out) == "Bound", out
	})
	if err != nil {
		t.Fatalf("APIBinding cowboys in %s not Bound: %v", consumer.path, err)
	}
	fp.eventuallyKubectl(t, consumer.path, `apiVersion: wildwest.dev/v1alpha1
kind: Cowboy
metadata:
  name: lucky-luke
  namespace: default
spec:
  intent: ride across shards
`, "create", "-f", "-")

	// The view of the export on the consumer's shard, at the shard's
	// virtualWorkspaceURL (the front-proxy's /shards/beta/).
	vwURL := strings.TrimSpace(fp.mustKubectl(t, "root", "", "get", "shards", "beta", "-o", "jsonpath={.spec.virtualWorkspaceURL}"))
	if !strings.HasPrefix(vwURL, fp.external) {
		t.Fatalf("shard beta's virtualWorkspaceURL %q is not below the external URL %s", vwURL, fp.external)
	}
	view := strings.TrimSuffix(strings.TrimPrefix(vwURL, fp.external), "/") + "/services/apiexport/" + provider.cluster + "/today-cowboys/clusters/*/apis/wildwest.dev/v1alpha1/cowboys"
	var body string
	err = pollFor(2*time.Minute, func() (bool, string) {
		resp, err := fp.http.Get(fp.base + view)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		body = b.String()
		return resp.StatusCode == http.StatusOK && strings.Contains(body, "lucky-luke"), fmt.Sprintf("%d %.300s", resp.StatusCode, body)
	})
	if err != nil {
		t.Fatalf("GET %s through the front-proxy: %v", view, err)
	}
	if !strings.Contains(body, consumer.cluster) {
		t.Errorf("the view's cowboy does not name the consumer's cluster %s: %.500s", consumer.cluster, body)
	}
}

// checkWorkspaceOnShard asks the shard's own Service (not the front-proxy)
// for the workspace's LogicalCluster, as system:masters.
func checkWorkspaceOnShard(t *testing.T, n *node, ws *workspace) {
	t.Helper()
	svc, err := n.kube.CoreV1().Services(namespace).Get(context.Background(), fullname+"-shard-"+ws.shard, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret, err := n.kube.CoreV1().Secrets(namespace).Get(context.Background(), fullname+"-shard-client-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	serving, err := n.kube.CoreV1().Secrets(namespace).Get(context.Background(), fullname+"-shard-"+ws.shard+"-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: fmt.Sprintf("https://%s:%d", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port), TLSClientConfig: rest.TLSClientConfig{
		CAData: serving.Data["ca.crt"], CertData: secret.Data["tls.crt"], KeyData: secret.Data["tls.key"], ServerName: fullname + "-shard-" + ws.shard + "." + namespace + ".svc"}}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
	url := cfg.Host + "/clusters/" + ws.cluster + "/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("workspace %s (cluster %s) is not on shard %s: GET %s answered %d", ws.name, ws.cluster, ws.shard, url, resp.StatusCode)
	}
}

// deleteShardPod deletes beta's shard pod while reading from root's
// workspace: root never notices, and beta's pod comes back with every
// write the upgrade's client made into it.
func deleteShardPod(t *testing.T, n *node, fp *frontProxy, onBeta, onRoot *workspace) {
	t.Helper()
	ctx := context.Background()
	pod := fullname + "-shard-beta-0"
	old, err := n.kube.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rootReader := newWriter(fp, onRoot).kube
	betaReader := newWriter(fp, onBeta).kube
	before, err := betaReader.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var reads, failures int
	var firstFailure error
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_, err := rootReader.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{Limit: 1})
			reads++
			if err != nil {
				failures++
				if firstFailure == nil {
					firstFailure = err
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	deleted := time.Now()
	if err := n.kube.CoreV1().Pods(namespace).Delete(ctx, pod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = pollFor(5*time.Minute, func() (bool, string) {
		p, err := n.kube.CoreV1().Pods(namespace).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.UID != old.UID && podReady(p), string(p.Status.Phase)
	})
	if err != nil {
		t.Fatalf("shard pod %s did not come back Ready: %v\n%s", pod, err, describePods(n))
	}
	t.Logf("FIGURE shard pod %s back Ready after %s", pod, time.Since(deleted).Round(time.Second))
	var after *corev1.ConfigMapList
	err = pollFor(2*time.Minute, func() (bool, string) {
		var err error
		after, err = betaReader.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	close(stop)
	<-readerDone
	if err != nil {
		t.Fatalf("beta's workspace does not answer after its shard pod came back: %v", err)
	}
	if len(after.Items) != len(before.Items) {
		t.Errorf("beta's workspace holds %d ConfigMaps after the pod came back, %d before", len(after.Items), len(before.Items))
	}
	t.Logf("root's workspace answered %d of %d reads while beta's shard pod was replaced", reads-failures, reads)
	if failures > 0 {
		t.Errorf("root's workspace failed %d of %d reads while beta's shard pod was replaced; first: %v", failures, reads, firstFailure)
	}
	if _, err := betaReader.CoreV1().ConfigMaps("default").Get(ctx, "write-000000", metav1.GetOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("read a write back from beta: %v", err)
	}
}
