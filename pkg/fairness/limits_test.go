package fairness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes/scheme"
	testingclock "k8s.io/utils/clock/testing"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestWorkspaceLimitsBoundWatchesPerUserAndBodies(t *testing.T) {
	annotations := map[logicalcluster.Name]map[string]string{
		"tight": {corev1alpha1.MaxWatchesPerUserAnnotationKey: "1", corev1alpha1.MaxRequestBodyBytesAnnotationKey: "10"},
		"open":  {corev1alpha1.MaxWatchesPerUserAnnotationKey: "0"},
	}
	l := &Limits{MaxWatchesPerUser: 2, Codecs: scheme.Codecs, Annotations: func(c logicalcluster.Name) map[string]string { return annotations[c] }}
	held := make(chan struct{})
	entered := make(chan struct{}, 10)
	h := l.WithLimits(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if info, _ := request.RequestInfoFrom(req.Context()); info.Verb == "watch" {
			entered <- struct{}{}
			<-held
		}
	}))
	do := func(cluster logicalcluster.Name, u user.Info, verb, method, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "/api/v1/configmaps", strings.NewReader(body))
		ctx := logicalcluster.WithCluster(req.Context(), cluster)
		ctx = request.WithUser(ctx, u)
		ctx = request.WithRequestInfo(ctx, &request.RequestInfo{IsResourceRequest: true, Verb: verb, APIVersion: "v1", Resource: "configmaps"})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(ctx))
		return rec
	}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	watch := func(cluster logicalcluster.Name, u user.Info) chan *httptest.ResponseRecorder {
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() { done <- do(cluster, u, "watch", http.MethodGet, "") }()
		return done
	}
	// One watch in "tight", the second refused; alice elsewhere, another
	// user, system identities and a workspace opted out are not.
	first := watch("tight", alice)
	<-entered
	if rec := do("tight", alice, "watch", http.MethodGet, ""); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" ||
		!strings.Contains(rec.Body.String(), corev1alpha1.MaxWatchesPerUserAnnotationKey) {
		t.Errorf("second watch in tight: %d %q, want 429 with Retry-After naming the limit", rec.Code, rec.Body.String())
	}
	others := []chan *httptest.ResponseRecorder{
		watch("default", alice), watch("default", alice), watch("tight", &user.DefaultInfo{Name: "bob"}),
		watch("tight", &user.DefaultInfo{Name: "kcp-admin", Groups: []string{"system:kcp:admin"}}),
		watch("open", alice), watch("open", alice), watch("open", alice),
	}
	for range others {
		<-entered
	}
	if rec := do("default", alice, "watch", http.MethodGet, ""); rec.Code != http.StatusTooManyRequests {
		t.Errorf("third watch under the shard's default of 2: %d, want 429", rec.Code)
	}
	close(held)
	for _, done := range append(others, first) {
		if rec := <-done; rec.Code != http.StatusOK {
			t.Errorf("a watch within its limit: %d", rec.Code)
		}
	}
	// Released: a new watch fits again.
	held = make(chan struct{})
	close(held)
	if rec := do("tight", alice, "watch", http.MethodGet, ""); rec.Code != http.StatusOK {
		t.Errorf("a watch after the first ended: %d, want 200", rec.Code)
	}

	if rec := do("tight", alice, "create", http.MethodPost, strings.Repeat("x", 11)); rec.Code != http.StatusRequestEntityTooLarge ||
		!strings.Contains(rec.Body.String(), corev1alpha1.MaxRequestBodyBytesAnnotationKey) {
		t.Errorf("an 11-byte body in tight: %d %q, want 413 naming the limit", rec.Code, rec.Body.String())
	}
	if rec := do("tight", alice, "create", http.MethodPost, strings.Repeat("x", 10)); rec.Code != http.StatusOK {
		t.Errorf("a 10-byte body in tight: %d, want 200", rec.Code)
	}
	if rec := do("default", alice, "create", http.MethodPost, strings.Repeat("x", 1000)); rec.Code != http.StatusOK {
		t.Errorf("a body where no limit applies: %d, want 200", rec.Code)
	}
}

func TestWorkspaceRequestsInFlightWaitTheirTurn(t *testing.T) {
	annotations := map[logicalcluster.Name]map[string]string{"one": {corev1alpha1.MaxRequestsInFlightAnnotationKey: "1"}}
	l := &Limits{MaxRequestsInFlight: 2, MaxWait: 200 * time.Millisecond, MaxWaiting: 1, Codecs: scheme.Codecs,
		Annotations: func(c logicalcluster.Name) map[string]string { return annotations[c] }}
	release := make(chan struct{})
	entered := make(chan string, 10)
	h := l.WithLimits(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		entered <- req.URL.Query().Get("n")
		if req.URL.Query().Get("block") != "" {
			<-release
		}
	}))
	do := func(cluster logicalcluster.Name, u user.Info, verb, query string) chan *httptest.ResponseRecorder {
		return serveAsync(h, cluster, u, verb, query)
	}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	system := &user.DefaultInfo{Name: "system:kcp:controller", Groups: []string{"system:masters"}}

	// "one" runs one request at once: the second waits, and runs when the
	// first ends.
	first := do("one", alice, "list", "n=1&block=1")
	if n := <-entered; n != "1" {
		t.Fatalf("entered %q first", n)
	}
	second := do("one", alice, "get", "n=2")
	// Other workspaces, watches and the system are not held by it.
	for _, done := range []chan *httptest.ResponseRecorder{
		do("other", alice, "get", "n=3"), do("one", alice, "watch", "n=4"), do("one", system, "get", "n=5"),
	} {
		if rec := <-done; rec.Code != http.StatusOK {
			t.Errorf("a request the bound does not hold: %d", rec.Code)
		}
		<-entered
	}
	select {
	case n := <-entered:
		t.Fatalf("request %s ran beside the one running in its workspace", n)
	default:
	}
	close(release)
	if rec := <-first; rec.Code != http.StatusOK {
		t.Errorf("first: %d", rec.Code)
	}
	if rec := <-second; rec.Code != http.StatusOK || <-entered != "2" {
		t.Errorf("second after the first ended: %d", rec.Code)
	}

	// Past MaxWait: 429 with Retry-After naming the limit; the waiting
	// request never ran.
	release = make(chan struct{})
	blocking := do("one", alice, "list", "n=6&block=1")
	<-entered
	rec := <-do("one", alice, "get", "n=7")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" ||
		!strings.Contains(rec.Body.String(), corev1alpha1.MaxRequestsInFlightAnnotationKey) {
		t.Errorf("a request that waited past MaxWait: %d %q, want 429 with Retry-After naming the limit", rec.Code, rec.Body.String())
	}
	// The shard's default of 2 where no annotation says otherwise; past
	// MaxWaiting waiting, refused at once.
	twoA, twoB := do("default", alice, "get", "n=8&block=1"), do("default", alice, "get", "n=9&block=1")
	<-entered
	<-entered
	third := do("default", alice, "get", "n=10&block=1")
	for waiting(&l.running, "default") < 1 {
		time.Sleep(time.Millisecond)
	}
	if rec := <-do("default", alice, "get", "n=11"); rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "waiting already") {
		t.Errorf("a fourth request under the default of 2 with one waiting: %d %q, want 429 at once", rec.Code, rec.Body.String())
	}
	close(release)
	if rec := <-third; rec.Code != http.StatusOK || <-entered != "10" {
		t.Errorf("the third, which waited: %d", rec.Code)
	}
	for _, done := range []chan *httptest.ResponseRecorder{blocking, twoA, twoB} {
		if rec := <-done; rec.Code != http.StatusOK {
			t.Errorf("a request within the bound: %d", rec.Code)
		}
	}
	select {
	case n := <-entered:
		t.Errorf("request %s ran after it was refused", n)
	default:
	}
}

func TestSlotsHandTurnsOnInOrder(t *testing.T) {
	var s Slots[string]
	ctx := context.Background()
	release, err := s.Acquire(ctx, "k", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 3)
	for i := 1; i <= 3; i++ {
		go func() {
			r, err := s.Acquire(ctx, "k", 1, 0)
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			r()
		}()
		// Each waits before the next arrives.
		for waiting(&s, "k") < i {
			time.Sleep(time.Millisecond)
		}
	}
	// A waiter that gives up leaves its place.
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() { _, err := s.Acquire(cctx, "k", 1, 0); gaveUp <- err }()
	for waiting(&s, "k") < 4 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-gaveUp; err == nil {
		t.Error("a cancelled wait took a slot")
	}
	release()
	release() // once only
	for want := 1; want <= 3; want++ {
		if got := <-order; got != want {
			t.Errorf("turn %d went to waiter %d", want, got)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.keys) != 0 {
		t.Errorf("slots left after every release: %v", s.keys)
	}
}

func waiting[K comparable](s *Slots[K], key K) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k := s.keys[key]; k != nil {
		return len(k.waiting)
	}
	return 0
}

func TestWorkspaceRequestTimeShareSlowsAndRefuses(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	annotations := map[logicalcluster.Name]map[string]string{
		"slow": {corev1alpha1.MaxRequestTimeShareAnnotationKey: "0.5"},
		"open": {corev1alpha1.MaxRequestTimeShareAnnotationKey: "0"},
	}
	l := &Limits{MaxRequestTimeShare: 0.25, MaxWait: 5 * time.Second, Codecs: scheme.Codecs,
		Annotations: func(c logicalcluster.Name) map[string]string { return annotations[c] }}
	l.shares.Clock = clk
	// A request's time is the fake clock's step inside the handler.
	h := l.WithLimits(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if took := req.URL.Query().Get("took"); took != "" {
			d, _ := time.ParseDuration(took)
			clk.Step(d)
		}
	}))
	do := func(cluster logicalcluster.Name, u user.Info, verb, took string) chan *httptest.ResponseRecorder {
		return serveAsync(h, cluster, u, verb, "took="+took)
	}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	system := &user.DefaultInfo{Name: "system:kcp:controller", Groups: []string{"system:masters"}}

	// A workspace opted out of the shard's default is not held: 10 s of
	// requests would be 36 s of debt at 0.25.
	for _, took := range []string{"10s", ""} {
		if rec := <-do("open", alice, "list", took); rec.Code != http.StatusOK {
			t.Errorf("a request of a workspace opted out: %d", rec.Code)
		}
	}
	// 3 s of requests against 1 s in hand at 0.5: 4 s of debt.
	if rec := <-do("slow", alice, "list", "3s"); rec.Code != http.StatusOK {
		t.Fatalf("a request within the burst: %d", rec.Code)
	}
	waiter := do("slow", alice, "list", "")
	untilWaiting(t, &l.shares, "slow", 1)
	// Other workspaces, workspaces opted out, watches and the system go
	// at once.
	for _, done := range []chan *httptest.ResponseRecorder{do("other", alice, "list", ""), do("open", alice, "list", ""), do("slow", system, "list", "")} {
		if rec := <-done; rec.Code != http.StatusOK {
			t.Errorf("a request the share does not hold: %d", rec.Code)
		}
	}
	notYet(t, waiter, "a request of a workspace in debt")
	clk.Step(4 * time.Second)
	if rec := <-waiter; rec.Code != http.StatusOK {
		t.Errorf("the waiting request once the debt is paid: %d", rec.Code)
	}

	// A debt longer than a request may wait: 429 at once, with the time
	// until it is paid and the limit named. 10 s against 1 s in hand: 9 s
	// of debt at 0.5 s per second.
	<-do("slow", alice, "list", "10s")
	rec := <-do("slow", alice, "list", "")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "18" ||
		!strings.Contains(rec.Body.String(), corev1alpha1.MaxRequestTimeShareAnnotationKey) {
		t.Errorf("a request 18 s of debt away: %d, Retry-After %q, %q; want 429, 18, naming the limit", rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
	}
	// Deletes always work: charged, never held.
	if rec := <-do("slow", alice, "delete", ""); rec.Code != http.StatusOK {
		t.Errorf("a delete of a workspace in debt: %d, want 200", rec.Code)
	}
	clk.Step(18 * time.Second)

	// The shard's default where no annotation says otherwise: 2 s against
	// 1 s in hand at 0.25, 4 s of debt, within MaxWait.
	<-do("default", alice, "list", "2s")
	waiter = do("default", alice, "list", "")
	untilWaiting(t, &l.shares, "default", 1)
	clk.Step(3900 * time.Millisecond)
	notYet(t, waiter, "a request under the shard's default")
	clk.Step(100 * time.Millisecond)
	if rec := <-waiter; rec.Code != http.StatusOK {
		t.Errorf("the waiting request under the shard's default: %d", rec.Code)
	}
}

// serveAsync serves a request of u in cluster for configmaps with verb and
// query by h, in a goroutine; the answer comes on the channel.
func serveAsync(h http.Handler, cluster logicalcluster.Name, u user.Info, verb, query string) chan *httptest.ResponseRecorder {
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/configmaps?"+query, nil)
		ctx := logicalcluster.WithCluster(req.Context(), cluster)
		ctx = request.WithUser(ctx, u)
		ctx = request.WithRequestInfo(ctx, &request.RequestInfo{IsResourceRequest: true, Verb: verb, APIVersion: "v1", Resource: "configmaps"})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(ctx))
		done <- rec
	}()
	return done
}
