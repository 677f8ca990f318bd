package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/features"
	"github.com/shardplane/shardplane/test/framework"
)

const (
	// clusterAnnotation records the logical cluster of an object on reads.
	clusterAnnotation = "kcp.io/cluster"
	// eventually bounds waits for things that settle asynchronously
	// (caches, bootstrap objects).
	eventually = 30 * time.Second
)

// shared is the one shard that the tests of this package use unless they
// need a process of their own.
var shared struct {
	once     sync.Once
	shard    *framework.Shard
	err      error
	reported atomic.Bool // err was printed in full by one test already
}

func TestMain(m *testing.M) {
	code := m.Run()
	if s := shared.shard; s != nil {
		if code != 0 {
			fmt.Fprintf(os.Stderr, "tail of shared shard log %s:\n%s\n", s.LogPath(), s.LogTail(200))
		}
		if err := s.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "stop shared shard: %v\n", err)
			code = 1
		}
	}
	framework.RemoveBinary()
	os.Exit(code)
}

// sharedShard returns the package's shared shard, starting it on first use
// with kcp's test token users. When the test fails it prints what the shard
// logged during the test.
func sharedShard(t *testing.T) *framework.Shard {
	t.Helper()
	shared.once.Do(func() {
		// kcp's e2e harness turns the alpha per-workspace authentication
		// on in its shared server; so does this one.
		shared.shard, shared.err = framework.Start(framework.WithTokenUsers(framework.KCPTestTokenUsers()...),
			framework.WithArgs(features.EnableFlag(features.WorkspaceAuthentication)))
	})
	if shared.err != nil {
		if shared.reported.Swap(true) {
			t.Fatal("shared shard did not start; see the first failing test")
		}
		t.Fatalf("shared shard: %v", shared.err)
	}
	s := shared.shard
	from := s.LogSize()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("shard log during %s:\n%s", t.Name(), s.LogTailSince(from, 200))
		}
	})
	return s
}

// kubeClient returns a typed client for a logical cluster as a user of a
// kubeconfig context.
func kubeClient(t *testing.T, s *framework.Shard, context, cluster string) kubernetes.Interface {
	t.Helper()
	return newKubeClient(t, s.ClusterConfig(t, context, cluster))
}

// tokenUserClient returns a typed client for a logical cluster as a token user.
func tokenUserClient(t *testing.T, s *framework.Shard, user, cluster string) kubernetes.Interface {
	t.Helper()
	return newKubeClient(t, s.TokenUserConfig(t, user, cluster))
}

func newKubeClient(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("client for %s: %v", cfg.Host, err)
	}
	return c
}

// testContext returns a context that ends with the test.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// createNamespace creates a namespace in the client's logical cluster.
func createNamespace(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %q: %v", name, err)
	}
}

// createConfigMap creates a configmap, retrying while admission does not yet
// see a namespace that was just created.
func createConfigMap(ctx context.Context, t *testing.T, c kubernetes.Interface, namespace, name string, data map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Data: data}
	var created *corev1.ConfigMap
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, eventually, true, func(ctx context.Context) (bool, error) {
		created, lastErr = c.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsNotFound(lastErr) {
			return false, nil
		}
		return lastErr == nil, lastErr
	})
	if err != nil {
		t.Fatalf("create configmap %s/%s: %v (last error: %v)", namespace, name, err, lastErr)
	}
	return created
}

// waitForNamespace waits until a namespace exists in the client's cluster.
func waitForNamespace(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	framework.EventuallyWithin(t, eventually, func(ctx context.Context) error {
		_, err := c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return err
	}, "namespace %q never appeared", name)
}

// requireCluster fails the test unless obj carries the cluster annotation
// with the given value.
func requireCluster(t *testing.T, obj metav1.Object, cluster string) {
	t.Helper()
	if got := obj.GetAnnotations()[clusterAnnotation]; got != cluster {
		t.Errorf("%s/%s: annotation %s = %q, want %q", obj.GetNamespace(), obj.GetName(), clusterAnnotation, got, cluster)
	}
}

// requireStatus fails the test unless err is an API error with the given
// HTTP status code.
func requireStatus(t *testing.T, err error, code int32, what string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded, want HTTP %d", what, code)
		return
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Errorf("%s: %v, want an API error with HTTP %d", what, err, code)
		return
	}
	if got := status.Status().Code; got != code {
		t.Errorf("%s: HTTP %d (%v), want %d", what, got, err, code)
	}
}
