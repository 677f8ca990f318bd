package home

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	_ "github.com/shardplane/shardplane/pkg/apis/install" // kcp's groups in legacyscheme
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// fakeShard holds the LogicalClusters a handler under test sees.
type fakeShard struct {
	cached  map[logicalcluster.Name]*corev1alpha1.LogicalCluster
	stored  map[logicalcluster.Name]*corev1alpha1.LogicalCluster
	created []logicalcluster.Name
	getErr  error
	allow   bool
}

func newFakeShard() *fakeShard {
	return &fakeShard{cached: map[logicalcluster.Name]*corev1alpha1.LogicalCluster{}, stored: map[logicalcluster.Name]*corev1alpha1.LogicalCluster{}, allow: true}
}

func (f *fakeShard) config() Config {
	return Config{
		CreatorGroups: []string{user.AllAuthenticated},
		Authorizer: authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
			if f.allow && a.GetVerb() == "create" && a.GetResource() == "workspaces" && a.GetName() == WorkspaceName {
				return authorizer.DecisionAllow, "", nil
			}
			return authorizer.DecisionNoOpinion, "", nil
		}),
		Serializer: legacyscheme.Codecs,
		Cached:     func(c logicalcluster.Name) *corev1alpha1.LogicalCluster { return f.cached[c] },
		Get: func(_ context.Context, c logicalcluster.Name) (*corev1alpha1.LogicalCluster, error) {
			if f.getErr != nil {
				return nil, f.getErr
			}
			if lc, ok := f.stored[c]; ok {
				return lc, nil
			}
			return nil, apierrors.NewNotFound(corev1alpha1.Resource("logicalclusters"), "cluster")
		},
		Create: func(_ context.Context, c logicalcluster.Name, lc *corev1alpha1.LogicalCluster) (*corev1alpha1.LogicalCluster, error) {
			if _, ok := f.stored[c]; ok {
				return nil, apierrors.NewAlreadyExists(corev1alpha1.Resource("logicalclusters"), "cluster")
			}
			f.created = append(f.created, c)
			f.stored[c] = lc
			return lc, nil
		},
		Lifecycle: func() ([]corev1alpha1.LogicalClusterInitializer, []corev1alpha1.LogicalClusterTerminator, error) {
			return []corev1alpha1.LogicalClusterInitializer{tenancyv1alpha1.WorkspaceAPIBindingsInitializer}, nil, nil
		},
		ExternalURL: "https://front:6443",
	}
}

// ready is a Ready home of user.
func ready(name string) *corev1alpha1.LogicalCluster {
	return &corev1alpha1.LogicalCluster{
		ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName, Annotations: map[string]string{
			logicalcluster.AnnotationKey: string(ClusterName(name)), logicalcluster.PathAnnotationKey: string(Path(name)),
		}},
		Status: corev1alpha1.LogicalClusterStatus{Phase: corev1alpha1.LogicalClusterPhaseReady, URL: Path(name).URL("https://front:6443")},
	}
}

// request is a request to cluster for resource/name as u, as the
// handler sees it after authorization.
func request(cluster logicalcluster.Name, verb, resource, name string, u user.Info) *http.Request {
	req := httptest.NewRequest(http.MethodGet, "/apis/tenancy.kcp.io/v1alpha1/"+resource+"/"+name, nil)
	ctx := logicalcluster.WithCluster(req.Context(), cluster)
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: verb, APIGroup: "tenancy.kcp.io", APIVersion: "v1alpha1", Resource: resource, Name: name,
	})
	if u != nil {
		ctx = genericapirequest.WithUser(ctx, u)
	}
	return req.WithContext(ctx)
}

func serve(t *testing.T, cfg Config, req *http.Request) (*httptest.ResponseRecorder, bool) {
	t.Helper()
	passed := false
	h := WithHomeWorkspaces(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { passed = true }), cfg)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec, passed
}

func alice() user.Info {
	return &user.DefaultInfo{Name: "alice", Groups: []string{"team-1", user.AllAuthenticated}}
}

func TestOtherRequestsPassThrough(t *testing.T) {
	for _, req := range []*http.Request{
		request("root", "get", "workspaces", "team", alice()),
		request("root", "list", "workspaces", "", alice()),
		request("root", "delete", "workspaces", WorkspaceName, alice()),
		request("someorg", "get", "workspaces", WorkspaceName, alice()),
		request("root", "get", "workspacetypes", WorkspaceName, alice()),
	} {
		f := newFakeShard()
		if _, passed := serve(t, f.config(), req); !passed || len(f.created) > 0 {
			t.Errorf("%s was not passed on untouched", req.URL)
		}
	}
}

func TestFirstAccessCreatesTheHomeAndAsksToRetry(t *testing.T) {
	f := newFakeShard()
	rec, passed := serve(t, f.config(), request("root", "get", "workspaces", WorkspaceName, alice()))
	if passed {
		t.Fatal("request was passed on")
	}
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("got %d Retry-After %q: %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if !slices.Equal(f.created, []logicalcluster.Name{ClusterName("alice")}) {
		t.Fatalf("created %v, want alice's home %s", f.created, ClusterName("alice"))
	}
	lc := f.stored[ClusterName("alice")]
	if lc.Spec.Owner != nil {
		t.Errorf("a home has no owning Workspace, got %+v", lc.Spec.Owner)
	}
	if got := lc.Annotations[logicalcluster.PathAnnotationKey]; got != "user:alice" {
		t.Errorf("path %q, want user:alice", got)
	}
	if got := lc.Annotations[corev1alpha1.LogicalClusterTypeAnnotationKey]; got != "root:home" {
		t.Errorf("type %q, want root:home", got)
	}
	var owner authenticationv1.UserInfo
	if err := json.Unmarshal([]byte(lc.Annotations[corev1alpha1.ExperimentalWorkspaceOwnerAnnotationKey]), &owner); err != nil || owner.Username != "alice" {
		t.Errorf("owner annotation %q: %v", lc.Annotations[corev1alpha1.ExperimentalWorkspaceOwnerAnnotationKey], err)
	}
	if !slices.Equal(lc.Spec.Initializers, []corev1alpha1.LogicalClusterInitializer{tenancyv1alpha1.WorkspaceAPIBindingsInitializer}) {
		t.Errorf("initializers %v", lc.Spec.Initializers)
	}

	// Asked again before the informer saw it: no second creation.
	rec, _ = serve(t, f.config(), request("root", "get", "workspaces", WorkspaceName, alice()))
	if rec.Code != http.StatusTooManyRequests || len(f.created) != 1 {
		t.Fatalf("second access: %d, created %v", rec.Code, f.created)
	}
}

func TestReadyHomeIsAnsweredAsAWorkspace(t *testing.T) {
	for _, name := range []string{"alice", "system:serviceaccount:ns:sa"} {
		t.Run(name, func(t *testing.T) {
			f := newFakeShard()
			f.cached[ClusterName(name)] = ready(name)
			rec, _ := serve(t, f.config(), request("root", "get", "workspaces", WorkspaceName, &user.DefaultInfo{Name: name}))
			if rec.Code != http.StatusOK {
				t.Fatalf("got %d: %s", rec.Code, rec.Body)
			}
			ws := &tenancyv1alpha1.Workspace{}
			if err := json.Unmarshal(rec.Body.Bytes(), ws); err != nil {
				t.Fatal(err)
			}
			if ws.Kind != "Workspace" || ws.Spec.Cluster != string(ClusterName(name)) || ws.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
				t.Errorf("workspace %+v", ws)
			}
			if want := "https://front:6443/clusters/" + string(Path(name)); ws.Spec.URL != want {
				t.Errorf("URL %q, want %q", ws.Spec.URL, want)
			}
			if ws.Spec.Type == nil || ws.Spec.Type.String() != "root:home" {
				t.Errorf("type %v, want root:home", ws.Spec.Type)
			}
			if len(f.created) != 0 {
				t.Errorf("created %v for an existing home", f.created)
			}
		})
	}
}

func TestHomesNotReadyAnswer429(t *testing.T) {
	for _, phase := range []corev1alpha1.LogicalClusterPhaseType{"", corev1alpha1.LogicalClusterPhaseScheduling, corev1alpha1.LogicalClusterPhaseInitializing} {
		f := newFakeShard()
		lc := ready("alice")
		lc.Status.Phase = phase
		f.stored[ClusterName("alice")] = lc
		rec, _ := serve(t, f.config(), request("root", "get", "workspaces", WorkspaceName, alice()))
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" {
			t.Errorf("phase %q: got %d Retry-After %q", phase, rec.Code, rec.Header().Get("Retry-After"))
		}
	}
}

func TestOnlyAllowedCreatorsGetAHome(t *testing.T) {
	for _, tc := range []struct {
		name   string
		user   user.Info
		groups []string
		allow  bool
		code   int
	}{
		{"creator", alice(), nil, true, http.StatusTooManyRequests},
		{"in a configured group", alice(), []string{"team-1"}, true, http.StatusTooManyRequests},
		{"in no configured group", alice(), []string{"team-2"}, true, http.StatusForbidden},
		{"denied by RBAC", alice(), nil, false, http.StatusForbidden},
		{"anonymous", &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}, nil, true, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeShard()
			f.allow = tc.allow
			cfg := f.config()
			if tc.groups != nil {
				cfg.CreatorGroups = tc.groups
			}
			rec, _ := serve(t, cfg, request("root", "get", "workspaces", WorkspaceName, tc.user))
			if rec.Code != tc.code {
				t.Fatalf("got %d, want %d: %s", rec.Code, tc.code, rec.Body)
			}
			if created := len(f.created) > 0; created != (tc.code == http.StatusTooManyRequests) {
				t.Errorf("created %v", f.created)
			}
		})
	}
}

func TestExistingHomeIsServedWithoutTheCreatorCheck(t *testing.T) {
	f := newFakeShard()
	f.allow = false
	f.stored[ClusterName("alice")] = ready("alice")
	rec, _ := serve(t, f.config(), request("root", "get", "workspaces", WorkspaceName, alice()))
	if rec.Code != http.StatusOK {
		t.Fatalf("got %d: %s", rec.Code, rec.Body)
	}
}

func TestFailuresToReadAreRetryable(t *testing.T) {
	f := newFakeShard()
	f.getErr = errors.New("etcd is away")
	rec, _ := serve(t, f.config(), request("root", "get", "workspaces", WorkspaceName, alice()))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("got %d, want 503: %s", rec.Code, rec.Body)
	}
	status := &metav1.Status{}
	if err := json.Unmarshal(rec.Body.Bytes(), status); err != nil || status.Message == "" {
		t.Errorf("body %s is no Status with a message", rec.Body)
	}
}

func TestForbiddenNamesTheWorkspacesResource(t *testing.T) {
	f := newFakeShard()
	cfg := f.config()
	cfg.CreatorGroups = []string{"nobody"}
	rec, _ := serve(t, cfg, request("root", "get", "workspaces", WorkspaceName, alice()))
	status := &metav1.Status{}
	if err := json.Unmarshal(rec.Body.Bytes(), status); err != nil {
		t.Fatal(err)
	}
	if status.Details == nil || status.Details.Group != "tenancy.kcp.io" || status.Details.Kind != "workspaces" || status.Details.Name != WorkspaceName {
		t.Errorf("details %+v", status.Details)
	}
}
