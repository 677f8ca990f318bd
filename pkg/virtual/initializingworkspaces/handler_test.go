package initializingworkspaces

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

const (
	mine  = "root:mine"
	other = "root:other"
)

// fakeShard serves LogicalClusters by cluster, SubjectAccessReviews that
// allow the users in allowed, and records every other request.
type fakeShard struct {
	mu       sync.Mutex
	clusters map[logicalcluster.Name]*corev1alpha1.LogicalCluster
	allowed  map[string]bool
	reviews  []authorizationv1.SubjectAccessReview
	writes   []*corev1alpha1.LogicalCluster
	proxied  []*http.Request
	events   []rawEvent
}

func lc(cluster string, phase corev1alpha1.LogicalClusterPhaseType, initializers ...corev1alpha1.LogicalClusterInitializer) *corev1alpha1.LogicalCluster {
	return &corev1alpha1.LogicalCluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: corev1alpha1.SchemeGroupVersion.String(), Kind: "LogicalCluster"},
		ObjectMeta: metav1.ObjectMeta{Name: "cluster", ResourceVersion: "7", Annotations: map[string]string{logicalcluster.AnnotationKey: cluster}},
		Spec:       corev1alpha1.LogicalClusterSpec{Initializers: initializers},
		Status:     corev1alpha1.LogicalClusterStatus{Phase: phase, Initializers: initializers},
	}
}

func (f *fakeShard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	writeJSON := func(code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(v)
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/subjectaccessreviews"):
		var review authorizationv1.SubjectAccessReview
		_ = json.NewDecoder(r.Body).Decode(&review)
		f.reviews = append(f.reviews, review)
		review.Status.Allowed = f.allowed[review.Spec.User] && strings.HasPrefix(r.URL.Path, "/clusters/root/")
		writeJSON(http.StatusCreated, review)
	case r.URL.Path == "/clusters/*"+logicalClustersPath && r.URL.Query().Get("watch") == "true":
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		for _, ev := range f.events {
			_ = enc.Encode(ev)
		}
	case r.URL.Path == "/clusters/*"+logicalClustersPath:
		list := map[string]any{"apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalClusterList", "metadata": map[string]any{"resourceVersion": "9"}}
		var items []any
		for _, c := range f.clusters {
			items = append(items, c)
		}
		list["items"] = items
		writeJSON(http.StatusOK, list)
	case strings.HasSuffix(r.URL.Path, logicalClustersPath+"/cluster") || strings.HasSuffix(r.URL.Path, logicalClustersPath+"/cluster/status"):
		cluster := logicalcluster.Name(strings.Split(strings.TrimPrefix(r.URL.Path, "/clusters/"), "/")[0])
		c, ok := f.clusters[cluster]
		if !ok {
			writeJSON(http.StatusNotFound, apierrors.NewNotFound(logicalClusters, "cluster").ErrStatus)
			return
		}
		if r.Method == http.MethodPut {
			updated := &corev1alpha1.LogicalCluster{}
			_ = json.NewDecoder(r.Body).Decode(updated)
			f.writes = append(f.writes, updated)
			c = updated
		}
		writeJSON(http.StatusOK, c)
	default:
		f.proxied = append(f.proxied, r.Clone(context.Background()))
		writeJSON(http.StatusOK, map[string]string{"kind": "NamespaceList", "apiVersion": "v1"})
	}
}

// view starts a fake shard and a view of it in front of which every
// request is made as user.
func view(t *testing.T, l Lifecycle, f *fakeShard, who *user.DefaultInfo) (*httptest.Server, *httptest.Server) {
	t.Helper()
	shard := httptest.NewServer(f)
	t.Cleanup(shard.Close)
	h, err := New(Config{ShardConfig: &rest.Config{Host: shard.URL}, Lifecycle: l})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), who)))
	}))
	t.Cleanup(front.Close)
	return shard, front
}

func do(t *testing.T, method, url, contentType, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer secret-of-the-caller")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

var alice = &user.DefaultInfo{Name: "alice", Groups: []string{"team-1", user.AllAuthenticated}}

func newFake() *fakeShard {
	return &fakeShard{
		clusters: map[logicalcluster.Name]*corev1alpha1.LogicalCluster{
			"waiting": lc("waiting", corev1alpha1.LogicalClusterPhaseInitializing, mine, other),
			"others":  lc("others", corev1alpha1.LogicalClusterPhaseInitializing, other),
			"ready":   lc("ready", corev1alpha1.LogicalClusterPhaseReady),
		},
		allowed: map[string]bool{"alice": true},
	}
}

func TestWildcardListShowsOnlyClustersWaitingForTheInitializer(t *testing.T) {
	f := newFake()
	_, front := view(t, Initializing, f, alice)
	code, body := do(t, http.MethodGet, front.URL+"/services/initializingworkspaces/"+mine+"/clusters/*"+logicalClustersPath, "", "")
	if code != http.StatusOK {
		t.Fatalf("list: %d %s", code, body)
	}
	var list corev1alpha1.LogicalClusterList
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Annotations[logicalcluster.AnnotationKey] != "waiting" || list.ResourceVersion != "9" {
		t.Fatalf("list %+v, want only cluster waiting at resourceVersion 9", list)
	}
	if len(f.reviews) != 1 {
		t.Fatalf("%d access reviews, want 1", len(f.reviews))
	}
	r := f.reviews[0].Spec
	if r.User != "alice" || !slices.Equal(r.Groups, alice.Groups) || r.ResourceAttributes.Verb != "initialize" ||
		r.ResourceAttributes.Resource != "workspacetypes" || r.ResourceAttributes.Group != "tenancy.kcp.io" || r.ResourceAttributes.Name != "mine" {
		t.Errorf("review %+v, want alice's initialize on workspacetypes mine", r)
	}
	// The decision is reused.
	do(t, http.MethodGet, front.URL+"/services/initializingworkspaces/"+mine+"/clusters/*"+logicalClustersPath, "", "")
	if len(f.reviews) != 1 {
		t.Errorf("%d access reviews after a second request, want the first reused", len(f.reviews))
	}
}

func TestUsersWithoutTheVerbAreForbidden(t *testing.T) {
	f := newFake()
	_, front := view(t, Initializing, f, &user.DefaultInfo{Name: "mallory"})
	for _, path := range []string{"/clusters/*" + logicalClustersPath, "/clusters/waiting/api/v1/namespaces", "/clusters/waiting" + logicalClustersPath + "/cluster"} {
		code, body := do(t, http.MethodGet, front.URL+"/services/initializingworkspaces/"+mine+path, "", "")
		if code != http.StatusForbidden || !strings.Contains(string(body), `may not initialize workspaces of type root:mine`) {
			t.Errorf("%s: %d %s, want 403 naming the verb and type", path, code, body)
		}
	}
	if len(f.proxied) != 0 {
		t.Errorf("forbidden requests reached the shard: %v", f.proxied)
	}
}

func TestMalformedViewsAreRefused(t *testing.T) {
	f := newFake()
	_, front := view(t, Initializing, f, alice)
	for path, want := range map[string]int{
		"/services/initializingworkspaces/nocolon/clusters/*" + logicalClustersPath:                   http.StatusBadRequest,
		"/services/initializingworkspaces/system:apibindings/clusters/*" + logicalClustersPath:        http.StatusForbidden,
		"/services/initializingworkspaces/" + mine + "/clusters/*/api/v1/namespaces":                  http.StatusNotFound,
		"/services/initializingworkspaces/" + mine + "/clusters/Bad_Name/api/v1/namespaces":           http.StatusBadRequest,
		"/services/initializingworkspaces/" + mine:                                                    http.StatusNotFound,
		"/services/terminatingworkspaces/" + mine + "/clusters/*" + logicalClustersPath:               http.StatusNotFound,
		"/services/initializingworkspaces/" + mine + "/clusters/waiting" + logicalClustersPath + "/x": http.StatusNotFound,
	} {
		if code, body := do(t, http.MethodGet, front.URL+path, "", ""); code != want {
			t.Errorf("%s: %d %s, want %d", path, code, body, want)
		}
	}
	if code, _ := do(t, http.MethodDelete, front.URL+"/services/initializingworkspaces/"+mine+"/clusters/*"+logicalClustersPath, "", ""); code != http.StatusMethodNotAllowed {
		t.Errorf("wildcard delete: %d, want 405", code)
	}
}

func TestContentIsProxiedAsTheCallerWithTheInitializerGroup(t *testing.T) {
	f := newFake()
	_, front := view(t, Initializing, f, alice)
	code, body := do(t, http.MethodGet, front.URL+"/services/initializingworkspaces/"+mine+"/clusters/waiting/api/v1/namespaces?limit=3", "", "")
	if code != http.StatusOK || len(f.proxied) != 1 {
		t.Fatalf("proxy: %d %s, %d proxied", code, body, len(f.proxied))
	}
	r := f.proxied[0]
	if r.URL.Path != "/clusters/waiting/api/v1/namespaces" || r.URL.RawQuery != "limit=3" {
		t.Errorf("proxied to %s, want /clusters/waiting/api/v1/namespaces?limit=3", r.URL)
	}
	if got := r.Header.Get("Impersonate-User"); got != "alice" {
		t.Errorf("Impersonate-User %q, want alice", got)
	}
	if got := r.Header.Values("Impersonate-Group"); !slices.Contains(got, "team-1") || !slices.Contains(got, "system:kcp:initializer:root:mine") {
		t.Errorf("Impersonate-Group %v, want team-1 and system:kcp:initializer:root:mine", got)
	}
	if got := r.Header.Get("Authorization"); strings.Contains(got, "secret-of-the-caller") {
		t.Errorf("the caller's credential reached the shard: %q", got)
	}

	// Clusters that do not wait for the initializer are not entered.
	for _, cluster := range []string{"others", "ready", "gone"} {
		code, body := do(t, http.MethodGet, front.URL+"/services/initializingworkspaces/"+mine+"/clusters/"+cluster+"/api/v1/namespaces", "", "")
		if code != http.StatusForbidden || !strings.Contains(string(body), "does not wait for the initializer root:mine") {
			t.Errorf("%s: %d %s, want 403", cluster, code, body)
		}
	}
	if len(f.proxied) != 1 {
		t.Errorf("%d requests proxied, want 1", len(f.proxied))
	}
}

func TestInitializerRemovesOnlyItself(t *testing.T) {
	f := newFake()
	_, front := view(t, Initializing, f, alice)
	url := front.URL + "/services/initializingworkspaces/" + mine + "/clusters/waiting" + logicalClustersPath + "/cluster"

	code, body := do(t, http.MethodGet, url, "", "")
	if code != http.StatusOK || !strings.Contains(string(body), `"waiting"`) {
		t.Fatalf("get: %d %s", code, body)
	}
	if code, _ := do(t, http.MethodGet, front.URL+"/services/initializingworkspaces/"+mine+"/clusters/others"+logicalClustersPath+"/cluster", "", ""); code != http.StatusNotFound {
		t.Errorf("get of a cluster that does not wait: %d, want 404", code)
	}

	for name, tc := range map[string]struct{ method, contentType, body string }{
		"other initializer removed": {http.MethodPatch, "application/merge-patch+json", `{"status":{"initializers":["root:mine"]}}`},
		"all initializers removed":  {http.MethodPatch, "application/merge-patch+json", `{"status":{"initializers":[]}}`},
		"phase changed":             {http.MethodPatch, "application/merge-patch+json", `{"status":{"initializers":["root:other"],"phase":"Ready"}}`},
		"stale object":              {http.MethodPatch, "application/merge-patch+json", `{"metadata":{"resourceVersion":"3"},"status":{"initializers":["root:other"]}}`},
		"main resource":             {http.MethodPut, "application/json", `{}`},
		"server-side apply":         {http.MethodPatch, "application/apply-patch+yaml", `{}`},
		"delete":                    {http.MethodDelete, "", ""},
	} {
		u := url + "/status"
		if name == "main resource" || name == "delete" {
			u = url
		}
		code, body := do(t, tc.method, u, tc.contentType, tc.body)
		if code < 400 || code >= 500 {
			t.Errorf("%s: %d %s, want a 4xx", name, code, body)
		}
	}
	if len(f.writes) != 0 {
		t.Fatalf("refused updates wrote %d times", len(f.writes))
	}

	code, body = do(t, http.MethodPatch, url+"/status", "application/json-patch+json", `[{"op":"remove","path":"/status/initializers/0"}]`)
	if code != http.StatusOK {
		t.Fatalf("release: %d %s", code, body)
	}
	if len(f.writes) != 1 || !slices.Equal(f.writes[0].Status.Initializers, []corev1alpha1.LogicalClusterInitializer{other}) ||
		f.writes[0].Status.Phase != corev1alpha1.LogicalClusterPhaseInitializing || f.writes[0].ResourceVersion != "7" {
		t.Fatalf("writes %+v, want one that drops root:mine at resourceVersion 7", f.writes)
	}
}

func TestTerminatorViewNeedsTheTerminateVerbAndADeletedCluster(t *testing.T) {
	f := newFake()
	now := metav1.Now()
	deleted := lc("deleted", corev1alpha1.LogicalClusterPhaseTerminating)
	deleted.DeletionTimestamp = &now
	deleted.Spec.Terminators = []corev1alpha1.LogicalClusterTerminator{mine}
	deleted.Status.Terminators = []corev1alpha1.LogicalClusterTerminator{mine}
	living := lc("living", corev1alpha1.LogicalClusterPhaseReady)
	living.Status.Terminators = []corev1alpha1.LogicalClusterTerminator{mine}
	f.clusters["deleted"], f.clusters["living"] = deleted, living
	_, front := view(t, Terminating, f, alice)

	code, body := do(t, http.MethodGet, front.URL+"/services/terminatingworkspaces/"+mine+"/clusters/*"+logicalClustersPath, "", "")
	var list corev1alpha1.LogicalClusterList
	if err := json.Unmarshal(body, &list); err != nil || code != http.StatusOK {
		t.Fatalf("list: %d %s", code, body)
	}
	if len(list.Items) != 1 || list.Items[0].Annotations[logicalcluster.AnnotationKey] != "deleted" {
		t.Errorf("list %+v, want only the deleted cluster", list.Items)
	}
	if f.reviews[0].Spec.ResourceAttributes.Verb != "terminate" {
		t.Errorf("reviewed verb %q, want terminate", f.reviews[0].Spec.ResourceAttributes.Verb)
	}
	code, body = do(t, http.MethodGet, front.URL+"/services/terminatingworkspaces/"+mine+"/clusters/deleted/api/v1/namespaces", "", "")
	if code != http.StatusOK || !slices.Contains(f.proxied[0].Header.Values("Impersonate-Group"), "system:kcp:terminator:root:mine") {
		t.Errorf("proxy into the deleted cluster: %d %s", code, body)
	}
	code, body = do(t, http.MethodPatch, front.URL+"/services/terminatingworkspaces/"+mine+"/clusters/deleted"+logicalClustersPath+"/cluster/status",
		"application/merge-patch+json", `{"status":{"terminators":null}}`)
	if code != http.StatusOK || len(f.writes) != 1 || len(f.writes[0].Status.Terminators) != 0 {
		t.Errorf("release: %d %s, writes %+v", code, body, f.writes)
	}
}

func TestWatchTurnsClustersLeavingTheViewIntoDeletions(t *testing.T) {
	f := newFake()
	event := func(typ watch.EventType, c *corev1alpha1.LogicalCluster) rawEvent {
		raw, _ := json.Marshal(c)
		return rawEvent{Type: typ, Object: raw}
	}
	released := lc("waiting", corev1alpha1.LogicalClusterPhaseInitializing, other)
	released.Spec.Initializers = []corev1alpha1.LogicalClusterInitializer{mine, other}
	// listed: a cluster the client listed before the watch; it passes the
	// initializer before the first event the watch sees of it.
	listed := lc("listed", corev1alpha1.LogicalClusterPhaseReady)
	listed.Spec.Initializers = []corev1alpha1.LogicalClusterInitializer{mine}
	scheduling := lc("new", corev1alpha1.LogicalClusterPhaseScheduling, mine)
	f.events = []rawEvent{
		event(watch.Added, scheduling),
		event(watch.Modified, lc("entering", corev1alpha1.LogicalClusterPhaseInitializing, mine)),
		event(watch.Modified, lc("entering", corev1alpha1.LogicalClusterPhaseInitializing, mine)),
		event(watch.Modified, lc("others", corev1alpha1.LogicalClusterPhaseInitializing, other)),
		event(watch.Added, lc("waiting", corev1alpha1.LogicalClusterPhaseInitializing, mine, other)),
		{Type: watch.Bookmark, Object: json.RawMessage(`{"kind":"LogicalCluster","metadata":{"resourceVersion":"12"}}`)},
		event(watch.Modified, released),
		event(watch.Modified, released),
		event(watch.Modified, listed),
		event(watch.Modified, listed),
		event(watch.Deleted, listed),
	}
	_, front := view(t, Initializing, f, alice)
	code, body := do(t, http.MethodGet, front.URL+"/services/initializingworkspaces/"+mine+"/clusters/*"+logicalClustersPath+"?watch=true", "", "")
	if code != http.StatusOK {
		t.Fatalf("watch: %d %s", code, body)
	}
	var got []string
	dec := json.NewDecoder(strings.NewReader(string(body)))
	for {
		var ev rawEvent
		if dec.Decode(&ev) != nil {
			break
		}
		var obj corev1alpha1.LogicalCluster
		_ = json.Unmarshal(ev.Object, &obj)
		got = append(got, string(ev.Type)+" "+obj.Annotations[logicalcluster.AnnotationKey])
	}
	want := []string{"ADDED entering", "MODIFIED entering", "ADDED waiting", "BOOKMARK ", "DELETED waiting", "DELETED listed"}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

func TestParseSplitsInitializerAndCluster(t *testing.T) {
	h := &handler{lifecycle: Initializing}
	got, err := h.parse("/services/initializingworkspaces/root:org:mine/clusters/abc/api/v1/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	cleaned, err := h.parse("/services/initializingworkspaces/root:mine/clusters/abc/apis/core.kcp.io/v1alpha1//x/../logicalclusters/cluster/status")
	if err != nil || cleaned.rest != logicalClustersPath+"/cluster/status" {
		t.Errorf("parsed %+v (%v), want the cleaned path %s/cluster/status", cleaned, err, logicalClustersPath)
	}
	if got.name != "root:org:mine" || got.typeCluster != "root:org" || got.typeName != "mine" || got.cluster != "abc" || got.rest != "/api/v1/namespaces" {
		t.Errorf("parsed %+v", got)
	}
	if Initializing.URL("https://vw:6444/", "root:mine") != "https://vw:6444/services/initializingworkspaces/root:mine" {
		t.Errorf("URL %q", Initializing.URL("https://vw:6444/", "root:mine"))
	}
	if Terminating.URL("https://vw", "abc:t") != "https://vw/services/terminatingworkspaces/abc:t" {
		t.Errorf("URL %q", Terminating.URL("https://vw", "abc:t"))
	}
}

// TestStatusBodiesAreJSONOrYAML: a PUT of the status in a media type the
// view does not read gets 415 naming the ones it does; YAML is read like
// JSON.
func TestStatusBodiesAreJSONOrYAML(t *testing.T) {
	f := newFake()
	_, front := view(t, Initializing, f, alice)
	url := front.URL + "/services/initializingworkspaces/" + mine + "/clusters/waiting" + logicalClustersPath + "/cluster/status"
	for _, contentType := range []string{"application/vnd.kubernetes.protobuf", "application/cbor", "application/x-www-form-urlencoded", "text/garbage"} {
		code, body := do(t, http.MethodPut, url, contentType, "k8s\x00")
		if code != http.StatusUnsupportedMediaType || !strings.Contains(string(body), "application/json, application/yaml") {
			t.Errorf("PUT as %s: %d %s, want 415 naming application/json and application/yaml", contentType, code, body)
		}
	}
	// Decoded, then refused for what it asks: the status keeps root:other.
	if code, body := do(t, http.MethodPut, url, "application/yaml", "status:\n  initializers: []\n"); code != http.StatusUnprocessableEntity {
		t.Errorf("PUT as YAML: %d %s, want 422", code, body)
	}
	if len(f.writes) != 0 {
		t.Fatalf("refused updates wrote %d times", len(f.writes))
	}
}
