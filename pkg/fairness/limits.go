package fairness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Limits bounds the watches each user of a workspace holds open on the
// shard, the bodies its requests send, the requests it runs at once and
// the share of request time they take: the shard's defaults, or its
// LogicalCluster's annotations (corev1alpha1.MaxWatchesPerUserAnnotationKey,
// MaxRequestBodyBytesAnnotationKey, MaxRequestsInFlightAnnotationKey,
// MaxRequestTimeShareAnnotationKey), which only the system and kcp-admin
// may set. System identities are not bounded. Past a limit: 429 with
// Retry-After for a watch or a request that waited its turn too long
// (client-go retries both), 413 for a body (as kube-apiserver answers one
// over --max-request-body-bytes); each names the limit.
type Limits struct {
	// MaxWatchesPerUser, MaxRequestBodyBytes and MaxRequestsInFlight are
	// the shard's defaults (<= 0: none).
	MaxWatchesPerUser, MaxRequestBodyBytes, MaxRequestsInFlight int64
	// MaxRequestTimeShare is the shard's default share of request time of
	// a workspace (TimeShares; <= 0: none): the seconds its requests,
	// watches aside, may run per second on average.
	MaxRequestTimeShare float64
	// MaxWait is how long a request waits for its workspace's turn before
	// it is answered 429 (0: DefaultMaxWait); MaxWaiting how many may wait
	// (0: DefaultMaxWaiting), as the requests waiting hold their seats of
	// priority and fairness.
	MaxWait    time.Duration
	MaxWaiting int64
	// LongRunning tells the requests MaxRequestsInFlight does not count
	// (watches, streams); nil: only watches.
	LongRunning func(*http.Request, *request.RequestInfo) bool
	// Annotations returns the annotations of a logical cluster's
	// LogicalCluster (nil when unknown).
	Annotations func(logicalcluster.Name) map[string]string
	Codecs      runtime.NegotiatedSerializer

	watches Slots[watcher]
	running Slots[logicalcluster.Name]
	shares  TimeShares[logicalcluster.Name]
}

// DefaultMaxWait and DefaultMaxWaiting bound the requests waiting for
// their workspace's turn as APF's queues bound theirs: a quarter of the
// request timeout, and upstream's queue length.
const (
	DefaultMaxWait    = 15 * time.Second
	DefaultMaxWaiting = 50
)

type watcher struct {
	cluster logicalcluster.Name
	user    string
}

// limit is the limit of key in a workspace's annotations, else def.
func limit(annotations map[string]string, key string, def int64) int64 {
	if v, ok := annotations[key]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return def
}

// shareOf is the share of request time in a workspace's annotations, else
// def.
func shareOf(annotations map[string]string, def float64) float64 {
	if v, ok := annotations[corev1alpha1.MaxRequestTimeShareAnnotationKey]; ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f
		}
	}
	return def
}

// WithLimits applies l to the requests of h; request info, the user and
// the logical cluster are in their context.
func (l *Limits) WithLimits(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx := req.Context()
		cluster, ok := logicalcluster.ClusterFromContext(ctx)
		u, hasUser := request.UserFrom(ctx)
		info, hasInfo := request.RequestInfoFrom(ctx)
		if !ok || cluster.IsWildcard() || !hasUser || identities.IsSystem(u) || !hasInfo {
			h.ServeHTTP(w, req)
			return
		}
		// One lookup of the workspace's LogicalCluster for all its limits.
		annotations := l.Annotations(cluster)
		fail := func(err *apierrors.StatusError) {
			responsewriters.ErrorNegotiated(err, l.Codecs, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, req)
		}
		if info.Verb == "watch" {
			max := limit(annotations, corev1alpha1.MaxWatchesPerUserAnnotationKey, l.MaxWatchesPerUser)
			if max > 0 {
				release, ok := l.watches.TryAcquire(watcher{cluster, u.GetName()}, max)
				if !ok {
					err := apierrors.NewTooManyRequests(fmt.Sprintf(
						"user %q holds the %d watches workspace %q allows each user (%s); close one and retry", u.GetName(), max, cluster, corev1alpha1.MaxWatchesPerUserAnnotationKey), 1)
					fail(err)
					return
				}
				defer release()
			}
		}
		if req.Body != nil && (req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch) {
			if max := limit(annotations, corev1alpha1.MaxRequestBodyBytesAnnotationKey, l.MaxRequestBodyBytes); max > 0 {
				tooLarge := apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
					"the body exceeds the %d bytes workspace %q allows a request (%s)", max, cluster, corev1alpha1.MaxRequestBodyBytesAnnotationKey))
				if req.ContentLength > max {
					fail(tooLarge)
					return
				}
				// Bodies are read whole by the handlers anyway: read at most
				// one byte past the limit here.
				body, err := io.ReadAll(io.LimitReader(req.Body, max+1))
				req.Body.Close()
				if err != nil {
					fail(apierrors.NewBadRequest(fmt.Sprintf("reading the body: %v", err)))
					return
				}
				if int64(len(body)) > max {
					fail(tooLarge)
					return
				}
				req.Body = io.NopCloser(bytes.NewReader(body))
			}
		}
		if !l.longRunning(req, info) {
			wait, waiting := l.MaxWait, l.MaxWaiting
			if wait <= 0 {
				wait = DefaultMaxWait
			}
			if waiting <= 0 {
				waiting = DefaultMaxWaiting
			}
			if share := shareOf(annotations, l.MaxRequestTimeShare); share > 0 && info.Verb == "delete" {
				// Deletes always work: charged, never held.
				defer l.shares.Charge(cluster, share)()
			} else if share > 0 {
				end, refusal := l.timeShare(ctx, cluster, share, wait, waiting)
				if end == nil {
					if refusal != nil {
						fail(refusal)
					}
					return
				}
				defer end()
			}
			if max := limit(annotations, corev1alpha1.MaxRequestsInFlightAnnotationKey, l.MaxRequestsInFlight); max > 0 {
				waitCtx, cancel := context.WithTimeout(ctx, wait)
				release, err := l.running.Acquire(waitCtx, cluster, max, waiting)
				cancel()
				if err != nil {
					if ctx.Err() != nil {
						// The client went away while it waited.
						return
					}
					why := fmt.Sprintf("waited %s for its turn", wait)
					if errors.Is(err, ErrTooManyWaiting) {
						why = fmt.Sprintf("found %d waiting already", waiting)
					}
					fail(apierrors.NewTooManyRequests(fmt.Sprintf(
						"workspace %q runs the %d requests at once it may (%s) and this one %s; retry", cluster, max, corev1alpha1.MaxRequestsInFlightAnnotationKey, why), 1))
					return
				}
				defer release()
			}
		}
		h.ServeHTTP(w, req)
	})
}

// timeShare admits a request of cluster under its share of request time,
// waiting at most wait behind at most waiting others; end charges the
// request. Without end, refusal is a 429 naming the limit, or nil when the
// client went away.
func (l *Limits) timeShare(ctx context.Context, cluster logicalcluster.Name, share float64, wait time.Duration, waiting int64) (end func(), refusal *apierrors.StatusError) {
	waitCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	end, retryAfter, err := l.shares.Acquire(waitCtx, cluster, share, wait, waiting)
	if err == nil {
		return end, nil
	}
	if ctx.Err() != nil {
		return nil, nil
	}
	why := fmt.Sprintf("waited %s for it", wait)
	switch {
	case errors.Is(err, ErrTooManyWaiting):
		why = fmt.Sprintf("%d requests wait for it already", waiting)
	case errors.Is(err, ErrDebtTooLong):
		why = fmt.Sprintf("it returns in %s", retryAfter.Round(time.Millisecond))
	}
	return nil, apierrors.NewTooManyRequests(fmt.Sprintf(
		"workspace %q used the share of the shard's request time it may (%s: %g seconds per second) and %s; retry",
		cluster, corev1alpha1.MaxRequestTimeShareAnnotationKey, share, why), int(max(1, math.Ceil(retryAfter.Seconds()))))
}

func (l *Limits) longRunning(req *http.Request, info *request.RequestInfo) bool {
	if l.LongRunning != nil {
		return l.LongRunning(req, info)
	}
	return info.Verb == "watch"
}
