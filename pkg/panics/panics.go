// Package panics recovers the panics of request handlers in every server
// binary: the request gets an answer, the panic is counted by site in
// /metrics, and its stack is logged at most once a minute per site, so that
// a client repeating a panicking request cannot flood the logs.
//
// A generic API server's chain wraps WithRecovery twice: around the API
// handler, below upstream's timeout filter whose goroutine would otherwise
// turn the panic into a new one, and around the whole chain, for panics in
// the filters. SilenceRecoveredCrashLogs keeps upstream's own panic log
// quiet for panics that a WithRecovery above will log.
package panics

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// logInterval is how long a site's stack is not logged again after it
	// was.
	logInterval = time.Minute
	// maxSites bounds the sites counted and remembered apart; a code base
	// has few panicking sites, more means the labels would grow unbounded.
	maxSites = 64
	// otherSite counts the panics of sites beyond maxSites, and of those
	// whose stack names no site.
	otherSite = "other"
	// maxStack is upstream's bound of a logged stack (net/http's too).
	maxStack = 64 << 10
)

// recoveredTotal is the counter of every binary's /metrics.
var recoveredTotal = metrics.NewCounterVec(&metrics.CounterOpts{
	Namespace: "shardplane", Name: "recovered_panics_total",
	Help: "Panics recovered while serving a request, by site: the function and line that panicked (\"other\" for sites beyond " +
		strconv.Itoa(maxSites) + "). Panics with http.ErrAbortHandler abort a request on purpose and are not counted.",
	StabilityLevel: metrics.ALPHA,
}, []string{"site"})

// serving recovers the requests of the process.
var serving = newRecorder(clock.RealClock{}, recoveredTotal)

var registerMetrics sync.Once

func init() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(recoveredTotal)
		// The series exists from the start, so that /metrics shows the
		// counter before the first panic.
		recoveredTotal.WithLabelValues(otherSite)
	})
}

// WithRecovery returns a handler that serves with handler and recovers its
// panics: each is counted, its site's stack logged at most once a minute;
// the request is answered 500 with a Status if nothing was written yet, a
// response that already says 500 is finished, any other is aborted (a
// truncated success must not look complete). A panic with
// http.ErrAbortHandler passes through untouched, as net/http expects.
func WithRecovery(handler http.Handler) http.Handler {
	return &recovering{recorder: serving, next: handler}
}

// recorder counts panics and decides which of them are logged.
type recorder struct {
	clock   clock.PassiveClock
	counter *metrics.CounterVec

	lock  sync.Mutex
	sites map[string]*siteLog
}

// siteLog is when a site's stack was last logged and how many of its
// panics were not logged since.
type siteLog struct {
	logged     time.Time
	suppressed int
}

func newRecorder(c clock.PassiveClock, counter *metrics.CounterVec) *recorder {
	return &recorder{clock: c, counter: counter, sites: map[string]*siteLog{}}
}

// recovering is the handler WithRecovery returns; its ServeHTTP frame on a
// stack tells SilenceRecoveredCrashLogs that the panic will be recovered.
type recovering struct {
	recorder *recorder
	next     http.Handler
}

func (h *recovering) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	tracked := &writeTracker{ResponseWriter: w}
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if v == http.ErrAbortHandler {
			panic(v)
		}
		h.recorder.recovered(req, v)
		switch tracked.status {
		case 0:
			writePanicStatus(w)
		case http.StatusInternalServerError:
		default:
			panic(http.ErrAbortHandler)
		}
	}()
	h.next.ServeHTTP(responsewriter.WrapForHTTP1Or2(tracked), req)
}

// recovered counts the panic v of req and logs it unless its site was
// logged less than logInterval ago. Call it from the deferred function
// that recovered v: the stack still holds the panicking frame.
func (r *recorder) recovered(req *http.Request, v any) {
	site, due, suppressed := r.admit(panicSite())
	r.counter.WithLabelValues(site).Inc()
	if !due {
		return
	}
	stack := make([]byte, maxStack)
	stack = stack[:runtime.Stack(stack, false)]
	klog.FromContext(req.Context()).Error(nil, "Recovered a panic while serving a request", "site", site, "panic", fmt.Sprint(v),
		"method", req.Method, "URI", req.RequestURI, "suppressedSinceLastLog", suppressed, "stack", string(stack))
}

// admit returns the label of site, whether its stack is due to be logged
// and, if so, how many of its panics were not logged since the last time.
func (r *recorder) admit(site string) (label string, due bool, suppressed int) {
	r.lock.Lock()
	defer r.lock.Unlock()
	s, ok := r.sites[site]
	if !ok {
		if len(r.sites) >= maxSites {
			site = otherSite
			s = r.sites[otherSite]
		}
		if s == nil {
			s = &siteLog{}
			r.sites[site] = s
		}
	}
	now := r.clock.Now()
	if !s.logged.IsZero() && now.Sub(s.logged) < logInterval {
		s.suppressed++
		return site, false, 0
	}
	suppressed, s.logged, s.suppressed = s.suppressed, now, 0
	return site, true, suppressed
}

// panicSite names the function and line that raised the panic being
// handled: the caller of the deepest runtime.gopanic of the stack, so that
// a panic re-raised by a recovering filter is told by its first site.
// Runtime frames (a nil dereference's sigpanic) are skipped.
func panicSite() string {
	pcs := make([]uintptr, 128)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	site, afterPanic := otherSite, false
	for {
		f, more := frames.Next()
		switch {
		case f.Function == "runtime.gopanic":
			afterPanic, site = true, otherSite
		case afterPanic && !strings.HasPrefix(f.Function, "runtime."):
			site, afterPanic = f.Function+":"+strconv.Itoa(f.Line), false
		}
		if !more {
			return site
		}
	}
}

// writePanicStatus answers 500 with a Status, as kube clients decode it.
func writePanicStatus(w http.ResponseWriter) {
	status := &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Code:     http.StatusInternalServerError,
		Reason:   metav1.StatusReasonInternalError,
		Message:  "This request caused the server to panic. Look in the logs for details.",
	}
	body, _ := json.Marshal(status)
	// Headers the handler set for its own body would misdescribe this one.
	h := w.Header()
	h.Del("Content-Encoding")
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = w.Write(body)
}

// writeTracker remembers the status of what the handler wrote; a flush
// commits 200 if nothing was written.
type writeTracker struct {
	http.ResponseWriter
	status int
}

func (t *writeTracker) WriteHeader(code int) {
	if t.status == 0 {
		t.status = code
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *writeTracker) Write(b []byte) (int, error) {
	if t.status == 0 {
		t.status = http.StatusOK
	}
	return t.ResponseWriter.Write(b)
}

func (t *writeTracker) Flush() {
	if t.status == 0 {
		t.status = http.StatusOK
	}
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController and upstream's writer wrappers reach
// the writer below.
func (t *writeTracker) Unwrap() http.ResponseWriter { return t.ResponseWriter }

var silenceCrashLogs sync.Once

// recoveringServeHTTP is the function name of recovering.ServeHTTP.
var recoveringServeHTTP = runtime.FuncForPC(reflect.ValueOf((*recovering).ServeHTTP).Pointer()).Name()

// SilenceRecoveredCrashLogs makes utilruntime.HandleCrash (upstream's
// WithPanicRecovery filter among others) skip its stack log when a
// WithRecovery handler up the stack will recover, count and log the
// panic; other panics are logged as before. Servers call it once at start.
func SilenceRecoveredCrashLogs() {
	silenceCrashLogs.Do(func() {
		upstream := utilruntime.PanicHandlers
		utilruntime.PanicHandlers = []func(context.Context, any){func(ctx context.Context, v any) {
			if willBeRecovered() {
				return
			}
			// Upstream's handlers attribute their log to the panicking
			// code by call depth; this function is one more frame.
			ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithCallDepth(1))
			for _, handle := range upstream {
				handle(ctx, v)
			}
		}}
	})
}

// willBeRecovered tells whether a WithRecovery handler is on the stack.
func willBeRecovered() bool {
	// A shard's handler chain is deep; the handler sits below all of it.
	pcs := make([]uintptr, 1024)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if f.Function == recoveringServeHTTP {
			return true
		}
		if !more {
			return false
		}
	}
}
