package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// homeCluster is the logical cluster the fake answers for workspaces/~.
const homeCluster logicalcluster.Path = "a1b2c3d4e5f6g7h8"

// fakeKCP answers the requests of the plugin as kcp does: discovery per
// workspace path, Workspaces in their parents, and the caller's home
// Workspace at /clusters/root/apis/tenancy.kcp.io/v1alpha1/workspaces/~.
type fakeKCP struct {
	srv *httptest.Server

	mu         sync.Mutex
	workspaces map[logicalcluster.Path]*tenancyv1alpha1.Workspace // by full path
	denied     map[logicalcluster.Path]bool                       // discovery answers 403
	hidden     map[logicalcluster.Path]bool                       // Workspaces in this parent answer 403
	readyAfter int                                                // GETs of a created workspace before it is Ready
	gets       map[logicalcluster.Path]int
	pending    map[logicalcluster.Path]bool // created through the fake, not Ready yet
	requests   []string
}

func newFakeKCP(t *testing.T) *fakeKCP {
	t.Helper()
	f := &fakeKCP{
		workspaces: map[logicalcluster.Path]*tenancyv1alpha1.Workspace{},
		denied:     map[logicalcluster.Path]bool{},
		hidden:     map[logicalcluster.Path]bool{},
		gets:       map[logicalcluster.Path]int{},
		pending:    map[logicalcluster.Path]bool{},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// add makes a Ready workspace at p of type root:typ.
func (f *fakeKCP) add(p logicalcluster.Path, typ string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	parent, _ := p.Parent()
	f.workspaces[p] = f.newWorkspace(parent, p.Base(), &tenancyv1alpha1.WorkspaceTypeReference{Name: tenancyv1alpha1.WorkspaceTypeName(typ), Path: "root"}, corev1alpha1.LogicalClusterPhaseReady)
}

func (f *fakeKCP) newWorkspace(parent logicalcluster.Path, name string, typ *tenancyv1alpha1.WorkspaceTypeReference, phase corev1alpha1.LogicalClusterPhaseType) *tenancyv1alpha1.Workspace {
	return &tenancyv1alpha1.Workspace{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       tenancyv1alpha1.WorkspaceSpec{Type: typ, URL: parent.Join(name).URL(f.srv.URL)},
		Status:     tenancyv1alpha1.WorkspaceStatus{Phase: phase},
	}
}

func (f *fakeKCP) served(p logicalcluster.Path) bool {
	if p == logicalcluster.Root.Path() || p == homeCluster {
		return true
	}
	ws, ok := f.workspaces[p]
	return ok && ws.Status.Phase == corev1alpha1.LogicalClusterPhaseReady
}

func (f *fakeKCP) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	rest, ok := strings.CutPrefix(r.URL.Path, logicalcluster.ClustersPrefix)
	if !ok {
		writeStatus(w, apierrors.NewNotFound(metav1.SchemeGroupVersion.WithResource("paths").GroupResource(), r.URL.Path))
		return
	}
	cluster, sub, _ := strings.Cut(rest, "/")
	p := logicalcluster.Path(cluster)
	const wsPrefix = "apis/tenancy.kcp.io/v1alpha1/workspaces"
	gr := tenancyv1alpha1.Resource("workspaces")
	switch {
	case sub == "api":
		switch {
		case f.denied[p]:
			writeStatus(w, apierrors.NewForbidden(metav1.SchemeGroupVersion.WithResource("").GroupResource(), "", errorf("workspace access not permitted")))
		case f.served(p):
			writeJSON(w, http.StatusOK, &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
		default:
			writeStatus(w, apierrors.NewNotFound(gr, cluster))
		}
	case sub == wsPrefix+"/"+HomeWorkspaceName && p == logicalcluster.Root.Path() && r.Method == http.MethodGet:
		ws := f.newWorkspace("", "cluster", &tenancyv1alpha1.WorkspaceTypeReference{Name: "home", Path: "root"}, corev1alpha1.LogicalClusterPhaseReady)
		ws.Spec.URL = homeCluster.URL(f.srv.URL)
		writeJSON(w, http.StatusOK, ws)
	case f.hidden[p] && strings.HasPrefix(sub, wsPrefix):
		writeStatus(w, apierrors.NewForbidden(gr, "", errorf("user may not read workspaces here")))
	case sub == wsPrefix && r.Method == http.MethodGet:
		list := &tenancyv1alpha1.WorkspaceList{TypeMeta: metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "WorkspaceList"}}
		for path, ws := range f.workspaces {
			if parent, _ := path.Parent(); parent == p {
				list.Items = append(list.Items, *ws)
			}
		}
		sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
		writeJSON(w, http.StatusOK, list)
	case sub == wsPrefix && r.Method == http.MethodPost:
		in := &tenancyv1alpha1.Workspace{}
		if err := json.NewDecoder(r.Body).Decode(in); err != nil {
			writeStatus(w, apierrors.NewBadRequest(err.Error()))
			return
		}
		if _, exists := f.workspaces[p.Join(in.Name)]; exists {
			writeStatus(w, apierrors.NewAlreadyExists(gr, in.Name))
			return
		}
		typ := in.Spec.Type
		if typ == nil {
			typ = &tenancyv1alpha1.WorkspaceTypeReference{Name: "universal"}
		}
		if typ.Path == "" {
			typ.Path = "root"
		}
		ws := f.newWorkspace(p, in.Name, typ, corev1alpha1.LogicalClusterPhaseScheduling)
		f.workspaces[p.Join(in.Name)] = ws
		f.pending[p.Join(in.Name)] = true
		writeJSON(w, http.StatusCreated, ws)
	case strings.HasPrefix(sub, wsPrefix+"/") && r.Method == http.MethodGet:
		name := strings.TrimPrefix(sub, wsPrefix+"/")
		ws, ok := f.workspaces[p.Join(name)]
		if !ok {
			writeStatus(w, apierrors.NewNotFound(gr, name))
			return
		}
		f.gets[p.Join(name)]++
		if f.pending[p.Join(name)] && f.gets[p.Join(name)] > f.readyAfter {
			ws.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
			delete(f.pending, p.Join(name))
		}
		writeJSON(w, http.StatusOK, ws)
	default:
		writeStatus(w, apierrors.NewNotFound(gr, sub))
	}
}

type errorf string

func (e errorf) Error() string { return string(e) }

func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	status := err.ErrStatus
	status.Kind, status.APIVersion = "Status", "v1"
	writeJSON(w, int(status.Code), &status)
}

func writeJSON(w http.ResponseWriter, code int, obj any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(obj)
}

// writeKubeconfig writes a shard-like admin kubeconfig for the fake with
// the given file mode and returns its path.
func (f *fakeKCP) writeKubeconfig(t *testing.T, mode os.FileMode) string {
	t.Helper()
	c := clientcmdapi.NewConfig()
	c.Clusters["root"] = &clientcmdapi.Cluster{Server: f.srv.URL + "/clusters/root"}
	c.Clusters["base"] = &clientcmdapi.Cluster{Server: f.srv.URL}
	c.AuthInfos["kcp-admin"] = &clientcmdapi.AuthInfo{Token: "admin-token"}
	c.Contexts["root"] = &clientcmdapi.Context{Cluster: "root", AuthInfo: "kcp-admin"}
	c.Contexts["base"] = &clientcmdapi.Context{Cluster: "base", AuthInfo: "kcp-admin"}
	c.CurrentContext = "root"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*c, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// runWS runs `kubectl ws args...` against kubeconfig and returns stdout
// and stderr.
func runWS(t *testing.T, kubeconfig string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := NewWorkspaceCommand(IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"--kubeconfig=" + kubeconfig}, args...))
	cmd.SetOut(&errOut)
	cmd.SetErr(&errOut)
	err = cmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// currentServer returns the server of the kubeconfig's current context.
func currentServer(t *testing.T, kubeconfig string) string {
	t.Helper()
	c, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ServerOf(c, c.CurrentContext)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
