package framework

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// ShardBinaryEnv names an environment variable that points at a prebuilt
// shard binary; when it is set the framework uses it instead of building.
const ShardBinaryEnv = "KPLANE_E2E_SHARD_BINARY"

// shardBinary is the shard binary built once per test process.
var shardBinary struct {
	once sync.Once
	dir  string // temporary build directory, removed by RemoveBinary
	path string
	err  error
}

// Binary returns the path of the shard binary, building ./cmd/shard on first
// use. A failed build fails the test.
func Binary(t testing.TB) string {
	t.Helper()
	path, err := binary()
	if err != nil {
		t.Fatalf("shard binary: %v", err)
	}
	return path
}

// RemoveBinary deletes the directory the shard binary was built into. Call it
// from TestMain after m.Run.
func RemoveBinary() {
	if shardBinary.dir != "" {
		_ = os.RemoveAll(shardBinary.dir)
	}
}

func binary() (string, error) {
	shardBinary.once.Do(func() {
		if p := os.Getenv(ShardBinaryEnv); p != "" {
			shardBinary.path, shardBinary.err = filepath.Abs(p)
			return
		}
		shardBinary.path, shardBinary.err = buildShard()
	})
	return shardBinary.path, shardBinary.err
}

func buildShard() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "kplane-e2e-bin-")
	if err != nil {
		return "", fmt.Errorf("create build directory: %w", err)
	}
	shardBinary.dir = dir
	path := filepath.Join(dir, "shard")
	cmd := exec.Command("go", "build", "-o", path, "./cmd/shard")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build -o %s ./cmd/shard in %s: %w\n%s", path, root, err, out)
	}
	return path, nil
}

// RepoRoot returns the directory of the go.mod that encloses this package.
func RepoRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("locate repository root: runtime.Caller failed")
	}
	for dir := filepath.Dir(file); ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("locate repository root: no go.mod above %s", file)
		}
		dir = parent
	}
}
