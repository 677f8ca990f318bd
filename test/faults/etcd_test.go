//go:build faults

package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/test/framework"
)

// The heavy cases run with the faults build tag (make test-faults).
func init() { long = true }

// etcdBinary builds upstream etcd (./test/deploy/etcd, the module the
// project depends on) once.
var etcdBinary = sync.OnceValues(func() (string, error) {
	root, err := framework.RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "shardplane-faults-etcd-")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "etcd")
	cmd := exec.Command("go", "build", "-o", path, "./test/deploy/etcd")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./test/deploy/etcd: %w\n%s", err, out)
	}
	return path, nil
})

// etcdMember is one member of an etcd cluster run by the test.
type etcdMember struct {
	name, dir string
	client    string
	peer      string
	proc      *framework.Process
}

// startEtcd starts an etcd cluster of n members on loopback and stops it
// when the test ends.
func startEtcd(t *testing.T, n int) []*etcdMember {
	t.Helper()
	bin, err := etcdBinary()
	if err != nil {
		t.Fatal(err)
	}
	ports := framework.FreePorts(t, 2*n)
	var members []*etcdMember
	var initial []string
	for i := 0; i < n; i++ {
		m := &etcdMember{name: fmt.Sprintf("m%d", i), dir: t.TempDir(),
			client: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]), peer: fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1])}
		initial = append(initial, m.name+"="+m.peer)
		members = append(members, m)
	}
	for _, m := range members {
		args := []string{"--name=" + m.name, "--data-dir=" + filepath.Join(m.dir, "data"),
			"--listen-client-urls=" + m.client, "--advertise-client-urls=" + m.client,
			"--listen-peer-urls=" + m.peer, "--initial-advertise-peer-urls=" + m.peer,
			"--initial-cluster=" + strings.Join(initial, ","), "--initial-cluster-state=new", "--initial-cluster-token=shardplane-faults"}
		// No readiness of its own: a member serves once the others have
		// started too, which waitEtcdHealthy waits for.
		m.proc = &framework.Process{Name: "etcd", Binary: bin, Args: func() []string { return args }, WorkDir: m.dir}
		m.start(t)
	}
	t.Cleanup(func() {
		for _, m := range members {
			m.kill(t)
		}
	})
	waitEtcdHealthy(t, members)
	return members
}

func (m *etcdMember) start(t *testing.T) {
	t.Helper()
	if err := m.proc.Start(); err != nil {
		t.Fatal(err)
	}
}

// kill kills the member with SIGKILL, by its PID, and waits for it.
func (m *etcdMember) kill(t *testing.T) {
	t.Helper()
	if err := m.proc.Kill(); err != nil {
		t.Error(err)
	}
}

func endpoints(members []*etcdMember) []string {
	var out []string
	for _, m := range members {
		out = append(out, m.client)
	}
	return out
}

func waitEtcdHealthy(t *testing.T, members []*etcdMember) {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints(members), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	framework.Eventually(t, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := c.Get(ctx, "health")
		return err
	}, "etcd healthy")
}

// leader returns the member that leads the cluster.
func leader(t *testing.T, members []*etcdMember) *etcdMember {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints(members), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, m := range members {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		s, err := c.Status(ctx, m.client)
		cancel()
		if err == nil && s.Leader == s.Header.MemberId {
			return m
		}
	}
	t.Fatal("no etcd leader")
	return nil
}

// shardOnEtcd starts a shard that stores in the given etcd cluster.
func shardOnEtcd(t *testing.T, members []*etcdMember) *framework.Shard {
	return framework.StartShard(t, framework.WithArgs("--etcd-servers="+strings.Join(endpoints(members), ",")))
}

// TestExternalEtcdOutage: the shard's etcd disappears (SIGKILL) and comes
// back: meanwhile requests get a 5xx (never a 403/404), and the shard
// recovers by itself with every acknowledged write kept.
func TestExternalEtcdOutage(t *testing.T) {
	ctx := testContext(t)
	members := startEtcd(t, 1)
	shard := shardOnEtcd(t, members)
	cfg := shard.ClusterConfig(t, "base", "root")
	w, stop := startWriter(ctx, t, "etcd-outage", cfg)
	w.waitAcked(ctx, t, 20)

	members[0].kill(t)
	// As kube-apiserver: a request waits for etcd until the shard's
	// request timeout (60 s), then gets 504.
	outage := &requestLog{}
	client := kube(t, withTimeout(cfg, 90*time.Second))
	_, err := client.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
	outage.record(err)
	_, err = client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "during-outage"}}, metav1.CreateOptions{})
	outage.record(err)
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) || status.Status().Code < 500 {
		t.Errorf("create with etcd down: %v, want a 5xx", err)
	}
	members[0].start(t)
	waitEtcdHealthy(t, members)
	w.waitAcked(ctx, t, 20)
	stop()
	lost := checkAcked(ctx, t, w, cfg)
	for _, m := range outage.misjudged {
		t.Errorf("with etcd down: %s", m)
	}
	t.Logf("%s; %d lost; requests during the outage: %s", w.summary(), lost, outage.summary())
}

// TestEtcdLeaderLoss: a 3-member etcd cluster loses its leader (SIGKILL)
// under writes: no acknowledged write is lost, and every failed write
// was answered with something a client retries (429/503/504 with
// Retry-After, or no answer), never a bare 500.
func TestEtcdLeaderLoss(t *testing.T) {
	ctx := testContext(t)
	members := startEtcd(t, 3)
	shard := shardOnEtcd(t, members)
	cfg := shard.ClusterConfig(t, "base", "root")
	w, stop := startWriter(ctx, t, "leader-loss", cfg)
	w.waitAcked(ctx, t, 50)
	for round := 0; round < 2; round++ {
		l := leader(t, members)
		l.kill(t)
		w.waitAcked(ctx, t, 50)
		l.start(t)
		waitEtcdHealthy(t, members)
	}
	stop()
	lost := checkAcked(ctx, t, w, cfg)
	w.mu.Lock()
	bare500 := w.failures[500]
	w.mu.Unlock()
	if bare500 > 0 {
		t.Errorf("%d writes were answered 500 while etcd changed its leader; want 503/429 with Retry-After or a transparent retry", bare500)
	}
	t.Logf("%s; %d lost, 2 leader losses survived", w.summary(), lost)
}

func withTimeout(cfg *rest.Config, d time.Duration) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = d
	return cfg
}
