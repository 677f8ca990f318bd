package panics

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
)

const testMetric = "test_recovered_panics_total"

// fixture is a recorder with its own counter and clock, and a logger whose
// output the test reads.
type fixture struct {
	t        *testing.T
	recorder *recorder
	clock    *testingclock.FakePassiveClock
	registry metrics.KubeRegistry
	logger   klog.Logger
}

func newFixture(t *testing.T) *fixture {
	counter := metrics.NewCounterVec(&metrics.CounterOpts{Name: testMetric, Help: "test", StabilityLevel: metrics.ALPHA}, []string{"site"})
	registry := metrics.NewKubeRegistry()
	registry.MustRegister(counter)
	clock := testingclock.NewFakePassiveClock(time.Unix(1_000_000, 0))
	return &fixture{t: t, recorder: newRecorder(clock, counter), clock: clock, registry: registry, logger: bufferedLogger(t)}
}

// bufferedLogger logs to the test and keeps what it logged.
func bufferedLogger(t *testing.T) klog.Logger {
	return ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
}

// logged is what logger logged.
func logged(logger klog.Logger) string {
	return logger.GetSink().(ktesting.Underlier).GetBuffer().String()
}

// serve sends a GET through WithRecovery's handler around h.
func (f *fixture) serve(h http.Handler) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces", nil)
	req = req.WithContext(klog.NewContext(req.Context(), f.logger))
	rec := httptest.NewRecorder()
	(&recovering{recorder: f.recorder, next: h}).ServeHTTP(rec, req)
	return rec
}

// counts are the counter's values by site.
func (f *fixture) counts() map[string]float64 {
	got, err := testutil.GetCounterValuesFromGatherer(f.registry, testMetric, map[string]string{}, "site")
	if err != nil && !strings.Contains(err.Error(), "not found") {
		f.t.Fatal(err)
	}
	return got
}

// logs are the logged lines that start a panic's entry.
func (f *fixture) logs() []string {
	var entries []string
	for _, line := range strings.Split(logged(f.logger), "\n") {
		if strings.Contains(line, "Recovered a panic") {
			entries = append(entries, line)
		}
	}
	return entries
}

var nilMap map[string]int

func panicsAtSiteA(http.ResponseWriter, *http.Request) { nilMap["a"] = 1 }

func panicsAtSiteB(http.ResponseWriter, *http.Request) { panic("site b") }

func TestAPanickingHandlerIsAnswered500WithAStatusAndCounted(t *testing.T) {
	f := newFixture(t)
	rec := f.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		panicsAtSiteA(w, r)
	}))
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("HTTP %d, want 500", rec.Code)
	}
	if got := rec.Header().Get("Content-Encoding"); got != "" {
		t.Errorf("Content-Encoding %q of the handler kept", got)
	}
	var status metav1.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &status); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	if status.Kind != "Status" || status.Code != http.StatusInternalServerError || status.Reason != metav1.StatusReasonInternalError ||
		!strings.Contains(status.Message, "caused the server to panic") {
		t.Errorf("status %+v", status)
	}
	counts := f.counts()
	if len(counts) != 1 {
		t.Fatalf("counts %v, want one site", counts)
	}
	for site, n := range counts {
		if !strings.HasSuffix(strings.Split(site, ":")[0], "panics.panicsAtSiteA") || n != 1 {
			t.Errorf("counted %v at %q, want 1 at panicsAtSiteA", n, site)
		}
	}
}

func TestOneSiteRepeatedLogsOneStackAndCountsEveryPanic(t *testing.T) {
	f := newFixture(t)
	for range 1000 {
		if rec := f.serve(http.HandlerFunc(panicsAtSiteA)); rec.Code != http.StatusInternalServerError {
			t.Fatalf("HTTP %d, want 500", rec.Code)
		}
	}
	if logs := f.logs(); len(logs) != 1 {
		t.Errorf("%d log entries, want 1", len(logs))
	}
	var total float64
	for _, n := range f.counts() {
		total += n
	}
	if total != 1000 {
		t.Errorf("counted %v, want 1000", total)
	}
}

func TestConcurrentPanicsAtOneSiteLogOneStack(t *testing.T) {
	f := newFixture(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				f.serve(http.HandlerFunc(panicsAtSiteA))
			}
		})
	}
	wg.Wait()
	if logs := f.logs(); len(logs) != 1 {
		t.Errorf("%d log entries, want 1", len(logs))
	}
	for site, n := range f.counts() {
		if n != 800 {
			t.Errorf("counted %v at %q, want 800", n, site)
		}
	}
}

func TestTwoSitesLogTwoStacks(t *testing.T) {
	f := newFixture(t)
	for range 10 {
		f.serve(http.HandlerFunc(panicsAtSiteA))
		f.serve(http.HandlerFunc(panicsAtSiteB))
	}
	logs := f.logs()
	if len(logs) != 2 || !strings.Contains(logs[0], "panicsAtSiteA") || !strings.Contains(logs[1], "panicsAtSiteB") {
		t.Errorf("logged %q, want site A then site B", logs)
	}
	if counts := f.counts(); len(counts) != 2 {
		t.Errorf("counts %v, want two sites of 10", counts)
	}
}

func TestASiteIsLoggedAgainAfterAMinuteWithWhatWasSuppressed(t *testing.T) {
	f := newFixture(t)
	for range 10 {
		f.serve(http.HandlerFunc(panicsAtSiteA))
	}
	f.clock.SetTime(f.clock.Now().Add(59 * time.Second))
	f.serve(http.HandlerFunc(panicsAtSiteA))
	if logs := f.logs(); len(logs) != 1 {
		t.Fatalf("%d log entries within the minute, want 1", len(logs))
	}
	f.clock.SetTime(f.clock.Now().Add(time.Second))
	f.serve(http.HandlerFunc(panicsAtSiteA))
	logs := f.logs()
	if len(logs) != 2 {
		t.Fatalf("%d log entries after the minute, want 2", len(logs))
	}
	if !strings.Contains(logs[1], "suppressedSinceLastLog=10") {
		t.Errorf("second entry %q does not say 10 were suppressed", logs[1])
	}
}

func TestErrAbortHandlerAbortsUncountedAndUnlogged(t *testing.T) {
	f := newFixture(t)
	got := func() (v any) {
		defer func() { v = recover() }()
		f.serve(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }))
		return nil
	}()
	if got != http.ErrAbortHandler {
		t.Errorf("panicked with %v, want http.ErrAbortHandler", got)
	}
	if counts := f.counts(); len(counts) != 0 {
		t.Errorf("counted %v", counts)
	}
	if logs := f.logs(); len(logs) != 0 {
		t.Errorf("logged %q", logs)
	}
}

func TestAPanicAfterTheResponseStartedFinishesA500AndAbortsTheRest(t *testing.T) {
	for _, tc := range []struct {
		name      string
		write     func(http.ResponseWriter)
		wantAbort bool
	}{
		{"500 written", func(w http.ResponseWriter) { http.Error(w, "upstream's answer", http.StatusInternalServerError) }, false},
		{"200 written", func(w http.ResponseWriter) { _, _ = w.Write([]byte("{")) }, true},
		{"flushed", func(w http.ResponseWriter) { w.(http.Flusher).Flush() }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			var rec *httptest.ResponseRecorder
			got := func() (v any) {
				defer func() { v = recover() }()
				rec = f.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					tc.write(w)
					panicsAtSiteA(w, r)
				}))
				return nil
			}()
			if aborted := got == http.ErrAbortHandler; aborted != tc.wantAbort {
				t.Errorf("panicked with %v, want abort %t", got, tc.wantAbort)
			}
			if !tc.wantAbort && (rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "upstream's answer")) {
				t.Errorf("HTTP %d %q, want the 500 written", rec.Code, rec.Body)
			}
			if n := len(f.counts()); n != 1 {
				t.Errorf("%d sites counted, want 1", n)
			}
		})
	}
}

func TestSitesBeyondTheBoundAreCountedAsOther(t *testing.T) {
	f := newFixture(t)
	for i := range maxSites + 5 {
		label, _, _ := f.recorder.admit("site-" + string(rune('A'+i)))
		f.recorder.counter.WithLabelValues(label).Inc()
	}
	counts := f.counts()
	if len(counts) != maxSites+1 || counts[otherSite] != 5 {
		t.Errorf("%d labels, %v other; want %d and 5", len(counts), counts[otherSite], maxSites+1)
	}
}

// TestUpstreamFiltersLeaveTheLogToTheRecovery is upstream's timeout filter
// and WithPanicRecovery between the recovery and a panicking handler: the
// panic is answered, counted once, and no upstream stack log repeats it.
func TestUpstreamFiltersLeaveTheLogToTheRecovery(t *testing.T) {
	SilenceRecoveredCrashLogs()
	upstreamLogger := bufferedLogger(t)
	klog.SetLogger(upstreamLogger)
	defer klog.ClearLogger()
	f := newFixture(t)
	resolver := &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api"), GrouplessAPIPrefixes: sets.NewString("api")}
	chain := genericfilters.WithPanicRecovery(genericfilters.WithTimeoutForNonLongRunningRequests(http.HandlerFunc(panicsAtSiteA),
		func(*http.Request, *apirequest.RequestInfo) bool { return false }), resolver)
	for range 100 {
		if rec := f.serve(chain); rec.Code != http.StatusInternalServerError {
			t.Fatalf("HTTP %d, want 500", rec.Code)
		}
	}
	// The timeout filter raised the panic again in the request's
	// goroutine: the site is its own, the handler's stack is in the value.
	if logs := f.logs(); len(logs) != 1 || !strings.Contains(logs[0], "timeoutHandler") || !strings.Contains(logged(f.logger), "panicsAtSiteA") {
		t.Errorf("logged %q, want one entry naming the timeout filter and the handler", logs)
	}
	upstream := logged(upstreamLogger)
	if strings.Contains(upstream, "Observed a panic") || strings.Contains(upstream, "goroutine ") {
		t.Errorf("upstream logged a stack: %.2000s", upstream)
	}
	var total float64
	for _, n := range f.counts() {
		total += n
	}
	if total != 100 {
		t.Errorf("counted %v, want 100", total)
	}
}

func TestCrashesNotRecoveredAboveAreStillLoggedByUpstream(t *testing.T) {
	SilenceRecoveredCrashLogs()
	upstreamLogger := bufferedLogger(t)
	klog.SetLogger(upstreamLogger)
	defer klog.ClearLogger()
	utilruntime.ReallyCrash = false
	defer func() { utilruntime.ReallyCrash = true }()
	func() {
		defer utilruntime.HandleCrash()
		panic("a controller's panic")
	}()
	if upstream := logged(upstreamLogger); !strings.Contains(upstream, "Observed a panic") {
		t.Errorf("upstream did not log the panic: %q", upstream)
	}
}
