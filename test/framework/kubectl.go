package framework

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// KubectlPath returns the kubectl on PATH.
func KubectlPath() (string, error) { return exec.LookPath("kubectl") }

// Kubectl runs kubectl with --kubeconfig set to the shard's admin.kubeconfig
// and a discovery cache private to this shard, and returns its stdout. The
// error includes stderr; stderr is also returned for warnings.
func (s *Shard) Kubectl(ctx context.Context, stdin string, args ...string) (stdout, stderr string, err error) {
	kubectl, err := KubectlPath()
	if err != nil {
		return "", "", err
	}
	args = append([]string{
		"--kubeconfig=" + s.Kubeconfig(),
		"--cache-dir=" + filepath.Join(s.WorkDir, "kubectl-cache"),
	}, args...)
	cmd := exec.CommandContext(ctx, kubectl, args...)
	cmd.Dir = s.WorkDir
	cmd.Env = environWithout("KUBECONFIG")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), errOut.String(), fmt.Errorf("kubectl %s: %w\nstderr: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), errOut.String(), nil
}

// environWithout returns the process environment without the named variable.
func environWithout(name string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, name+"=") {
			env = append(env, kv)
		}
	}
	return env
}
