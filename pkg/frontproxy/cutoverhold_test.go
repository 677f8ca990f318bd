package frontproxy

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/component-base/metrics/testutil"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/clusterhold"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// fakeShard answers like a shard: the hold's 429 while held tells it to,
// else 201 with the body it received.
type fakeShard struct {
	name   string
	server *httptest.Server
	// hold answers the nth request (from 1): held, or a 429 without the
	// hold's mark (a tenant's webhook).
	hold     func(n int) (held, forged bool)
	requests atomic.Int32
	mu       sync.Mutex
	bodies   []string
}

func newFakeShard(t *testing.T, name string, hold func(n int) (bool, bool)) *fakeShard {
	t.Helper()
	s := &fakeShard{name: name, hold: hold}
	s.server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(s.requests.Add(1))
		if s.hold != nil {
			if held, forged := s.hold(n); held || forged {
				// Refused before the body is read, as the shard's hold does.
				w.Header().Set("Retry-After", "1")
				if held {
					w.Header().Set(clusterhold.HoldHeader, "true")
				}
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = io.WriteString(w, `{"kind":"Status","code":429,"message":"the workspace is moving to another shard; retry"}`)
				return
			}
		}
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, string(body))
		s.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, s.name+":"+string(body))
	}))
	t.Cleanup(s.server.Close)
	return s
}

// holdingProxy is a front-proxy with cluster "moving" on origin, and
// destination known as a shard with a copy served elsewhere.
func holdingProxy(t *testing.T, origin, destination *fakeShard, holds cutOverHolds) (*httptest.Server, *Index) {
	t.Helper()
	x := NewIndex(nil)
	for _, s := range []*fakeShard{origin, destination} {
		u, err := url.Parse(s.server.URL)
		if err != nil {
			t.Fatal(err)
		}
		x.shards[s.name] = &shardWatch{name: s.name, baseURL: u, stop: func() {}, synced: func() bool { return true }}
	}
	logicalClusterHandler{x: x, shard: origin.name}.OnAdd(movingCopy(false, false))
	logicalClusterHandler{x: x, shard: destination.name}.OnAdd(movingCopy(true, false))
	r := &route{
		PathMapping: PathMapping{Path: ClustersPath, UserHeader: "X-Remote-User", GroupHeader: "X-Remote-Group", ExtraHeaderPrefix: "X-Remote-Extra-"},
		transport:   origin.server.Client().Transport,
	}
	alice := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil
	})
	p := newProxy([]*route{r}, x, alice, nil)
	p.holds = holds
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	return front, x
}

// movingCopy is a shard's LogicalCluster of cluster "moving".
func movingCopy(servedElsewhere, held bool) *corev1alpha1.LogicalCluster {
	lc := &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName, Annotations: map[string]string{logicalcluster.AnnotationKey: "moving"}}}
	if servedElsewhere {
		lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] = "true"
	}
	if held {
		lc.Annotations[migrationv1alpha1.WritesHeldAnnotationKey] = "root:m"
	}
	return lc
}

func post(ctx context.Context, front *httptest.Server, body string) (*http.Response, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, front.URL+"/clusters/moving/api/v1/namespaces/default/configmaps", strings.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	return resp, string(got), err
}

func holdResult(t *testing.T, result string) float64 {
	t.Helper()
	v, err := testutil.GetCounterMetricValue(cutOverHoldsTotal.WithLabelValues(result))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var testHolds = cutOverHolds{timeout: 5 * time.Second, maxBody: 1 << 10, poll: 20 * time.Millisecond}

// TestHeldRequestIsSentToTheDestinationOnceRouted: a write the origin
// holds is kept until the index routes the cluster to the destination,
// and reaches it, body and all; the client sees one answer, the
// destination's, without the hold's mark.
func TestHeldRequestIsSentToTheDestinationOnceRouted(t *testing.T) {
	origin := newFakeShard(t, "alpha", func(int) (bool, bool) { return true, false })
	destination := newFakeShard(t, "beta", nil)
	front, x := holdingProxy(t, origin, destination, testHolds)
	before := holdResult(t, "forwarded")

	go func() {
		// The cut-over: the origin marks its hold, the destination's
		// verified copy serves.
		for origin.requests.Load() < 2 {
			time.Sleep(5 * time.Millisecond)
		}
		logicalClusterHandler{x: x, shard: origin.name}.OnUpdate(nil, movingCopy(false, true))
		logicalClusterHandler{x: x, shard: destination.name}.OnUpdate(nil, movingCopy(false, false))
	}()
	resp, body, err := post(context.Background(), front, `{"data":"x"}`)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusCreated || body != `beta:{"data":"x"}` {
		t.Errorf("answer %d %q, want 201 from the destination with the body", resp.StatusCode, body)
	}
	if resp.Header.Get(clusterhold.HoldHeader) != "" {
		t.Error("the hold's mark reached the client")
	}
	if got := holdResult(t, "forwarded") - before; got != 1 {
		t.Errorf("forwarded holds grew by %v, want 1", got)
	}
}

// TestHeldRequestIsSentToTheOriginAgainOnceTheHoldLifts: a cancelled move
// lifts the hold without a route change; the request reaches the origin.
func TestHeldRequestIsSentToTheOriginAgainOnceTheHoldLifts(t *testing.T) {
	origin := newFakeShard(t, "alpha", func(n int) (bool, bool) { return n <= 3, false })
	destination := newFakeShard(t, "beta", nil)
	front, _ := holdingProxy(t, origin, destination, testHolds)
	resp, body, err := post(context.Background(), front, "payload")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusCreated || body != "alpha:payload" {
		t.Errorf("answer %d %q, want 201 from the origin", resp.StatusCode, body)
	}
	if n := destination.requests.Load(); n != 0 {
		t.Errorf("the destination got %d requests", n)
	}
}

// TestHeldRequestsGetTheShards429 covers what is passed on at once or
// after the bound: the hold's 429 and Retry-After, without its mark.
func TestHeldRequestsGetTheShards429(t *testing.T) {
	for _, tc := range []struct {
		name    string
		holds   cutOverHolds
		body    string
		forged  bool
		minWait time.Duration
		// requests the origin gets at most.
		maxRequests int32
		result      string
	}{
		{name: "held past the bound", holds: cutOverHolds{timeout: 300 * time.Millisecond, maxBody: 1 << 10, poll: 20 * time.Millisecond},
			body: "small", minWait: 300 * time.Millisecond, maxRequests: 100, result: "timeout"},
		{name: "body too large to keep", holds: testHolds, body: strings.Repeat("x", 2<<10), maxRequests: 1, result: "passed_on"},
		{name: "not held: no request is kept", holds: cutOverHolds{}, body: "small", maxRequests: 1, result: "passed_on"},
		// A 429 a tenant's webhook answers has no hold's mark.
		{name: "a 429 without the hold's mark", holds: testHolds, body: "small", forged: true, maxRequests: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			origin := newFakeShard(t, "alpha", func(int) (bool, bool) { return !tc.forged, tc.forged })
			destination := newFakeShard(t, "beta", nil)
			front, _ := holdingProxy(t, origin, destination, tc.holds)
			var before float64
			if tc.result != "" {
				before = holdResult(t, tc.result)
			}
			start := time.Now()
			resp, body, err := post(context.Background(), front, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			waited := time.Since(start)
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || !strings.Contains(body, "moving to another shard") {
				t.Errorf("answer %d, Retry-After %q, %q: want the shard's 429", resp.StatusCode, resp.Header.Get("Retry-After"), body)
			}
			if resp.Header.Get(clusterhold.HoldHeader) != "" {
				t.Error("the hold's mark reached the client")
			}
			if waited < tc.minWait {
				t.Errorf("answered after %v, want at least %v", waited, tc.minWait)
			}
			if n := origin.requests.Load(); n < 1 || n > tc.maxRequests {
				t.Errorf("the origin got %d requests, want 1 to %d", n, tc.maxRequests)
			}
			if tc.result != "" {
				if got := holdResult(t, tc.result) - before; got != 1 {
					t.Errorf("%s holds grew by %v, want 1", tc.result, got)
				}
			}
		})
	}
}

// TestHeldRequestEndsWhenTheClientGoesAway: the client's cancellation ends
// the wait; the origin is not asked again after it.
func TestHeldRequestEndsWhenTheClientGoesAway(t *testing.T) {
	origin := newFakeShard(t, "alpha", func(int) (bool, bool) { return true, false })
	destination := newFakeShard(t, "beta", nil)
	front, _ := holdingProxy(t, origin, destination, testHolds)
	before := holdResult(t, "cancelled")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	posted := make(chan error, 1)
	go func() {
		_, _, err := post(ctx, front, "small")
		posted <- err
	}()
	// The client goes away once the proxy keeps its request (the origin
	// answered it held and was asked again), however slow the machine.
	deadline := time.Now().Add(wait.ForeverTestTimeout)
	for origin.requests.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the proxy never asked the origin again")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-posted; !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want the client's cancellation", err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for holdResult(t, "cancelled")-before < 1 {
		if time.Now().After(deadline) {
			t.Fatal("the proxy still keeps the request of a client that went away")
		}
		time.Sleep(10 * time.Millisecond)
	}
	n := origin.requests.Load()
	time.Sleep(100 * time.Millisecond)
	if after := origin.requests.Load(); after != n {
		t.Errorf("the origin got %d more requests after the client went away", after-n)
	}
}

// TestIndexRoutesToTheVerifiedCopyWhileTheOriginHolds: once the origin
// holds a cluster for its cut-over, a copy elsewhere that serves (the
// destination's, verified) takes its requests; before, the origin keeps
// them, and a copy served elsewhere never gets them.
func TestIndexRoutesToTheVerifiedCopyWhileTheOriginHolds(t *testing.T) {
	x := NewIndex(nil)
	for _, name := range []string{"alpha", "beta"} {
		u, _ := url.Parse("https://" + name + ":6443")
		x.shards[name] = &shardWatch{name: name, baseURL: u, stop: func() {}, synced: func() bool { return true }}
	}
	shardOf := func() string {
		target, result := x.Resolve("moving")
		if result != Found {
			return ""
		}
		return target.Shard
	}
	// The origin is beta: alpha, first by name, gets the cluster only once it serves.
	logicalClusterHandler{x: x, shard: "beta"}.OnAdd(movingCopy(false, false))
	logicalClusterHandler{x: x, shard: "alpha"}.OnAdd(movingCopy(true, false))
	changed := x.RouteChanged("moving")
	for _, step := range []struct {
		shard                 string
		servedElsewhere, held bool
		want                  string
	}{
		{"beta", false, true, "beta"},    // the origin holds; the copy is not verified yet
		{"alpha", false, false, "alpha"}, // verified: it serves
		{"alpha", false, false, "alpha"},
		{"beta", true, true, "alpha"}, // the origin hands over
	} {
		logicalClusterHandler{x: x, shard: step.shard}.OnUpdate(nil, movingCopy(step.servedElsewhere, step.held))
		if got := shardOf(); got != step.want {
			t.Errorf("after %s's copy (served elsewhere %v, held %v): routed to %q, want %q", step.shard, step.servedElsewhere, step.held, got, step.want)
		}
	}
	select {
	case <-changed:
	default:
		t.Error("the route changed and its waiters were not woken")
	}
}
