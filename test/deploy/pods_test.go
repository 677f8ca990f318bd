package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shardplane/shardplane/test/framework"
)

// localPod is the first replica of a rendered StatefulSet or Deployment,
// run as a process on loopback: its container ports are free loopback
// ports, its volumes directories under dir.
type localPod struct {
	name      string
	component string
	instance  string
	labels    map[string]string
	spec      corev1.PodSpec
	// claims are the volumes of the StatefulSet's volumeClaimTemplates.
	claims map[string]bool
	// subdomain is the StatefulSet's governing Service.
	subdomain string
	// ports maps each container port to its loopback port.
	ports map[int32]int
	dir   string
}

// cluster is what a rendered release is made of, run locally.
type cluster struct {
	namespace  string
	pods       []*localPod
	services   []*corev1.Service
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]map[string][]byte
	// addresses maps every in-cluster host:port a pod may dial to its
	// loopback address.
	addresses *strings.Replacer
}

// newCluster turns rendered objects into local pods; secrets are the
// Secrets the release mounts (issued certificates and given ones).
func newCluster(t *testing.T, objs []*unstructured.Unstructured, secrets map[string]map[string][]byte) *cluster {
	t.Helper()
	c := &cluster{namespace: namespace, configMaps: map[string]*corev1.ConfigMap{}, secrets: secrets}
	convert := func(o *unstructured.Unstructured, into interface{}) {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, into, true); err != nil {
			t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	base := t.TempDir()
	for _, o := range objs {
		switch o.GetKind() {
		case "StatefulSet":
			var s appsv1.StatefulSet
			convert(o, &s)
			claims := map[string]bool{}
			for _, pvc := range s.Spec.VolumeClaimTemplates {
				claims[pvc.Name] = true
			}
			c.pods = append(c.pods, newLocalPod(t, base, s.Name+"-0", s.Spec.Template, claims, s.Spec.ServiceName))
		case "Deployment":
			var d appsv1.Deployment
			convert(o, &d)
			c.pods = append(c.pods, newLocalPod(t, base, d.Name+"-0", d.Spec.Template, nil, ""))
		case "Service":
			var s corev1.Service
			convert(o, &s)
			c.services = append(c.services, &s)
		case "ConfigMap":
			var cm corev1.ConfigMap
			convert(o, &cm)
			c.configMaps[cm.Name] = &cm
		}
	}
	c.addresses = c.addressReplacer(t)
	return c
}

func newLocalPod(t *testing.T, base, name string, tmpl corev1.PodTemplateSpec, claims map[string]bool, subdomain string) *localPod {
	t.Helper()
	if len(tmpl.Spec.Containers) != 1 || len(tmpl.Spec.InitContainers) != 0 {
		t.Fatalf("pod %s: the check runs pods of one container", name)
	}
	p := &localPod{
		name: name, labels: tmpl.Labels, spec: tmpl.Spec, claims: claims, subdomain: subdomain,
		component: tmpl.Labels["app.kubernetes.io/component"], instance: tmpl.Labels["shardplane.io/instance"],
		ports: map[int32]int{}, dir: filepath.Join(base, name),
	}
	for _, cp := range tmpl.Spec.Containers[0].Ports {
		p.ports[cp.ContainerPort] = framework.FreePort(t)
	}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// containerPort resolves a port by name or number.
func (p *localPod) containerPort(port string) (int32, bool) {
	for _, cp := range p.spec.Containers[0].Ports {
		if cp.Name == port || strconv.Itoa(int(cp.ContainerPort)) == port {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

// addressReplacer maps Service names (short and qualified) and the pods'
// stable names of StatefulSets to the loopback ports of the pods behind
// them. Longer names are listed first, so a pod's name wins over its
// Service's.
func (c *cluster) addressReplacer(t *testing.T) *strings.Replacer {
	t.Helper()
	m := map[string]string{}
	hostNames := func(host string) []string {
		return []string{host, host + "." + c.namespace, host + "." + c.namespace + ".svc", host + "." + c.namespace + ".svc.cluster.local"}
	}
	for _, svc := range c.services {
		var target *localPod
		for _, p := range c.pods {
			if len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(p.labels)) {
				target = p
				break
			}
		}
		if target == nil {
			t.Fatalf("Service %s selects no pod", svc.Name)
		}
		for _, sp := range svc.Spec.Ports {
			tp := sp.TargetPort.String()
			if tp == "0" || tp == "" {
				tp = strconv.Itoa(int(sp.Port))
			}
			cp, ok := target.containerPort(tp)
			if !ok {
				t.Fatalf("Service %s port %s: pod %s has no container port %s", svc.Name, sp.Name, target.name, tp)
			}
			for _, h := range hostNames(svc.Name) {
				m[fmt.Sprintf("%s:%d", h, sp.Port)] = fmt.Sprintf("127.0.0.1:%d", target.ports[cp])
			}
		}
	}
	for _, p := range c.pods {
		if p.subdomain == "" {
			continue
		}
		for cp, port := range p.ports {
			for _, h := range hostNames(p.name + "." + p.subdomain) {
				m[fmt.Sprintf("%s:%d", h, cp)] = fmt.Sprintf("127.0.0.1:%d", port)
			}
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return len(keys[i]) > len(keys[j]) || len(keys[i]) == len(keys[j]) && keys[i] < keys[j]
	})
	pairs := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		pairs = append(pairs, k, m[k])
	}
	return strings.NewReplacer(pairs...)
}

var (
	envReference  = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	anyAddress    = regexp.MustCompile(`0\.0\.0\.0:([0-9]+)`)
	portFlag      = regexp.MustCompile(`^(--[a-z0-9-]*port)=([0-9]+)$`)
	bindAnyAdress = regexp.MustCompile(`^(--bind-address)=0\.0\.0\.0$`)
)

// rewrite maps what a pod's command line or mounted file says about the
// cluster to the local run: in-cluster addresses to loopback ports, the
// pod's own ports and wildcard binds to its loopback ports, mount paths to
// directories.
func (c *cluster) rewrite(p *localPod, s string) string {
	s = c.addresses.Replace(s)
	s = anyAddress.ReplaceAllStringFunc(s, func(m string) string {
		port, _ := strconv.Atoi(anyAddress.FindStringSubmatch(m)[1])
		if local, ok := p.ports[int32(port)]; ok {
			return fmt.Sprintf("127.0.0.1:%d", local)
		}
		return m
	})
	// One pass over all mount paths, longest first, so that a mapped path
	// is never mapped again.
	mounts := append([]corev1.VolumeMount(nil), p.spec.Containers[0].VolumeMounts...)
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].MountPath) > len(mounts[j].MountPath) })
	local := map[string]string{}
	alternatives := make([]string, 0, len(mounts))
	for _, vm := range mounts {
		local[vm.MountPath] = p.volumeDir(vm.Name)
		alternatives = append(alternatives, regexp.QuoteMeta(vm.MountPath))
	}
	if len(alternatives) > 0 {
		re := regexp.MustCompile(`(` + strings.Join(alternatives, "|") + `)(/|$|[^A-Za-z0-9_.-])`)
		s = re.ReplaceAllStringFunc(s, func(m string) string {
			sub := re.FindStringSubmatch(m)
			return local[sub[1]] + sub[2]
		})
	}
	return s
}

func (p *localPod) volumeDir(volume string) string { return filepath.Join(p.dir, "volumes", volume) }

// args returns the container's command line (the binary's arguments) with
// environment references expanded and the cluster mapped to loopback.
func (c *cluster) args(t *testing.T, p *localPod) []string {
	t.Helper()
	ctr := p.spec.Containers[0]
	env := map[string]string{}
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			env[e.Name] = p.name
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env[e.Name] = c.namespace
		default:
			t.Fatalf("pod %s: env %s: only values and metadata.name/namespace are supported by the check", p.name, e.Name)
		}
	}
	line := append(append([]string(nil), ctr.Command[1:]...), ctr.Args...)
	out := make([]string, 0, len(line))
	for _, a := range line {
		a = envReference.ReplaceAllStringFunc(a, func(m string) string {
			if v, ok := env[m[2:len(m)-1]]; ok {
				return v
			}
			return m
		})
		if m := portFlag.FindStringSubmatch(a); m != nil {
			port, _ := strconv.Atoi(m[2])
			if local, ok := p.ports[int32(port)]; ok {
				a = fmt.Sprintf("%s=%d", m[1], local)
			}
		}
		a = bindAnyAdress.ReplaceAllString(a, "$1=127.0.0.1")
		out = append(out, c.rewrite(p, a))
	}
	return out
}

// materialize writes the pod's volumes: Secrets and ConfigMaps (with their
// items), empty directories for emptyDir volumes and volume claims.
func (c *cluster) materialize(t *testing.T, p *localPod) {
	t.Helper()
	volumes := map[string]corev1.Volume{}
	for _, v := range p.spec.Volumes {
		volumes[v.Name] = v
	}
	for _, vm := range p.spec.Containers[0].VolumeMounts {
		dir := p.volumeDir(vm.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		v, ok := volumes[vm.Name]
		switch {
		case !ok && p.claims[vm.Name]:
		case !ok:
			t.Fatalf("pod %s mounts volume %s, which it does not have", p.name, vm.Name)
		case v.EmptyDir != nil:
		case v.Secret != nil:
			data, ok := c.secrets[v.Secret.SecretName]
			if !ok {
				t.Fatalf("pod %s mounts Secret %s, which the release neither issues nor documents", p.name, v.Secret.SecretName)
			}
			writeVolume(t, p, dir, "Secret "+v.Secret.SecretName, data, v.Secret.Items, nil)
		case v.ConfigMap != nil:
			cm, ok := c.configMaps[v.ConfigMap.Name]
			if !ok {
				t.Fatalf("pod %s mounts ConfigMap %s, which is not rendered", p.name, v.ConfigMap.Name)
			}
			data := map[string][]byte{}
			for k, val := range cm.Data {
				data[k] = []byte(val)
			}
			writeVolume(t, p, dir, "ConfigMap "+cm.Name, data, v.ConfigMap.Items, func(b []byte) []byte { return []byte(c.rewrite(p, string(b))) })
		default:
			t.Fatalf("pod %s volume %s: kind not supported by the check", p.name, vm.Name)
		}
	}
}

func writeVolume(t *testing.T, p *localPod, dir, what string, data map[string][]byte, items []corev1.KeyToPath, transform func([]byte) []byte) {
	t.Helper()
	files := map[string][]byte{}
	if len(items) == 0 {
		for k, v := range data {
			files[k] = v
		}
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			t.Fatalf("pod %s: %s has no key %s", p.name, what, it.Key)
		}
		files[it.Path] = v
	}
	for name, content := range files {
		if transform != nil {
			content = transform(content)
		}
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// probeURL is the loopback URL of an HTTP probe of the pod.
func (p *localPod) probeURL(t *testing.T, probe *corev1.Probe) string {
	t.Helper()
	if probe == nil || probe.HTTPGet == nil {
		t.Fatalf("pod %s: no HTTP probe", p.name)
	}
	cp, ok := p.containerPort(probe.HTTPGet.Port.String())
	if !ok {
		t.Fatalf("pod %s: probe port %s is not a container port", p.name, probe.HTTPGet.Port.String())
	}
	scheme := strings.ToLower(string(probe.HTTPGet.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	return fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, p.ports[cp], probe.HTTPGet.Path)
}

var etcdBuild struct {
	once sync.Once
	path string
	err  error
}

// commandBinary returns the local binary for an image command: the
// project's binaries from ./cmd, etcd from ./test/deploy/etcd
// (SHARDPLANE_E2E_<NAME>_BINARY overrides either).
func commandBinary(t *testing.T, command string) string {
	t.Helper()
	name := filepath.Base(command)
	if name != "etcd" {
		return framework.CommandBinary(t, name)
	}
	etcdBuild.once.Do(func() {
		if p := os.Getenv("SHARDPLANE_E2E_ETCD_BINARY"); p != "" {
			etcdBuild.path, etcdBuild.err = filepath.Abs(p)
			return
		}
		dir, err := os.MkdirTemp("", "shardplane-deploy-etcd-")
		if err != nil {
			etcdBuild.err = err
			return
		}
		etcdBuild.path = filepath.Join(dir, "etcd")
		cmd := exec.Command("go", "build", "-o", etcdBuild.path, "./test/deploy/etcd")
		cmd.Dir = repoPath(t, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			etcdBuild.err = fmt.Errorf("go build ./test/deploy/etcd: %w\n%s", err, out)
		}
	})
	if etcdBuild.err != nil {
		t.Fatal(etcdBuild.err)
	}
	return etcdBuild.path
}
