package frontproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func mounted(name, url string, phase corev1alpha1.LogicalClusterPhaseType) *tenancyv1alpha1.Workspace {
	ws := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{logicalcluster.AnnotationKey: "orgcluster"}}}
	ws.Spec.Mount = &tenancyv1alpha1.Mount{Reference: tenancyv1alpha1.ObjectReference{APIVersion: "contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: name}}
	ws.Spec.URL = url
	ws.Status.Phase = phase
	return ws
}

// kcp's index (pkg/index) and lookup (pkg/proxy/lookup): a mounted
// workspace routes to its URL, an Unavailable one is answered 503, one
// never Ready (still Scheduling, no URL) is unknown.
func TestIndexResolvesMountedWorkspacesToTheirURL(t *testing.T) {
	x := testIndex(t)
	h := workspaceHandler{x: x, shard: "root", mounts: true}
	h.OnAdd(mounted("ready", "https://127.0.0.1:9443/clusters/root:dest", corev1alpha1.LogicalClusterPhaseReady))
	h.OnAdd(mounted("down", "https://127.0.0.1:9443/clusters/root:dest", corev1alpha1.LogicalClusterPhaseUnavailable))
	h.OnAdd(mounted("new", "", corev1alpha1.LogicalClusterPhaseScheduling))
	h.OnAdd(mounted("plain", "http://127.0.0.1:9443", corev1alpha1.LogicalClusterPhaseReady))

	for _, tc := range []struct {
		path   string
		result Result
		url    string
	}{
		{"root:org:ready", Found, "https://127.0.0.1:9443/clusters/root:dest"},
		{"root:org:down", NotServing, ""},
		{"root:org:new", NotFound, ""},
		// The front-proxy speaks TLS to its backends only.
		{"root:org:plain", NotFound, ""},
		// Below a mount the index knows nothing (kcp sends these to the
		// mount's URL without the segments past it).
		{"root:org:ready:below", NotFound, ""},
	} {
		target, result := x.Resolve(logicalcluster.Path(tc.path))
		got := ""
		if target.MountURL != nil {
			got = target.MountURL.String()
		}
		if result != tc.result || got != tc.url || target.Shard != "" || target.Cluster != "" {
			t.Errorf("Resolve(%s) = %+v %v, want %v at %q", tc.path, target, result, tc.result, tc.url)
		}
	}

	// Without the gate a front-proxy leaves mounts out of its index.
	off := workspaceHandler{x: x, shard: "root"}
	off.OnUpdate(nil, mounted("ready", "https://127.0.0.1:9443/clusters/root:dest", corev1alpha1.LogicalClusterPhaseReady))
	if _, result := x.Resolve("root:org:ready"); result != NotFound {
		t.Errorf("without WorkspaceMounts a mount resolves: %v", result)
	}
}

// TestProxySendsAMountedWorkspaceToItsURL: the rest of the path follows
// the mount's URL, with the caller's identity in headers as to a shard;
// an Unavailable mount is kcp's plain 503.
func TestProxySendsAMountedWorkspaceToItsURL(t *testing.T) {
	backend := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.URL.Path+"?"+r.URL.RawQuery+" as "+r.Header.Get("X-Remote-User"))
	}))
	t.Cleanup(backend.Close)
	x := testIndex(t)
	h := workspaceHandler{x: x, shard: "root", mounts: true}
	h.OnAdd(mounted("ready", backend.URL+"/clusters/root:dest", corev1alpha1.LogicalClusterPhaseReady))
	h.OnAdd(mounted("down", backend.URL+"/clusters/root:dest", corev1alpha1.LogicalClusterPhaseUnavailable))
	r := &route{
		PathMapping: PathMapping{Path: ClustersPath, UserHeader: "X-Remote-User", GroupHeader: "X-Remote-Group", ExtraHeaderPrefix: "X-Remote-Extra-"},
		transport:   backend.Client().Transport,
	}
	alice := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil
	})
	front := httptest.NewServer(newProxy([]*route{r}, x, alice, nil))
	t.Cleanup(front.Close)

	for _, tc := range []struct {
		path   string
		status int
		body   string
	}{
		{"/clusters/root:org:ready/api/v1/namespaces?limit=1", http.StatusOK, "/clusters/root:dest/api/v1/namespaces?limit=1 as alice"},
		{"/clusters/root:org:down/api", http.StatusServiceUnavailable, "Not available.\n"},
	} {
		resp, err := http.Get(front.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || string(body) != tc.body {
			t.Errorf("GET %s = %d %q, want %d %q", tc.path, resp.StatusCode, body, tc.status, tc.body)
		}
	}
}
