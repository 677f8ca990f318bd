package frontproxy

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	requestsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "shardplane", Subsystem: "front_proxy", Name: "requests_total",
		Help:           "Requests the front-proxy answered, by the shard it sent them to (empty: answered by the proxy itself or another route) and HTTP code.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"shard", "code"})
	requestDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "shardplane", Subsystem: "front_proxy", Name: "request_duration_seconds",
		Help:           "Time to answer a request that is not a watch, by shard, including the shard's own time.",
		Buckets:        []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		StabilityLevel: metrics.ALPHA,
	}, []string{"shard"})
	indexLag = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace: "shardplane", Subsystem: "front_proxy", Name: "index_lag_seconds",
		Help: "Routing lag: from a Workspace's creationTimestamp until the index routes its path (scheduling included), and from its " +
			"deletionTimestamp until the index stops routing it. Timestamps have whole seconds.",
		Buckets:        []float64{0.5, 1, 2, 5, 10, 30, 60, 300},
		StabilityLevel: metrics.ALPHA,
	}, []string{"event"})
)

var (
	cutOverHoldsTotal = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "shardplane", Subsystem: "front_proxy", Name: "cut_over_holds_total",
		Help: "Requests a shard answered with a cut-over's hold, by what the proxy did: forwarded (kept, then sent to where the workspace " +
			"lives next or again once the hold lifted), timeout (kept until the bound, then the shard's 429 passed on), cancelled (the client " +
			"went away while kept), passed_on (not kept: a watch, a body too large, not a request to a workspace on a shard).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})
	cutOverHoldSeconds = metrics.NewHistogram(&metrics.HistogramOpts{
		Namespace: "shardplane", Subsystem: "front_proxy", Name: "cut_over_hold_seconds",
		Help:           "How long the proxy kept a request a shard held for a cut-over, forwarded or timed out.",
		Buckets:        []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		StabilityLevel: metrics.ALPHA,
	})
)

var registerMetrics sync.Once

func init() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(requestsTotal, requestDuration, indexLag, cutOverHoldsTotal, cutOverHoldSeconds)
		// The lag series exist from the start, so that dashboards find them
		// before the first workspace is created or deleted.
		indexLag.WithLabelValues("create")
		indexLag.WithLabelValues("delete")
	})
}

// lagHorizon bounds what counts as lag: a relist that meets old objects
// again measures nothing.
const lagHorizon = 10 * time.Minute

// observeLag records the routing lag of an event that happened at t.
func observeLag(event string, t time.Time) {
	if t.IsZero() {
		return
	}
	if lag := time.Since(t); lag >= 0 && lag < lagHorizon {
		indexLag.WithLabelValues(event).Observe(lag.Seconds())
	}
}

type shardLabelKey struct{}

// setShardLabel names, for the request's metrics, the shard it goes to.
func setShardLabel(ctx context.Context, shard string) {
	if p, ok := ctx.Value(shardLabelKey{}).(*string); ok {
		*p = shard
	}
}

// withRequestMetrics counts every request by shard and code, and times
// those that are not watches.
func withRequestMetrics(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		shard := ""
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, req.WithContext(context.WithValue(req.Context(), shardLabelKey{}, &shard)))
		requestsTotal.WithLabelValues(shard, strconv.Itoa(rec.code)).Inc()
		if req.URL.Query().Get("watch") != "true" && req.URL.Query().Get("watch") != "1" {
			requestDuration.WithLabelValues(shard).Observe(time.Since(start).Seconds())
		}
	})
}

// statusRecorder remembers the status code written; Unwrap lets
// http.ResponseController (flushes, upgrades) reach the writer below.
type statusRecorder struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
