package framework

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// ShardBinaryEnv names an environment variable that points at a prebuilt
// shard binary; when it is set the framework uses it instead of building.
// Other binaries use SHARDPLANE_E2E_<NAME>_BINARY (front-proxy:
// SHARDPLANE_E2E_FRONT_PROXY_BINARY).
const ShardBinaryEnv = "SHARDPLANE_E2E_SHARD_BINARY"

// built are the binaries built by this test process, by command name.
var built struct {
	mu      sync.Mutex
	dir     string // temporary build directory, removed by RemoveBinary
	results map[string]*buildResult
}

type buildResult struct {
	once sync.Once
	path string
	err  error
}

// Binary returns the path of the shard binary, building ./cmd/shard on first
// use. A failed build fails the test.
func Binary(t testing.TB) string {
	t.Helper()
	return CommandBinary(t, "shard")
}

// CommandBinary returns the path of the binary of ./cmd/<name>, building it
// once per test process. A failed build fails the test.
func CommandBinary(t testing.TB, name string) string {
	t.Helper()
	path, err := commandBinary(name)
	if err != nil {
		t.Fatalf("%s binary: %v", name, err)
	}
	return path
}

// RemoveBinary deletes the directory the binaries were built into. Call it
// from TestMain after m.Run.
func RemoveBinary() {
	built.mu.Lock()
	defer built.mu.Unlock()
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}

func binary() (string, error) { return commandBinary("shard") }

// binaryEnv is the environment variable with a prebuilt binary of name.
func binaryEnv(name string) string {
	return "SHARDPLANE_E2E_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_BINARY"
}

func commandBinary(name string) (string, error) {
	built.mu.Lock()
	if built.results == nil {
		built.results = map[string]*buildResult{}
	}
	r, ok := built.results[name]
	if !ok {
		r = &buildResult{}
		built.results[name] = r
	}
	built.mu.Unlock()
	r.once.Do(func() {
		if p := os.Getenv(binaryEnv(name)); p != "" {
			r.path, r.err = filepath.Abs(p)
			return
		}
		r.path, r.err = build(name)
	})
	return r.path, r.err
}

func build(name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	built.mu.Lock()
	if built.dir == "" {
		if built.dir, err = os.MkdirTemp("", "shardplane-e2e-bin-"); err != nil {
			built.mu.Unlock()
			return "", fmt.Errorf("create build directory: %w", err)
		}
	}
	dir := built.dir
	built.mu.Unlock()
	path := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", path, "./cmd/"+name)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build -o %s ./cmd/%s in %s: %w\n%s", path, name, root, err, out)
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

// BuildCommand returns the path of the binary of ./cmd/<name> outside of a
// test (TestMain), building it once per test process.
func BuildCommand(name string) (string, error) { return commandBinary(name) }
