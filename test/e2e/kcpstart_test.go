package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardplane/shardplane/test/framework"
)

// TestKCPStartCommandLineRunsTheShard starts the binary as a harness written
// for `kcp start` would: the start subcommand, kcp's flag spellings, a kcp
// feature gate and the admin kubeconfig at --kubeconfig-path. The shard
// serves, writes the kubeconfig where it was asked to, and says which kcp
// settings it ignores.
func TestKCPStartCommandLineRunsTheShard(t *testing.T) {
	t.Parallel()
	kubeconfig := filepath.Join(t.TempDir(), "kcp-admin.kubeconfig")
	s := framework.StartShard(t,
		framework.WithSubcommand("start"),
		framework.WithKubeconfigPath(kubeconfig),
		framework.WithArgs(
			"--kubeconfig-path="+kubeconfig,
			"--batteries-included=+user",
			"--feature-gates=LogicalClusterMigration=true",
			"--external-hostname=localhost",
		),
	)
	ctx := testContext(t)

	// The contexts kcp's harnesses use: base (kcp-admin) and shard-base.
	root := kubeClient(t, s, "base", "root")
	if _, err := root.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{}); err != nil {
		t.Fatalf("get namespace default in root as kcp-admin: %v", err)
	}
	if _, err := kubeClient(t, s, "shard-base", "*").CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatalf("wildcard list as shard-admin: %v", err)
	}

	data, err := os.ReadFile(s.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	for _, want := range []string{
		"kcp feature gate LogicalClusterMigration=true is not implemented by this shard and is ignored",
		"battery user is not provided by this shard and is ignored",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("shard log does not warn %q", want)
		}
	}
}

// TestKCPStartRejectsUnknownFeatureGatesAndBatteries: a gate neither
// Kubernetes nor kcp knows, or an unknown battery, stops the command with a
// one-line error before anything starts.
func TestKCPStartRejectsUnknownFeatureGatesAndBatteries(t *testing.T) {
	t.Parallel()
	bin := framework.Binary(t)
	for _, tc := range []struct {
		flag string
		want []string
	}{
		{"--feature-gates=NoSuchGate=true", []string{"unrecognized feature gate", "NoSuchGate"}},
		{"--batteries-included=admin,jetpack", []string{"unknown battery", "jetpack"}},
		{"--batteries-included=-admin,+user", []string{"user", "requires battery", "admin"}},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := exec.CommandContext(ctx, bin, "start", "--root-directory="+t.TempDir(), tc.flag).CombinedOutput()
		cancel()
		if err == nil {
			t.Errorf("shard start %s succeeded, want an error", tc.flag)
			continue
		}
		for _, want := range tc.want {
			if !strings.Contains(string(out), want) {
				t.Errorf("shard start %s: output %q does not say %q", tc.flag, out, want)
			}
		}
	}
}
