//go:build cluster

package deploy

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd"
	"github.com/shardplane/shardplane/test/framework"
)

// The node's addresses. Pods and Services live only on the bridge the test
// creates; nothing outside the machine is addressed.
const (
	nodeName      = "shardplane-node"
	bridgeName    = "spnode0"
	podSubnet     = "10.233.0.0/24"
	gatewayIP     = "10.233.0.1"
	serviceSubnet = "10.234.0.0/24"
	clusterDomain = "cluster.local"
	// Images the node imports; the chart's values name them with
	// pullPolicy Never.
	projectImage = "shardplane.local/shardplane:test"
	etcdImage    = "shardplane.local/etcd:test"
	pauseImage   = "shardplane.local/pause:test"
	// localPathClass is the default StorageClass: hostPath volumes the
	// test creates under the node's directory.
	localPathClass = "local-path"
	adminToken     = "shardplane-node-admin-token"
)

// node is a single-node Kubernetes run by the test: etcd (in process),
// kube-apiserver, kube-controller-manager, kube-scheduler, containerd,
// kube-proxy and kubelet as processes, the cluster DNS in process, a CNI
// bridge and a local-path StorageClass.
type node struct {
	dir  string // short: containerd's socket path must fit sun_path
	bins string

	kubeconfig string
	config     *rest.Config
	kube       kubernetes.Interface
	ctrSocket  string

	// undo runs in reverse order at the end.
	undo []func()
	// netnsBefore are the network namespaces that existed before the node.
	netnsBefore map[string]bool
}

func (n *node) atEnd(f func()) { n.undo = append(n.undo, f) }

// startNode brings the node up and registers its removal with t.
func startNode(t *testing.T) *node {
	t.Helper()
	dir, err := os.MkdirTemp("", "spnode-")
	if err != nil {
		t.Fatal(err)
	}
	n := &node{dir: dir, bins: repoPath(t, ".cache/cluster-bin"), netnsBefore: listNetns()}
	t.Cleanup(func() { n.stop(t) })

	installNodePackages(t)
	n.buildBinaries(t)
	n.buildImages(t)
	n.network(t)
	n.controlPlane(t)
	n.containerd(t)
	n.importImages(t)
	startClusterDNS(t, n)
	// kube-proxy exits when its Node's addresses change: it starts once
	// the kubelet has registered the Node with its address.
	n.kubelet(t)
	n.kubeProxy(t)
	n.storage(t)
	return n
}

// nodePackages are the distribution's packages the node runs: the
// container runtime, runc and the CNI plugins.
var nodePackages = map[string]string{
	"containerd":                  "/usr/bin/containerd",
	"runc":                        "/usr/sbin/runc",
	"containernetworking-plugins": "/usr/lib/cni/bridge",
	"iptables":                    "/usr/sbin/iptables",
	"conntrack":                   "/usr/sbin/conntrack",
}

// installNodePackages installs with apt-get what is not there yet.
func installNodePackages(t *testing.T) {
	t.Helper()
	var missing []string
	for pkg, file := range nodePackages {
		if _, err := os.Stat(file); err == nil {
			continue
		}
		// Commands may sit elsewhere on PATH; the CNI plugins are no
		// commands (a "bridge" on PATH is iproute2's).
		if strings.HasPrefix(file, "/usr/lib/cni/") {
			missing = append(missing, pkg)
		} else if _, err := exec.LookPath(filepath.Base(file)); err != nil {
			missing = append(missing, pkg)
		}
	}
	if len(missing) == 0 {
		return
	}
	sort.Strings(missing)
	t.Logf("apt-get install %s", strings.Join(missing, " "))
	run(t, "", "apt-get", "update", "-qq")
	cmd := exec.Command("apt-get", append([]string{"install", "-y", "-qq", "--no-install-recommends"}, missing...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("apt-get install %v: %v\n%s", missing, err, out)
	}
}

// run runs a command and fails t with its output when it fails.
func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// buildBinaries builds the Kubernetes binaries once into .cache (reused by
// later runs) and the project's static binaries for the images.
func (n *node) buildBinaries(t *testing.T) {
	t.Helper()
	run(t, repoPath(t, "."), "bash", "hack/cluster/build-kube.sh", n.bins)
	out := filepath.Join(n.dir, "image")
	cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", out+"/",
		"./cmd/shard", "./cmd/cache-server", "./cmd/front-proxy", "./cmd/virtual-workspaces",
		"./test/deploy/etcd", "./hack/cluster/pause", "./hack/cluster/ociimage")
	cmd.Dir = repoPath(t, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build the image's binaries: %v\n%s", err, b)
	}
}

// buildImages writes the three OCI archives: the project's image (every
// binary in /usr/local/bin, as the Dockerfile's), etcd's and pause.
func (n *node) buildImages(t *testing.T) {
	t.Helper()
	bin := filepath.Join(n.dir, "image")
	tool := filepath.Join(bin, "ociimage")
	project := []string{"--name", projectImage, "--output", filepath.Join(n.dir, "shardplane.tar"), "--entrypoint", "/usr/local/bin/shard", "--workdir", "/var/lib/shardplane"}
	for _, b := range []string{"shard", "cache-server", "front-proxy", "virtual-workspaces"} {
		project = append(project, "--file", filepath.Join(bin, b)+"=/usr/local/bin/"+b)
	}
	run(t, "", tool, project...)
	run(t, "", tool, "--name", etcdImage, "--output", filepath.Join(n.dir, "etcd.tar"), "--entrypoint", "/usr/local/bin/etcd", "--file", filepath.Join(bin, "etcd")+"=/usr/local/bin/etcd")
	run(t, "", tool, "--name", pauseImage, "--output", filepath.Join(n.dir, "pause.tar"), "--entrypoint", "/pause", "--file", filepath.Join(bin, "pause")+"=/pause")
}

// sysctls the node needs: routing between the bridge and the host, and
// bridged traffic through iptables so kube-proxy's rules see pod to
// Service traffic on the same bridge.
var nodeSysctls = map[string]string{
	"/proc/sys/net/ipv4/ip_forward":                 "1",
	"/proc/sys/net/bridge/bridge-nf-call-iptables":  "1",
	"/proc/sys/net/bridge/bridge-nf-call-ip6tables": "1",
}

// network creates the bridge with the gateway address (kube-apiserver, the
// kubelet and the DNS server listen there) and the CNI configuration.
func (n *node) network(t *testing.T) {
	t.Helper()
	_ = exec.Command("modprobe", "br_netfilter").Run()
	for file, value := range nodeSysctls {
		old, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("sysctl %s: %v", file, err)
		}
		if err := os.WriteFile(file, []byte(value), 0o644); err != nil {
			t.Fatalf("sysctl %s=%s: %v", file, value, err)
		}
		n.atEnd(func() { _ = os.WriteFile(file, old, 0o644) })
	}
	run(t, "", "ip", "link", "add", bridgeName, "type", "bridge")
	n.atEnd(func() { _ = exec.Command("ip", "link", "del", bridgeName).Run() })
	run(t, "", "ip", "addr", "add", gatewayIP+"/24", "dev", bridgeName)
	run(t, "", "ip", "link", "set", bridgeName, "up")
	// The host reaches ClusterIPs over the bridge (kube-proxy rewrites
	// them to pod addresses there); the route goes with the bridge.
	run(t, "", "ip", "route", "add", serviceSubnet, "dev", bridgeName, "src", gatewayIP)

	confDir := filepath.Join(n.dir, "cni", "net.d")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		t.Fatal(err)
	}
	conflist := fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "shardplane-node",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q, "gateway": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %q
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, bridgeName, podSubnet, gatewayIP, filepath.Join(n.dir, "cni", "ipam"))
	if err := os.WriteFile(filepath.Join(confDir, "10-shardplane-node.conflist"), []byte(conflist), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pki writes the control plane's CA, kube-apiserver's serving certificate
// and the service-account key pair.
func (n *node) pki(t *testing.T) (caFile, certFile, keyFile, saKey, saPub string) {
	t.Helper()
	dir := filepath.Join(n.dir, "pki")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "shardplane-node-ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + clusterDomain, "localhost"},
		IPAddresses: []net.IP{net.ParseIP(gatewayIP), net.ParseIP("127.0.0.1"), net.ParseIP("10.234.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, _ := keyutil.MarshalPrivateKeyToPEM(key)
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	saPEM, _ := keyutil.MarshalPrivateKeyToPEM(sa)
	saPubDER, _ := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	files := map[string][]byte{
		"ca.crt":        pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: caDER}),
		"apiserver.crt": pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: der}),
		"apiserver.key": keyPEM,
		"sa.key":        saPEM,
		"sa.pub":        pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPubDER}),
		"tokens.csv":    []byte(adminToken + ",shardplane-node-admin,shardplane-node-admin,system:masters\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "ca.crt"), filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key"), filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
}

// process starts a node process and stops it by PID at the end.
func (n *node) process(t *testing.T, name, binary, readyURL string, args ...string) *framework.Process {
	t.Helper()
	work := filepath.Join(n.dir, name)
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &framework.Process{Name: name, Binary: binary, Args: func() []string { return args }, WorkDir: work, ReadyURL: readyURL, ReadyTimeout: 5 * time.Minute, StopTimeout: 30 * time.Second}
	n.atEnd(func() {
		if err := p.Stop(); err != nil {
			t.Logf("stop %s: %v\n%s", name, err, p.LogTail(20))
		}
	})
	if err := p.Start(); err != nil {
		t.Fatalf("%s did not become ready: %v\n%s", name, err, p.LogTail(60))
	}
	return p
}

// controlPlane starts etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler, and writes the admin kubeconfig every component uses.
func (n *node) controlPlane(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	etcd, err := embeddedetcd.Start(ctx, embeddedetcd.Options{Directory: filepath.Join(n.dir, "etcd"), ClientPort: framework.FreePort(t), PeerPort: framework.FreePort(t)})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	n.atEnd(etcd.Close)
	caFile, certFile, keyFile, saKey, saPub := n.pki(t)
	port := framework.FreePort(t)
	server := fmt.Sprintf("https://%s:%d", gatewayIP, port)
	n.process(t, "kube-apiserver", filepath.Join(n.bins, "kube-apiserver"), server+"/readyz",
		"--etcd-servers="+etcd.ClientURL,
		"--bind-address="+gatewayIP, "--advertise-address="+gatewayIP, fmt.Sprintf("--secure-port=%d", port),
		"--tls-cert-file="+certFile, "--tls-private-key-file="+keyFile, "--client-ca-file="+caFile,
		"--token-auth-file="+filepath.Join(n.dir, "pki", "tokens.csv"),
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range="+serviceSubnet,
		"--service-account-issuer=https://kubernetes.default.svc."+clusterDomain,
		"--service-account-key-file="+saPub, "--service-account-signing-key-file="+saKey,
		"--allow-privileged=true",
		"--kubelet-preferred-address-types=InternalIP",
		"--v=1")

	n.kubeconfig = filepath.Join(n.dir, "admin.kubeconfig")
	caPEM, _ := os.ReadFile(caFile)
	kc := clientcmdapi.NewConfig()
	kc.Clusters["node"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: adminToken}
	kc.Contexts["node"] = &clientcmdapi.Context{Cluster: "node", AuthInfo: "admin"}
	kc.CurrentContext = "node"
	if err := clientcmd.WriteToFile(*kc, n.kubeconfig); err != nil {
		t.Fatal(err)
	}
	if n.config, err = clientcmd.BuildConfigFromFlags("", n.kubeconfig); err != nil {
		t.Fatal(err)
	}
	n.config.QPS, n.config.Burst = 50, 100
	n.kube = kubernetes.NewForConfigOrDie(n.config)

	kcmPort := framework.FreePort(t)
	n.process(t, "kube-controller-manager", filepath.Join(n.bins, "kube-controller-manager"), fmt.Sprintf("https://127.0.0.1:%d/healthz", kcmPort),
		"--kubeconfig="+n.kubeconfig, "--authentication-kubeconfig="+n.kubeconfig, "--authorization-kubeconfig="+n.kubeconfig,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", kcmPort),
		"--service-account-private-key-file="+saKey, "--root-ca-file="+caFile,
		"--use-service-account-credentials=true", "--leader-elect=false",
		"--service-cluster-ip-range="+serviceSubnet, "--v=1")
	schedPort := framework.FreePort(t)
	n.process(t, "kube-scheduler", filepath.Join(n.bins, "kube-scheduler"), fmt.Sprintf("https://127.0.0.1:%d/healthz", schedPort),
		"--kubeconfig="+n.kubeconfig, "--authentication-kubeconfig="+n.kubeconfig, "--authorization-kubeconfig="+n.kubeconfig,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", schedPort), "--leader-elect=false", "--v=1")
}

// containerd runs containerd with a configuration of its own: its root,
// state and socket under the node's directory, the CRI plugin with the
// imported pause image, the distribution's CNI plugins and the node's
// conflist. restrict_oom_score_adj: this machine refuses a negative
// oom_score_adj even to root, and every sandbox would fail without it.
func (n *node) containerd(t *testing.T) {
	t.Helper()
	base := filepath.Join(n.dir, "containerd")
	n.ctrSocket = filepath.Join(base, "containerd.sock")
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[ttrpc]
  address = %q
[debug]
  address = ""
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %q
`, filepath.Join(base, "root"), filepath.Join(base, "state"), n.ctrSocket, n.ctrSocket+".ttrpc", pauseImage, filepath.Join(n.dir, "cni", "net.d"))
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	configFile := filepath.Join(base, "config.toml")
	if err := os.WriteFile(configFile, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &framework.Process{Name: "containerd", Binary: "containerd", Args: func() []string { return []string{"--config", configFile} }, WorkDir: base,
		ReadyFiles: func() []string { return []string{n.ctrSocket} }, StopTimeout: 30 * time.Second}
	n.atEnd(func() {
		n.removeContainers(t)
		if err := p.Stop(); err != nil {
			t.Logf("stop containerd: %v", err)
		}
	})
	if err := p.Start(); err != nil {
		t.Fatalf("containerd did not start: %v\n%s", err, p.LogTail(40))
	}
}

// ctr runs ctr against the node's containerd in the CRI's namespace.
func (n *node) ctr(args ...string) ([]byte, error) {
	return exec.Command("ctr", append([]string{"--address", n.ctrSocket, "--namespace", "k8s.io"}, args...)...).CombinedOutput()
}

func (n *node) importImages(t *testing.T) {
	t.Helper()
	for _, archive := range []string{"pause.tar", "etcd.tar", "shardplane.tar"} {
		if out, err := n.ctr("images", "import", filepath.Join(n.dir, archive)); err != nil {
			t.Fatalf("ctr images import %s: %v\n%s", archive, err, out)
		}
	}
	out, err := n.ctr("images", "ls", "-q")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{projectImage, etcdImage, pauseImage} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("image %s not imported; images:\n%s", want, out)
		}
	}
}

// removeContainers kills and removes what the kubelet left in containerd
// (normally nothing: the pods are deleted before), so no shim outlives it.
func (n *node) removeContainers(t *testing.T) {
	out, err := n.ctr("tasks", "ls", "-q")
	if err == nil {
		for _, id := range strings.Fields(string(out)) {
			_, _ = n.ctr("tasks", "kill", "-s", "SIGKILL", id)
		}
		for _, id := range strings.Fields(string(out)) {
			for i := 0; i < 20; i++ {
				if _, err := n.ctr("tasks", "rm", "-f", id); err == nil {
					break
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
	}
	if out, err := n.ctr("containers", "ls", "-q"); err == nil {
		for _, id := range strings.Fields(string(out)) {
			_, _ = n.ctr("containers", "rm", id)
		}
	}
}

// kubeProxy runs kube-proxy in iptables mode; its rules are removed with
// kube-proxy --cleanup at the end.
func (n *node) kubeProxy(t *testing.T) {
	t.Helper()
	healthz, metrics := framework.FreePort(t), framework.FreePort(t)
	binary := filepath.Join(n.bins, "kube-proxy")
	n.atEnd(func() {
		if out, err := exec.Command(binary, "--cleanup", "--proxy-mode=iptables").CombinedOutput(); err != nil {
			t.Logf("kube-proxy --cleanup: %v\n%s", err, out)
		}
	})
	n.process(t, "kube-proxy", binary, fmt.Sprintf("http://127.0.0.1:%d/livez", healthz),
		"--kubeconfig="+n.kubeconfig, "--proxy-mode=iptables", "--hostname-override="+nodeName,
		"--cluster-cidr="+podSubnet, "--conntrack-max-per-core=0",
		fmt.Sprintf("--healthz-bind-address=127.0.0.1:%d", healthz), fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metrics),
		"--iptables-localhost-nodeports=false", "--v=1")
}

// kubelet runs the kubelet on the node's containerd, with the cluster DNS
// on the gateway, and waits until the Node is Ready.
func (n *node) kubelet(t *testing.T) {
	t.Helper()
	root := filepath.Join(n.dir, "kubelet")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	port, healthz := framework.FreePort(t), framework.FreePort(t)
	config := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%s
clusterDNS: [%s]
clusterDomain: %s
resolvConf: ""
podLogsDir: %s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {"memory.available": "100Mi"}
serializeImagePulls: false
`, gatewayIP, port, healthz, n.ctrSocket, gatewayIP, clusterDomain, filepath.Join(n.dir, "pod-logs"))
	configFile := filepath.Join(root, "config.yaml")
	if err := os.WriteFile(configFile, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	n.atEnd(func() { unmountUnder(t, root) })
	n.atEnd(removeKubeletChains)
	n.process(t, "kubelet", filepath.Join(n.bins, "kubelet"), fmt.Sprintf("http://127.0.0.1:%d/healthz", healthz),
		"--config="+configFile, "--kubeconfig="+n.kubeconfig, "--root-dir="+root,
		"--hostname-override="+nodeName, "--node-ip="+gatewayIP, "--v=1")

	err := pollFor(5*time.Minute, func() (bool, string) {
		nd, err := n.kube.CoreV1().Nodes().Get(context.Background(), nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range nd.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, c.Reason + ": " + c.Message
			}
		}
		return false, "no Ready condition"
	})
	if err != nil {
		t.Fatalf("node %s not Ready: %v", nodeName, err)
	}
}

// storage creates the default StorageClass and hostPath volumes for it,
// world-writable because the chart's pods run as a non-root user and a
// hostPath volume gets no fsGroup.
func (n *node) storage(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	immediate := storagev1.VolumeBindingImmediate
	retain := corev1.PersistentVolumeReclaimRetain
	_, err := n.kube.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: localPathClass, Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner:       "kubernetes.io/no-provisioner",
		ReclaimPolicy:     &retain,
		VolumeBindingMode: &immediate,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		path := filepath.Join(n.dir, "volumes", fmt.Sprintf("pv-%d", i))
		if err := os.MkdirAll(path, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o777); err != nil {
			t.Fatal(err)
		}
		hostPathType := corev1.HostPathDirectory
		_, err := n.kube.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("local-path-%d", i)},
			Spec: corev1.PersistentVolumeSpec{
				StorageClassName:              localPathClass,
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("20Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: retain,
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &hostPathType}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// stop removes everything the node made, in reverse order: processes by
// PID, containers, kube-proxy's rules, network namespaces, the bridge,
// sysctls and mounts, then its directory.
func (n *node) stop(t *testing.T) {
	if n.kube != nil {
		n.drain(t)
	}
	for i := len(n.undo) - 1; i >= 0; i-- {
		n.undo[i]()
	}
	for name := range listNetns() {
		if !n.netnsBefore[name] && strings.HasPrefix(name, "cni-") {
			p := filepath.Join("/var/run/netns", name)
			_ = syscall.Unmount(p, syscall.MNT_DETACH)
			_ = os.Remove(p)
		}
	}
	unmountUnder(t, n.dir)
	removeKubeletCgroups(t)
	if err := os.RemoveAll(n.dir); err != nil {
		t.Logf("remove %s: %v", n.dir, err)
	}
}

// removeKubeletChains removes the iptables chains the kubelet makes
// (kube-proxy --cleanup leaves them): the jumps to them first.
func removeKubeletChains() {
	for _, cmd := range []string{"iptables", "ip6tables"} {
		for _, jump := range [][]string{{"filter", "INPUT"}, {"filter", "OUTPUT"}} {
			_ = exec.Command(cmd, "-t", jump[0], "-D", jump[1], "-j", "KUBE-FIREWALL").Run()
		}
		for _, chain := range [][]string{{"filter", "KUBE-FIREWALL"}, {"filter", "KUBE-KUBELET-CANARY"}, {"nat", "KUBE-KUBELET-CANARY"},
			{"mangle", "KUBE-KUBELET-CANARY"}, {"mangle", "KUBE-IPTABLES-HINT"}} {
			_ = exec.Command(cmd, "-t", chain[0], "-F", chain[1]).Run()
			_ = exec.Command(cmd, "-t", chain[0], "-X", chain[1]).Run()
		}
	}
}

// drain deletes every pod left on the node and waits until the kubelet
// has stopped their containers, so that their networks are torn down by
// the CNI plugins.
func (n *node) drain(t *testing.T) {
	ctx := context.Background()
	namespaces, err := n.kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("drain: %v", err)
		return
	}
	zero := int64(0)
	for _, ns := range namespaces.Items {
		_ = n.kube.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	}
	err = pollFor(2*time.Minute, func() (bool, string) {
		out, err := n.ctr("tasks", "ls", "-q")
		if err != nil {
			return false, err.Error()
		}
		return strings.TrimSpace(string(out)) == "", string(out)
	})
	if err != nil {
		t.Logf("drain: containers still running: %v", err)
	}
}

// removeKubeletCgroups removes the kubepods cgroups the kubelet made in
// every controller, deepest first; it leaves them behind when it stops.
func removeKubeletCgroups(t *testing.T) {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil {
				t.Logf("remove cgroup %s: %v", d, err)
			}
		}
	}
}

func listNetns() map[string]bool {
	out := map[string]bool{}
	entries, _ := os.ReadDir("/var/run/netns")
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out
}

// unmountUnder detaches every mount below dir, deepest first.
func unmountUnder(t *testing.T, dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			points = append(points, fields[4])
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
			t.Logf("unmount %s: %v", p, err)
		}
	}
}

// pollFor polls cond every half second until it holds or timeout passes;
// the error carries cond's last word.
func pollFor(timeout time.Duration, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, why := cond()
		if ok {
			return nil
		}
		last = why
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %s", timeout, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
