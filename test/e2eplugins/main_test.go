// Package e2eplugins drives the kubectl plugins `kubectl ws` and
// `kubectl create workspace` through a real kubectl against one real shard,
// started once for the package, and checks what they print and the
// kubeconfig they write.
package e2eplugins

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/shardplane/shardplane/test/framework"
)

// plugins are the binaries under test, by kubectl plugin name.
var plugins = []string{"kubectl-ws", "kubectl-create-workspace"}

// env is what every test of the package shares.
var env struct {
	shard   *framework.Shard
	kubectl string // empty when kubectl is not installed
	binDir  string // holds the plugins; put first on PATH
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	defer framework.RemoveBinary()
	kubectl, err := framework.KubectlPath()
	if err != nil {
		// Every test skips with this reason.
		return m.Run()
	}
	env.kubectl = kubectl

	if env.binDir, err = os.MkdirTemp("", "shardplane-e2e-plugins-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(env.binDir)
	for _, name := range plugins {
		bin, err := framework.BuildCommand(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		// kubectl finds plugins by file name on PATH.
		if err := os.Symlink(bin, filepath.Join(env.binDir, name)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}

	if env.shard, err = framework.Start(framework.WithTokenUsers(framework.KCPTestTokenUsers()...)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := 1
	if err := waitForRootBootstrap(env.shard.Kubeconfig()); err != nil {
		fmt.Fprintf(os.Stderr, "%v\ntail of shard log:\n%s\n", err, env.shard.LogTail(100))
	} else {
		code = m.Run()
		if code != 0 {
			fmt.Fprintf(os.Stderr, "tail of shard log %s:\n%s\n", env.shard.LogPath(), env.shard.LogTail(100))
		}
	}
	if err := env.shard.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "stop shard: %v\n", err)
		code = 1
	}
	return code
}

// waitForRootBootstrap waits until root has the workspace types the tests
// create and the binding that lets authenticated users into root.
func waitForRootBootstrap(kubeconfig string) error {
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return err
	}
	// The root context's server is <base>/clusters/root.
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, "root", &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	types := schema.GroupVersionResource{Group: "tenancy.kcp.io", Version: "v1alpha1", Resource: "workspacetypes"}
	err = framework.Poll(context.Background(), 2*time.Minute, func(ctx context.Context) error {
		for _, name := range []string{"organization", "team", "universal"} {
			if _, err := dyn.Resource(types).Get(ctx, name, metav1.GetOptions{}); err != nil {
				return fmt.Errorf("WorkspaceType root:%s: %w", name, err)
			}
		}
		_, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, "system:kcp:workspace:access:authenticated", metav1.GetOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("root bootstrap did not complete: %w", err)
	}
	return nil
}
