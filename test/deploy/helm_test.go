package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/shardplane/shardplane/test/framework"
)

// helmModule is the helm release the check installs when helm is not on
// PATH; the module proxy serves it.
const helmModule = "helm.sh/helm/v3/cmd/helm@v3.22.0"

// releaseName and namespace are what the checks install as.
const (
	releaseName = "kp"
	namespace   = "shardplane"
)

var helm struct {
	once sync.Once
	path string
	err  error
}

// helmBinary returns helm from PATH, or installs helmModule once into
// <user cache>/shardplane/helm-<version>/ and returns it from there.
func helmBinary(t testing.TB) string {
	t.Helper()
	helm.once.Do(func() {
		if p, err := exec.LookPath("helm"); err == nil {
			helm.path = p
			return
		}
		cache, err := os.UserCacheDir()
		if err != nil {
			helm.err = fmt.Errorf("user cache directory for helm: %w", err)
			return
		}
		version := helmModule[strings.LastIndex(helmModule, "@")+1:]
		dir := filepath.Join(cache, "shardplane", "helm-"+version)
		helm.path = filepath.Join(dir, "helm")
		if _, err := os.Stat(helm.path); err == nil {
			return
		}
		cmd := exec.Command("go", "install", helmModule)
		cmd.Env = append(os.Environ(), "GOBIN="+dir, "GOFLAGS=-buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			helm.err = fmt.Errorf("go install %s: %w\n%s", helmModule, err, out)
		}
	})
	if helm.err != nil {
		t.Fatal(helm.err)
	}
	return helm.path
}

// repoPath is a path in the repository.
func repoPath(t testing.TB, rel string) string {
	t.Helper()
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, rel)
}

func chartDir(t testing.TB) string { return repoPath(t, "deploy/charts/shardplane") }

// valuesFiles are the examples and the check's own values, by name.
func valuesFiles(t testing.TB) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, pattern := range []string{"deploy/examples/*.yaml", "test/deploy/testdata/values-*.yaml"} {
		matches, err := filepath.Glob(repoPath(t, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			files[strings.TrimSuffix(filepath.Base(m), ".yaml")] = m
		}
	}
	if len(files) < 3 {
		t.Fatalf("expected the examples in deploy/examples, found %v", files)
	}
	return files
}

func sortedNames(m map[string]string) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func runHelm(t testing.TB, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(helmBinary(t), args...)
	// No cluster, no repositories: keep helm off the user's configuration.
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home, "HELM_CONFIG_HOME="+home, "HELM_DATA_HOME="+home, "KUBECONFIG="+filepath.Join(home, "none"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return out, nil
}

// render runs helm template with a values file and returns the objects.
func render(t testing.TB, valuesFile string, extra ...string) []*unstructured.Unstructured {
	t.Helper()
	args := append([]string{"template", releaseName, chartDir(t), "--namespace", namespace, "-f", valuesFile}, extra...)
	out, err := runHelm(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeObjects(out)
	if err != nil {
		t.Fatalf("helm template -f %s: %v", valuesFile, err)
	}
	return objs
}

func decodeObjects(manifests []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]interface{}
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

func TestEveryExamplePassesHelmLintStrict(t *testing.T) {
	files := valuesFiles(t)
	for _, name := range sortedNames(files) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if out, err := runHelm(t, "lint", "--strict", chartDir(t), "-f", files[name]); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

func TestEveryExampleRendersEveryComponent(t *testing.T) {
	files := valuesFiles(t)
	for _, name := range sortedNames(files) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			kinds := map[string]int{}
			// workloads counts Deployments and StatefulSets by component.
			workloads := map[string]int{}
			for _, o := range render(t, files[name]) {
				kinds[o.GetKind()]++
				if o.GetKind() == "Deployment" || o.GetKind() == "StatefulSet" {
					workloads[o.GetKind()+"/"+o.GetLabels()["app.kubernetes.io/component"]]++
				}
			}
			for _, kind := range []string{"StatefulSet", "Service", "ConfigMap", "Certificate", "Issuer", "PodDisruptionBudget"} {
				if kinds[kind] == 0 {
					t.Errorf("no %s rendered (rendered: %v)", kind, kinds)
				}
			}
			if workloads["Deployment/front-proxy"] != 1 {
				t.Errorf("want the front-proxy Deployment, rendered %v", workloads)
			}
			// A virtual-workspaces server per shard, or none when the
			// shards serve the views in-process.
			if n := workloads["Deployment/virtual-workspaces"]; n != 0 && n != workloads["StatefulSet/shard"] {
				t.Errorf("want a virtual-workspaces Deployment per shard or none, rendered %v", workloads)
			}
		})
	}
}

// TestInvalidValuesAreRefusedWithAReason checks that values which cannot
// work fail at render time with a message saying why.
func TestInvalidValuesAreRefusedWithAReason(t *testing.T) {
	values := repoPath(t, "deploy/examples/all-in-one.yaml")
	for _, tc := range []struct {
		name string
		set  []string
		want string
	}{
		{"first shard not root", []string{"--set", "shards[0].name=alpha"}, "the first shard must be named root"},
		{"embedded etcd with two replicas", []string{"--set", "shards[0].replicas=2"}, "replicas must be 1"},
		{"external etcd without endpoints", []string{"--set", "shards[0].etcd.mode=external"}, "needs etcd.external.endpoints"},
		{"unknown etcd mode", []string{"--set", "shards[0].etcd.mode=sqlite"}, "shards/0/etcd/mode"},
		{"virtual workspaces without front-proxy", []string{"--set", "virtualWorkspaces.enabled=true", "--set", "frontProxy.enabled=false"}, "virtualWorkspaces.enabled needs frontProxy.enabled"},
		{"virtual workspaces misspelt", []string{"--set", "virtualWorkspaces.replica=3"}, "replica"},
		{"oidc without issuer", []string{"--set", "auth.oidc.enabled=true"}, "auth.oidc.issuerURL"},
		{"misspelt key", []string{"--set", "frontProxy.replica=3"}, "replica"},
		{"second shard without cache server", []string{"--set", "cacheServer.enabled=false", "--set", "shards[1].name=beta"}, "set cacheServer.enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"template", releaseName, chartDir(t), "--namespace", namespace, "-f", values}, tc.set...)
			out, err := runHelm(t, args...)
			if err == nil {
				t.Fatalf("rendered, want an error containing %q:\n%.500s", tc.want, out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not say %q: %v", tc.want, err)
			}
		})
	}
	// Service names are DNS labels: a long release name leaves no room
	// for "<release>-shardplane-virtual-workspaces-<shard>".
	t.Run("virtual-workspaces Service name too long", func(t *testing.T) {
		t.Parallel()
		const want = "longer than 63 characters"
		out, err := runHelm(t, "template", strings.Repeat("r", 40), chartDir(t), "--namespace", namespace, "-f", values, "--set", "virtualWorkspaces.enabled=true")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("want an error containing %q, got %v:\n%.500s", want, err, out)
		}
	})
}

// TestAddingAShardRestartsOnlyTheFrontProxy renders the two-shard values
// with a third shard added and checks that the pod templates of the
// existing workloads are unchanged (so `helm upgrade` restarts none of
// them) except the front-proxy's, whose mapping gains the new shard's
// /shards/<shard>/ route.
func TestAddingAShardRestartsOnlyTheFrontProxy(t *testing.T) {
	values := repoPath(t, "test/deploy/testdata/values-two-shards.yaml")
	templates := func(objs []*unstructured.Unstructured) map[string]interface{} {
		out := map[string]interface{}{}
		for _, o := range objs {
			if o.GetKind() == "Deployment" || o.GetKind() == "StatefulSet" {
				tmpl, _, _ := unstructured.NestedMap(o.Object, "spec", "template")
				out[o.GetKind()+"/"+o.GetName()] = tmpl
			}
		}
		return out
	}
	before := templates(render(t, values))
	after := templates(render(t, values, "--set", "shards[2].name=gamma"))
	for name, tmpl := range before {
		changed := !equality.Semantic.DeepEqual(tmpl, after[name])
		frontProxy := name == "Deployment/"+releaseName+"-shardplane-front-proxy"
		if changed != frontProxy {
			t.Errorf("%s: pod template changed: %v, want %v", name, changed, frontProxy)
		}
	}
	for _, name := range []string{"StatefulSet/kp-shardplane-shard-gamma", "Deployment/kp-shardplane-virtual-workspaces-gamma"} {
		if _, ok := after[name]; !ok {
			t.Errorf("no %s rendered for the new shard", name)
		}
	}
}
