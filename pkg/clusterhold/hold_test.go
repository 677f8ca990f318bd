package clusterhold

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func request(verb string, groups ...string) *http.Request {
	req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/configmaps", nil)
	ctx := logicalcluster.WithCluster(req.Context(), "moving")
	ctx = apirequest.WithRequestInfo(ctx, &apirequest.RequestInfo{IsResourceRequest: true, Verb: verb, APIVersion: "v1", Resource: "configmaps"})
	ctx = apirequest.WithUser(ctx, &user.DefaultInfo{Name: "alice", Groups: groups})
	return req.WithContext(ctx)
}

func TestHeldWritesAre429WithRetryAfterAndDrainFirst(t *testing.T) {
	r := New()
	release := make(chan struct{})
	started := make(chan struct{})
	var served int
	h := WithHeldWrites(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		served++
		if req.Header.Get("X-Block") != "" {
			close(started)
			<-release
		}
	}), r, scheme.Codecs, nil)

	// A write in flight when the hold begins is waited for.
	inFlight := request("create")
	inFlight.Header.Set("X-Block", "1")
	finished := make(chan struct{})
	go func() { h.ServeHTTP(httptest.NewRecorder(), inFlight); close(finished) }()
	<-started
	drained := r.Hold("moving")
	select {
	case <-drained:
		t.Fatal("the hold drained with a write in flight")
	default:
	}
	close(release)
	<-finished
	<-drained

	for verb, want := range map[string]int{"create": 429, "update": 429, "patch": 429, "delete": 429, "get": 429, "list": 429, "watch": 429} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, request(verb))
		if rec.Code != want {
			t.Errorf("%s while held: %d, want %d", verb, rec.Code, want)
		}
		if want == 429 && rec.Header().Get("Retry-After") != "1" {
			t.Errorf("%s while held has Retry-After %q", verb, rec.Header().Get("Retry-After"))
		}
		// The front-proxy keeps what carries the mark.
		if want == 429 && rec.Header().Get(HoldHeader) == "" {
			t.Errorf("%s while held has no %s", verb, HoldHeader)
		}
	}
	// The system may read, and write what the move itself writes; its
	// controllers' other writes wait as everyone's.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, request("get", "system:masters"))
	if rec.Code != 200 {
		t.Errorf("the system's read while held: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, request("create", "system:masters"))
	if rec.Code != 429 {
		t.Errorf("the system's write of a configmap while held: %d, want 429", rec.Code)
	}
	move := request("create", "system:masters")
	info, _ := apirequest.RequestInfoFrom(move.Context())
	info.APIGroup, info.Resource = "migration.kcp.io", "logicalclusterdumps"
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, move)
	if rec.Code != 200 {
		t.Errorf("the move's own dump while held: %d", rec.Code)
	}
	r.Release("moving")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, request("create"))
	if rec.Code != 200 {
		t.Errorf("a write after the release: %d", rec.Code)
	}
}

func TestAHoldEndsWatches(t *testing.T) {
	r := New()
	watching := make(chan context.Context, 1)
	h := WithHeldWrites(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if apirequestVerb(req) == "watch" {
			watching <- req.Context()
			<-req.Context().Done()
		}
	}), r, scheme.Codecs, nil)
	done := make(chan struct{})
	go func() { h.ServeHTTP(httptest.NewRecorder(), request("watch")); close(done) }()
	<-watching
	r.Hold("moving")
	<-done
}

func TestWatchesFromTheOriginsResourceVersionsAreGoneAfterAMoveIn(t *testing.T) {
	r := New()
	r.MovedIn("moving", 100)
	h := WithHeldWrites(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), r, scheme.Codecs, nil)
	for rv, want := range map[string]int{"99": 410, "1": 410, "100": 200, "250": 200, "0": 200, "": 200} {
		req := request("watch")
		req.URL.RawQuery = "watch=true&resourceVersion=" + rv
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("a watch from resource version %q: %d, want %d", rv, rec.Code, want)
		}
	}
}

func apirequestVerb(req *http.Request) string {
	info, _ := apirequest.RequestInfoFrom(req.Context())
	return info.Verb
}

func TestACopyServedElsewhereTakesOnlyTheMovesWrites(t *testing.T) {
	elsewhere := func(cluster logicalcluster.Name) Marks { return Marks{ServedElsewhere: cluster == "moving"} }
	h := WithHeldWrites(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), New(), scheme.Codecs, elsewhere)
	move := request("update", user.SystemPrivilegedGroup)
	info, _ := apirequest.RequestInfoFrom(move.Context())
	info.APIGroup, info.Resource = "core.kcp.io", "logicalclusters"
	for name, c := range map[string]struct {
		req  *http.Request
		want int
	}{
		"a tenant's read":            {request("get"), 429},
		"a tenant's write":           {request("create"), 429},
		"the system's read":          {request("list", user.SystemPrivilegedGroup), 200},
		"the system's watch":         {request("watch", user.SystemPrivilegedGroup), 200},
		"a controller's write":       {request("update", user.SystemPrivilegedGroup), 503},
		"the LogicalCluster's marks": {move, 200},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, c.req)
		if rec.Code != c.want {
			t.Errorf("%s to a copy served elsewhere: %d, want %d", name, rec.Code, c.want)
		}
		// client-go waits out a Retry-After in the caller; controllers must not.
		if c.want == 503 && rec.Header().Get("Retry-After") != "" {
			t.Errorf("%s to a copy served elsewhere has Retry-After", name)
		}
	}
}

// A shard restarted mid-cut-over has an empty Registry: the stored marks
// alone hold the cluster, and tell watches from before a move-in apart.
func TestStoredMarksHoldWithoutTheRegistry(t *testing.T) {
	marks := func(cluster logicalcluster.Name) Marks {
		if cluster != "moving" {
			return Marks{}
		}
		return Marks{WritesHeld: true, MovedInAt: 100}
	}
	h := WithHeldWrites(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), New(), scheme.Codecs, marks)
	move := request("update", user.SystemPrivilegedGroup)
	info, _ := apirequest.RequestInfoFrom(move.Context())
	info.APIGroup, info.Resource = "core.kcp.io", "logicalclusters"
	oldWatch := request("watch", user.SystemPrivilegedGroup)
	oldWatch.URL.RawQuery = "watch=true&resourceVersion=99"
	for name, c := range map[string]struct {
		req  *http.Request
		want int
	}{
		"a tenant's read":            {request("get"), 429},
		"a tenant's write":           {request("create"), 429},
		"a controller's write":       {request("update", user.SystemPrivilegedGroup), 429},
		"the system's read":          {request("list", user.SystemPrivilegedGroup), 200},
		"the LogicalCluster's marks": {move, 200},
		"a watch from before":        {oldWatch, 410},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, c.req)
		if rec.Code != c.want {
			t.Errorf("%s to a cluster held by its marks: %d, want %d", name, rec.Code, c.want)
		}
	}
}
