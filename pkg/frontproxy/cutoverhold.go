package frontproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/clusterhold"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Defaults of the cut-over hold in the front-proxy.
const (
	// DefaultCutOverHoldTimeout bounds how long a request the origin
	// held is kept before the shard's 429 is passed on.
	DefaultCutOverHoldTimeout = 5 * time.Second
	// DefaultCutOverHoldMaxBody is the largest request body kept for a
	// replay: the API servers' own limit on a request body is 3 MiB, and
	// objects are far smaller.
	DefaultCutOverHoldMaxBody = 1 << 20
)

// holdPoll is how often a held request is sent to the origin again while
// the route stays: a cancelled move lifts its hold without a route change.
const holdPoll = 250 * time.Millisecond

// heldResponseMaxBody bounds the copy kept of the origin's 429 (a Status).
const heldResponseMaxBody = 64 << 10

// cutOverHolds is how the proxy keeps requests the origin shard holds for
// a cut-over (clusterhold.HoldHeader) instead of answering 429 at once:
// it sends them again once the index routes the cluster elsewhere or the
// hold has lifted.
type cutOverHolds struct {
	// timeout bounds the wait; 0: requests are not held.
	timeout time.Duration
	// maxBody is the largest body kept to be sent again.
	maxBody int64
	// poll is how often the origin is asked again while the route stays.
	poll time.Duration
}

// errHeld ends an attempt whose answer was the cut-over hold's 429: the
// proxy writes nothing and sends the request again.
var errHeld = errors.New("held for a cut-over")

// holdAttempt is one request's state across its attempts, in the context
// of each attempt's outgoing request.
type holdAttempt struct {
	// intercept: a hold's 429 ends the attempt instead of reaching the
	// client.
	intercept bool
	// held is the last hold's answer, written to the client if the wait
	// ends without another.
	held *http.Response
	body []byte
}

type holdAttemptKey struct{}

// interceptHold is the reverse proxies' ModifyResponse: the hold's mark
// never reaches a client, and a held request that can be sent again is
// kept from it.
func interceptHold(resp *http.Response) error {
	if resp.Header.Get(clusterhold.HoldHeader) == "" {
		return nil
	}
	resp.Header.Del(clusterhold.HoldHeader)
	a, _ := resp.Request.Context().Value(holdAttemptKey{}).(*holdAttempt)
	if a == nil || !a.intercept || resp.StatusCode != http.StatusTooManyRequests {
		if resp.StatusCode == http.StatusTooManyRequests {
			cutOverHoldsTotal.WithLabelValues("passed_on").Inc()
		}
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, heldResponseMaxBody))
	if err != nil {
		// Not kept: a later answer, or a 429 of the proxy's own, reaches
		// the client instead.
		body = nil
	}
	a.held, a.body = resp, body
	return errHeld
}

// replayableBody reads a request's body for sending it more than once:
// nil and false when it is larger than max, with the reader to forward it
// once instead.
func replayableBody(req *http.Request, max int64) ([]byte, io.ReadCloser, bool, error) {
	if req.Body == nil || req.Body == http.NoBody || req.ContentLength == 0 {
		return []byte{}, nil, true, nil
	}
	if req.ContentLength > max {
		return nil, req.Body, false, nil
	}
	read, err := io.ReadAll(io.LimitReader(req.Body, max+1))
	if err != nil {
		return nil, nil, false, err
	}
	if int64(len(read)) > max {
		return nil, struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(read), req.Body), req.Body}, false, nil
	}
	return read, nil, true, nil
}

// clusterRequest is what is needed to send a request to a logical cluster
// again after its route changed.
type clusterRequest struct {
	route *route
	path  logicalcluster.Path
	// rest is the path below the cluster, with the query of the request.
	rest, rawQuery string
	// user and passToken are the request's as authenticated, before a
	// service account token was reviewed for the target's shard.
	user      user.Info
	passToken bool
}

// forwardHolding forwards a request to a logical cluster on a shard and,
// while the shard answers with the cut-over hold's 429, waits for the
// index to route the cluster elsewhere (or for a poll interval) and sends
// it again: to the destination, or to the origin once its hold lifted.
// The shard refuses a held request before acting on it, so sending it
// again is safe. Past the bound, or with a body too large to keep, the
// client gets the shard's 429 and Retry-After.
func (p *proxy) forwardHolding(w http.ResponseWriter, req *http.Request, cr clusterRequest, fwd forwarded, u user.Info, passToken bool) {
	body, once, replayable, err := replayableBody(req, p.holds.maxBody)
	if err != nil {
		klog.FromContext(req.Context()).V(4).Info("Reading the request body failed", "err", err)
		responsewriters.ErrorNegotiated(apierrors.NewBadRequest("the request body could not be read"), scheme.Codecs, schema.GroupVersion{}, w, req)
		return
	}
	attempt := &holdAttempt{intercept: replayable}
	var start, deadline time.Time
	for {
		out := p.outgoing(req, cr.route, fwd, u, passToken)
		out = out.WithContext(context.WithValue(out.Context(), holdAttemptKey{}, attempt))
		if replayable {
			out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		} else if once != nil {
			out.Body = once
		}
		attempt.held = nil
		p.requests[cr.route].ServeHTTP(w, out)
		if attempt.held == nil {
			if !start.IsZero() {
				cutOverHoldsTotal.WithLabelValues("forwarded").Inc()
				cutOverHoldSeconds.Observe(time.Since(start).Seconds())
			}
			return
		}
		now := time.Now()
		if start.IsZero() {
			start, deadline = now, now.Add(p.holds.timeout)
		}
		ok, next, nextUser, nextPass := p.waitForRoute(req, cr, fwd, deadline)
		if !ok {
			if req.Context().Err() != nil {
				cutOverHoldsTotal.WithLabelValues("cancelled").Inc()
				return
			}
			cutOverHoldsTotal.WithLabelValues("timeout").Inc()
			cutOverHoldSeconds.Observe(time.Since(start).Seconds())
			writeHeld(w, attempt)
			return
		}
		fwd, u, passToken = next, nextUser, nextPass
		setShardLabel(req.Context(), fwd.shard)
	}
}

// waitForRoute waits until the index routes the request's cluster to
// another shard, or a poll interval passed, and returns where to send it;
// false when the deadline passed or the client went away first.
func (p *proxy) waitForRoute(req *http.Request, cr clusterRequest, held forwarded, deadline time.Time) (bool, forwarded, user.Info, bool) {
	for {
		// Taken before the route is read: a change in between still wakes.
		changed := p.index.RouteChanged(held.cluster)
		if fwd, u, pass, ok := p.reroute(req, cr); ok && fwd.shard != held.shard {
			return true, fwd, u, pass
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return false, forwarded{}, nil, false
		}
		poll := time.NewTimer(min(p.holds.poll, remaining))
		select {
		case <-changed:
			poll.Stop()
			continue
		case <-poll.C:
		case <-req.Context().Done():
			poll.Stop()
			return false, forwarded{}, nil, false
		}
		if time.Now().After(deadline) {
			return false, forwarded{}, nil, false
		}
		// Still routed to the held shard (or nowhere yet): ask it again,
		// its hold may have lifted.
		if fwd, u, pass, ok := p.reroute(req, cr); ok {
			return true, fwd, u, pass
		}
	}
}

// reroute resolves a held request's cluster again; false while the index
// routes it nowhere (between the copies' updates) or to a mount.
func (p *proxy) reroute(req *http.Request, cr clusterRequest) (forwarded, user.Info, bool, bool) {
	target, result := p.index.Resolve(cr.path)
	if result != Found || target.MountURL != nil {
		return forwarded{}, nil, false, false
	}
	u, passToken := cr.user, cr.passToken
	if passToken {
		var err error
		// The token's own shard may differ from the destination's.
		if u, passToken, err = p.serviceAccountAt(req, u, target.Shard); err != nil || u == nil {
			return forwarded{}, nil, false, false
		}
	}
	fwd := forwarded{shard: target.Shard, cluster: target.Cluster, target: withPath(target.BaseURL, target.Cluster.RequestPath()+cr.rest)}
	fwd.target.RawQuery = cr.rawQuery
	return fwd, u, passToken, true
}

// writeHeld writes the hold's last 429 as the shard sent it.
func writeHeld(w http.ResponseWriter, a *holdAttempt) {
	for k, v := range a.held.Header {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(a.held.StatusCode)
	_, _ = w.Write(a.body)
}
