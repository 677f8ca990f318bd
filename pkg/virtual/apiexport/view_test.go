package apiexport

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/permissionclaim"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

const (
	exportCluster = logicalcluster.Name("provider")
	exportName    = "widgets.example.io"
	identity      = "abc123"
)

func binding(cluster logicalcluster.Name, claims ...apisv1alpha2.AcceptablePermissionClaim) *apisv1alpha2.APIBinding {
	b := &apisv1alpha2.APIBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets", Annotations: map[string]string{logicalcluster.AnnotationKey: string(cluster)}},
		Spec: apisv1alpha2.APIBindingSpec{
			Reference:        apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: "root:provider", Name: exportName}},
			PermissionClaims: claims,
		},
		Status: apisv1alpha2.APIBindingStatus{
			APIExportClusterName: string(exportCluster),
			Phase:                apisv1alpha2.APIBindingPhaseBound,
			BoundResources: []apisv1alpha2.BoundAPIResource{{
				Group: "example.io", Resource: "widgets",
				Schema: apisv1alpha2.BoundAPIResourceSchema{Name: "v1.widgets.example.io", IdentityHash: identity},
			}},
			ExportPermissionClaims: []apisv1alpha2.PermissionClaim{configMaps([]string{"get", "list", "watch", "create"})},
		},
	}
	return b
}

func configMaps(verbs []string) apisv1alpha2.PermissionClaim {
	return apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Resource: "configmaps"}, Verbs: verbs}
}

func accepted(verbs []string, labels map[string]string) apisv1alpha2.AcceptablePermissionClaim {
	return apisv1alpha2.AcceptablePermissionClaim{
		ScopedPermissionClaim: apisv1alpha2.ScopedPermissionClaim{
			PermissionClaim: configMaps(verbs),
			Selector:        apisv1alpha2.PermissionClaimSelector{LabelSelector: metav1.LabelSelector{MatchLabels: labels}},
		},
		State: apisv1alpha2.ClaimAccepted,
	}
}

func TestViewOfCollectsBoundResourcesAndAcceptedClaims(t *testing.T) {
	rejected := accepted(nil, map[string]string{"a": "b"})
	rejected.State = apisv1alpha2.ClaimRejected
	notClaimedAnymore := accepted(nil, nil)
	notClaimedAnymore.Resource = "secrets"
	v := viewOf(exportCluster, exportName, []*apisv1alpha2.APIBinding{
		binding("b", accepted([]string{"get", "list"}, map[string]string{"app": "x"})),
		binding("c", rejected),
		binding("d", notClaimedAnymore),
	})
	widgets := v.bound[schema.GroupResource{Group: "example.io", Resource: "widgets"}]
	if widgets == nil || widgets.identityHash != identity || len(widgets.clusters) != 3 {
		t.Fatalf("bound widgets: %+v", widgets)
	}
	cms := v.claimed[schema.GroupResource{Resource: "configmaps"}]
	if cms == nil || len(cms.clusters) != 1 {
		t.Fatalf("claimed configmaps: %+v", cms)
	}
	g := cms.clusters["b"]
	if !g.allows("list") || g.allows("create") || g.allows("delete") {
		t.Errorf("verbs %v: want the intersection get, list", g.verbs)
	}
	if v.claimed[schema.GroupResource{Resource: "secrets"}] != nil {
		t.Errorf("a claim the export no longer makes is open")
	}
}

func TestSelectorOfEmptySelectsNothingAndMatchAllEverything(t *testing.T) {
	if selectorOf(apisv1alpha2.PermissionClaimSelector{}).Matches(fakeLabels{"a": "b"}) {
		t.Errorf("empty selector selects")
	}
	if !selectorOf(apisv1alpha2.PermissionClaimSelector{MatchAll: true}).Matches(fakeLabels{}) {
		t.Errorf("matchAll does not select")
	}
}

type fakeLabels map[string]string

func (l fakeLabels) Has(k string) bool   { _, ok := l[k]; return ok }
func (l fakeLabels) Get(k string) string { return l[k] }
func (l fakeLabels) Lookup(k string) (string, bool) {
	v, ok := l[k]
	return v, ok
}

func TestWithIdentityQualifiesTheCollection(t *testing.T) {
	for _, tc := range []struct{ rest, want string }{
		{"/apis/example.io/v1/widgets", "/apis/example.io/v1/widgets:abc"},
		{"/apis/example.io/v1/namespaces/team/widgets", "/apis/example.io/v1/namespaces/team/widgets:abc"},
		{"/apis/example.io/v1/namespaces/team/widgets/w1", "/apis/example.io/v1/namespaces/team/widgets/w1"},
	} {
		if got := withIdentity(tc.rest, &apirequest.RequestInfo{Resource: "widgets"}, "abc"); got != tc.want {
			t.Errorf("withIdentity(%s) = %s, want %s", tc.rest, got, tc.want)
		}
	}
}

// fakeShard records the paths it is asked for and answers lists of
// objects of several clusters.
type fakeShard struct {
	mu    sync.Mutex
	paths []string
}

func (f *fakeShard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.paths = append(f.paths, r.URL.Path+"?"+r.URL.RawQuery)
	f.mu.Unlock()
	claimKey, claimValue := permissionclaim.LabelKeyAndValue(exportCluster, exportName, configMaps(nil))
	// claimed is what admission labels the objects the binding selected with.
	claimed := map[string]string{"app": "x", claimKey: claimValue}
	cm := func(cluster, name string, labels map[string]string) map[string]interface{} {
		return map[string]interface{}{"kind": "ConfigMap", "apiVersion": "v1", "metadata": map[string]interface{}{
			"name": name, "namespace": "team", "labels": labels, "annotations": map[string]interface{}{logicalcluster.AnnotationKey: cluster}}}
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.Contains(r.URL.Path, "/vnets"):
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(metav1.Status{Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound})
	case strings.HasSuffix(r.URL.Path, "/api/v1/configmaps") && r.URL.Query().Get("watch") == "true":
		enc := json.NewEncoder(w)
		for _, e := range []map[string]interface{}{
			{"type": "ADDED", "object": cm("b", "selected", claimed)},
			{"type": "ADDED", "object": cm("b", "unselected", nil)},
			{"type": "ADDED", "object": cm("c", "other-cluster", claimed)},
			{"type": "MODIFIED", "object": cm("b", "selected", nil)},
		} {
			_ = enc.Encode(e)
		}
	case strings.HasSuffix(r.URL.Path, "/api/v1/configmaps"):
		_ = json.NewEncoder(w).Encode(map[string]interface{}{"kind": "ConfigMapList", "apiVersion": "v1", "metadata": map[string]interface{}{"resourceVersion": "7"},
			"items": []interface{}{cm("b", "selected", claimed), cm("b", "unselected", map[string]string{"app": "x"}), cm("c", "other-cluster", claimed)}})
	case strings.HasSuffix(r.URL.Path, "/apis/example.io/v1"):
		_ = json.NewEncoder(w).Encode(metav1.APIResourceList{GroupVersion: "example.io/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Kind: "Widget", Namespaced: true}, {Name: "widgets/status", Kind: "Widget"}, {Name: "gadgets", Kind: "Gadget"}}})
	default:
		_ = json.NewEncoder(w).Encode(map[string]interface{}{"kind": "WidgetList", "apiVersion": "example.io/v1", "items": []interface{}{}})
	}
}

func (f *fakeShard) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.paths...)
}

type allowUser string

func (a allowUser) Authorize(ctx context.Context, attr authorizer.Attributes) (authorizer.Decision, string, error) {
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	if attr.GetUser().GetName() == string(a) && cluster == exportCluster && attr.GetResource() == "apiexports" && attr.GetSubresource() == "content" && attr.GetName() == exportName {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func (a allowUser) ConditionsAwareAuthorize(ctx context.Context, attr authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(a.Authorize(ctx, attr))
}

func (allowUser) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}

func newTestView(t *testing.T, bindings ...*apisv1alpha2.APIBinding) (*View, *fakeShard) {
	t.Helper()
	shard := &fakeShard{}
	srv := httptest.NewServer(shard)
	t.Cleanup(srv.Close)
	inf := wildcardinformer.New(&cache.ListWatch{}, &apisv1alpha2.APIBinding{}, "test")
	v, err := New(Config{Shard: &rest.Config{Host: srv.URL}, APIBindings: inf, Authorizer: allowUser("provider")})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bindings {
		if err := inf.Indexer().Add(b); err != nil {
			t.Fatal(err)
		}
	}
	return v, shard
}

func serve(v *View, u, method, path string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	req = req.WithContext(apirequest.WithUser(req.Context(), &user.DefaultInfo{Name: u}))
	rec := httptest.NewRecorder()
	v.ServeHTTP(rec, req)
	return rec
}

func viewPath(cluster, rest string) string {
	return Prefix + string(exportCluster) + "/" + exportName + "/clusters/" + cluster + rest
}

func TestViewForwardsWildcardListsWithTheExportsIdentity(t *testing.T) {
	v, shard := newTestView(t, binding("b"))
	rec := serve(v, "provider", http.MethodGet, viewPath("*", "/apis/example.io/v1/widgets?limit=5"))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if got := shard.asked(); !slices.Equal(got, []string{"/clusters/*/apis/example.io/v1/widgets:" + identity + "?limit=5"}) {
		t.Errorf("shard was asked %v", got)
	}
}

func TestViewRefusesWhoeverHasNoContentAccessWithoutTellingWhetherTheExportExists(t *testing.T) {
	v, shard := newTestView(t, binding("b"))
	for _, path := range []string{viewPath("*", "/apis/example.io/v1/widgets"), Prefix + "provider/no-such-export/clusters/*/apis/example.io/v1/widgets"} {
		if rec := serve(v, "someone", http.MethodGet, path); rec.Code != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", path, rec.Code)
		}
	}
	if len(shard.asked()) != 0 {
		t.Errorf("the shard was asked %v for a refused caller", shard.asked())
	}
}

func TestViewServesOnlyTheExportsResourcesInWorkspacesThatBindIt(t *testing.T) {
	v, shard := newTestView(t, binding("b"))
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{http.MethodGet, viewPath("b", "/apis/example.io/v1/namespaces/team/widgets/w"), http.StatusOK},
		{http.MethodGet, viewPath("c", "/apis/example.io/v1/namespaces/team/widgets/w"), http.StatusNotFound},
		{http.MethodGet, viewPath("b", "/api/v1/namespaces/team/secrets"), http.StatusNotFound},
		{http.MethodGet, viewPath("b", "/api/v1/namespaces/team/configmaps"), http.StatusNotFound},
		{http.MethodPost, viewPath("*", "/apis/example.io/v1/namespaces/team/widgets"), http.StatusMethodNotAllowed},
	} {
		if rec := serve(v, "provider", tc.method, tc.path); rec.Code != tc.code {
			t.Errorf("%s %s: status %d, want %d: %s", tc.method, tc.path, rec.Code, tc.code, rec.Body)
		}
	}
	if got := shard.asked(); len(got) != 1 || !strings.HasPrefix(got[0], "/clusters/b/apis/example.io/v1/namespaces/team/widgets/w") {
		t.Errorf("shard was asked %v", got)
	}
}

func TestViewListsOnlyClaimedObjectsTheBindingSelected(t *testing.T) {
	v, shard := newTestView(t, binding("b", accepted([]string{"list", "watch"}, map[string]string{"app": "x"})), binding("c"))
	rec := serve(v, "provider", http.MethodGet, viewPath("*", "/api/v1/configmaps?labelSelector=team%3Da"))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	key, value := permissionclaim.LabelKeyAndValue(exportCluster, exportName, configMaps(nil))
	if got := shard.asked(); len(got) != 1 || !strings.Contains(got[0], "labelSelector="+url.QueryEscape("team=a,"+key+"="+value)) {
		t.Errorf("shard was asked %v, want the caller's and the claim's label selector", got)
	}
	var list struct {
		Items []struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Metadata.Name != "selected" {
		t.Errorf("items %+v, want only the selected configmap of b", list.Items)
	}
	// Verbs not accepted are refused.
	if rec := serve(v, "provider", http.MethodGet, viewPath("b", "/api/v1/namespaces/team/configmaps/selected")); rec.Code != http.StatusForbidden {
		t.Errorf("get without the get verb: status %d, want 403", rec.Code)
	}
}

// A claim the export makes that nobody accepted lists empty across
// workspaces, as in kcp; in a workspace it is not found.
func TestViewListsUnacceptedClaimsEmpty(t *testing.T) {
	v, _ := newTestView(t, binding("b"))
	rec := serve(v, "provider", http.MethodGet, viewPath("*", "/api/v1/configmaps"))
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), "selected") {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if rec := serve(v, "provider", http.MethodGet, viewPath("b", "/api/v1/namespaces/team/configmaps")); rec.Code != http.StatusNotFound {
		t.Errorf("list in a workspace that did not accept: status %d, want 404", rec.Code)
	}
}

func TestViewWatchDropsUnselectedObjectsAndDeletesThoseThatLeaveTheSelection(t *testing.T) {
	v, _ := newTestView(t, binding("b", accepted([]string{"list", "watch"}, map[string]string{"app": "x"})))
	rec := serve(v, "provider", http.MethodGet, viewPath("*", "/api/v1/configmaps?watch=true"))
	var got []string
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		var e struct {
			Type   string `json:"type"`
			Object struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			} `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Type+" "+e.Object.Metadata.Name)
	}
	if want := []string{"ADDED selected", "DELETED selected"}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

func TestDiscoveryShowsTheExportsResourcesOnly(t *testing.T) {
	v, _ := newTestView(t, binding("b"))
	rec := serve(v, "provider", http.MethodGet, viewPath("*", "/apis/example.io/v1"))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	list := &metav1.APIResourceList{}
	body, _ := io.ReadAll(rec.Body)
	if err := json.Unmarshal(body, list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range list.APIResources {
		names = append(names, r.Name)
	}
	if want := []string{"widgets", "widgets/status"}; !slices.Equal(names, want) {
		t.Errorf("resources %v, want %v", names, want)
	}
	if rec := serve(v, "provider", http.MethodGet, viewPath("c", "/apis/example.io/v1")); rec.Code != http.StatusNotFound {
		t.Errorf("discovery in a workspace without a binding: status %d, want 404", rec.Code)
	}
}

// client-go sends Kubernetes' kinds as protobuf; their labels are read too.
func TestBodyLabelsReadsJSONAndProtobuf(t *testing.T) {
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"app": "x"}}}
	info, ok := runtime.SerializerInfoForMediaType(clientgoscheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	var pb strings.Builder
	if err := info.Serializer.Encode(cm, &pb); err != nil {
		t.Fatal(err)
	}
	for contentType, body := range map[string][]byte{
		runtime.ContentTypeProtobuf: []byte(pb.String()),
		runtime.ContentTypeJSON:     []byte(`{"metadata":{"name":"a","labels":{"app":"x"}}}`),
	} {
		got, err := bodyLabels(contentType, body)
		if err != nil || got["app"] != "x" {
			t.Errorf("%s: labels %v, err %v", contentType, got, err)
		}
	}
	if _, err := bodyLabels(runtime.ContentTypeJSON, []byte("k8s\x00")); err == nil {
		t.Error("garbage as JSON accepted")
	}
}

// A shard where nothing serves a claimed resource (nobody binds its
// export there) lists it empty across workspaces, as kcp does, instead of
// answering 404 and wedging informers.
func TestViewListsAClaimedResourceTheShardDoesNotServeEmpty(t *testing.T) {
	vnets := apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Group: "networking.example.io", Resource: "vnets"}, IdentityHash: "net", Verbs: []string{"*"}}
	b := binding("b", apisv1alpha2.AcceptablePermissionClaim{
		ScopedPermissionClaim: apisv1alpha2.ScopedPermissionClaim{PermissionClaim: vnets, Selector: apisv1alpha2.PermissionClaimSelector{MatchAll: true}},
		State:                 apisv1alpha2.ClaimAccepted,
	})
	b.Status.ExportPermissionClaims = append(b.Status.ExportPermissionClaims, vnets)
	v, _ := newTestView(t, b)
	rec := serve(v, "provider", http.MethodGet, viewPath("*", "/apis/networking.example.io/v1/vnets"))
	var list struct {
		Items    []interface{}   `json:"items"`
		Metadata metav1.ListMeta `json:"metadata"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &list); rec.Code != http.StatusOK || err != nil || list.Items == nil || len(list.Items) != 0 {
		t.Fatalf("status %d, err %v: %s", rec.Code, err, rec.Body)
	}
	if rec := serve(v, "provider", http.MethodGet, viewPath("b", "/apis/networking.example.io/v1/vnets")); rec.Code != http.StatusNotFound {
		t.Errorf("in a workspace: status %d, want the shard's 404", rec.Code)
	}
}

func TestEmptyWatchEndsWithItsTimeout(t *testing.T) {
	vnets := apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Group: "networking.example.io", Resource: "vnets"}, IdentityHash: "net", Verbs: []string{"*"}}
	b := binding("b")
	b.Status.ExportPermissionClaims = append(b.Status.ExportPermissionClaims, vnets)
	v, _ := newTestView(t, b)
	rec := serve(v, "provider", http.MethodGet, viewPath("*", "/apis/networking.example.io/v1/vnets?watch=true&timeoutSeconds=1"))
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
		t.Fatalf("status %d: %q", rec.Code, rec.Body)
	}
}

// kcp's view always shows the export's owner the export's bindings,
// read-only, selected by the export label; a claim of apibindings
// accepted in a workspace decides there instead.
func TestViewOfOpensTheExportsBindingsReflexively(t *testing.T) {
	claimer := binding("c", apisv1alpha2.AcceptablePermissionClaim{
		ScopedPermissionClaim: apisv1alpha2.ScopedPermissionClaim{
			PermissionClaim: apisv1alpha2.PermissionClaim{GroupResource: apisv1alpha2.GroupResource{Group: "apis.kcp.io", Resource: "apibindings"}, Verbs: []string{"*"}},
			Selector:        apisv1alpha2.PermissionClaimSelector{MatchAll: true},
		},
		State: apisv1alpha2.ClaimAccepted,
	})
	claimer.Status.ExportPermissionClaims = append(claimer.Status.ExportPermissionClaims, claimer.Spec.PermissionClaims[0].PermissionClaim)
	v := viewOf(exportCluster, exportName, []*apisv1alpha2.APIBinding{binding("b"), claimer})
	abs := v.claimed[apiBindings]
	if abs == nil || len(abs.clusters) != 2 {
		t.Fatalf("apibindings: %+v", abs)
	}
	reflexive := abs.clusters["b"]
	if !reflexive.allows("list") || !reflexive.allows("watch") || !reflexive.allows("get") || reflexive.allows("create") || reflexive.allows("delete") {
		t.Errorf("reflexive verbs %v, want get, list, watch", reflexive.verbs)
	}
	want := permissionclaim.ExportLabelKey + "=" + permissionclaim.ExportLabelValue(exportCluster, exportName)
	if reflexive.label.String() != want {
		t.Errorf("reflexive label %q, want %q", reflexive.label, want)
	}
	if g := abs.clusters["c"]; !g.allows("delete") || g.label.String() == want {
		t.Errorf("accepted claim of apibindings in c: %+v", g)
	}
}

func TestViewServesTheExportsBindingsReadOnly(t *testing.T) {
	v, shard := newTestView(t, binding("b"))
	rec := serve(v, "provider", http.MethodGet, viewPath("*", "/apis/apis.kcp.io/v1alpha2/apibindings"))
	if rec.Code != http.StatusOK {
		t.Fatalf("list: status %d: %s", rec.Code, rec.Body)
	}
	want := url.QueryEscape(permissionclaim.ExportLabelKey + "=" + permissionclaim.ExportLabelValue(exportCluster, exportName))
	if got := shard.asked(); len(got) != 1 || !strings.Contains(got[0], "labelSelector="+want) {
		t.Errorf("shard was asked %v, want the export label selector", got)
	}
	if rec := serve(v, "provider", http.MethodDelete, viewPath("b", "/apis/apis.kcp.io/v1alpha2/apibindings/widgets")); rec.Code != http.StatusForbidden {
		t.Errorf("delete: status %d, want 403", rec.Code)
	}
}
