// Package clusterhold holds the requests to a logical cluster while it
// moves to another shard. On the origin, from the cut-over on, requests
// are answered 429 with Retry-After, which client-go retries by itself, so
// that no acknowledged write is lost and no client sees a failure it must
// handle; the cluster's watches are ended, so that clients reconnect
// through the front-proxy to where it lives next. Reads are held too: a
// resource version the origin issued after the destination's final copy
// would mean nothing there. The system may read; of its writes only the
// move's own pass (its migration, dumps, the LogicalCluster's marks).
// On the destination, a watch that resumes from a resource version of the
// origin is told 410 Gone, and its client relists once.
package clusterhold

import (
	"context"
	"net/http"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// RetryAfterSeconds is what a held write is told to wait.
const RetryAfterSeconds = 1

// HoldHeader marks the 429 of a hold, which the front-proxy keeps from
// the client and sends again once the cluster is served (pkg/frontproxy).
// A response header, not the Status: a tenant's admission webhook can
// answer any Status, but sets no header of the shard's response.
const HoldHeader = "X-Shardplane-Cut-Over-Hold"

// Registry knows the held clusters, the writes in flight and the watches
// open in each.
type Registry struct {
	mu       sync.Mutex
	held     map[logicalcluster.Name]bool
	movedIn  map[logicalcluster.Name]uint64
	inFlight map[logicalcluster.Name]int
	drained  map[logicalcluster.Name][]chan struct{}
	watches  map[logicalcluster.Name]map[*int]context.CancelFunc
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{
		held:     map[logicalcluster.Name]bool{},
		movedIn:  map[logicalcluster.Name]uint64{},
		inFlight: map[logicalcluster.Name]int{},
		drained:  map[logicalcluster.Name][]chan struct{}{},
		watches:  map[logicalcluster.Name]map[*int]context.CancelFunc{},
	}
}

// Hold holds new requests to cluster, ends its watches and returns a
// channel that is closed once the writes admitted before have finished.
func (r *Registry) Hold(cluster logicalcluster.Name) <-chan struct{} {
	r.mu.Lock()
	r.held[cluster] = true
	ch := make(chan struct{})
	if r.inFlight[cluster] == 0 {
		close(ch)
	} else {
		r.drained[cluster] = append(r.drained[cluster], ch)
	}
	r.mu.Unlock()
	r.EndWatches(cluster)
	return ch
}

// MovedIn tells that cluster moved to this shard, whose etcd revision was
// above every resource version the origin issued from the first revision
// at on: watches resuming from below it are told 410 Gone. A hold left
// from an earlier move away ends.
func (r *Registry) MovedIn(cluster logicalcluster.Name, at uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.movedIn[cluster] = at
	// Held here when it moved away before: it lives here again.
	delete(r.held, cluster)
}

func (r *Registry) movedInAt(cluster logicalcluster.Name) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.movedIn[cluster]
}

// Held tells whether writes to cluster are held.
func (r *Registry) Held(cluster logicalcluster.Name) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held[cluster]
}

// Release lets requests to cluster through again.
func (r *Registry) Release(cluster logicalcluster.Name) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.held, cluster)
}

// EndWatches ends the watches open in cluster.
func (r *Registry) EndWatches(cluster logicalcluster.Name) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, cancel := range r.watches[cluster] {
		cancel()
	}
	delete(r.watches, cluster)
}

// beginWrite admits a write unless cluster is held; done must be called
// when it has finished.
func (r *Registry) beginWrite(cluster logicalcluster.Name) (done func(), ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held[cluster] {
		return nil, false
	}
	r.inFlight[cluster]++
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.inFlight[cluster]--
		if r.inFlight[cluster] > 0 {
			return
		}
		delete(r.inFlight, cluster)
		for _, ch := range r.drained[cluster] {
			close(ch)
		}
		delete(r.drained, cluster)
	}, true
}

// trackWatch registers a watch of cluster that EndWatches ends.
func (r *Registry) trackWatch(ctx context.Context, cluster logicalcluster.Name) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	id := new(int)
	r.mu.Lock()
	if r.watches[cluster] == nil {
		r.watches[cluster] = map[*int]context.CancelFunc{}
	}
	r.watches[cluster][id] = cancel
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		delete(r.watches[cluster], id)
		if len(r.watches[cluster]) == 0 {
			delete(r.watches, cluster)
		}
		r.mu.Unlock()
		cancel()
	}
}

var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true, "delete": true, "deletecollection": true}

// Marks are what a cluster's stored LogicalCluster says about its move.
// They survive a restart of the shard; the Registry does not.
type Marks struct {
	// ServedElsewhere: another shard serves the cluster (a move's copy
	// before its cut-over, or the origin's after it).
	ServedElsewhere bool
	// WritesHeld: the cluster's cut-over holds its writes here.
	WritesHeld bool
	// MovedInAt: the cluster moved in, as Registry.MovedIn tells.
	MovedInAt uint64
}

// WithHeldWrites answers writes to held clusters with 429 and
// Retry-After, counts the writes it lets through and tracks the watches.
// A cluster is held by the Registry or by its stored marks (marks may be
// nil). A cluster whose copy here is served elsewhere is held the same
// way, and the system's writes but the move's own are refused (503): this
// shard's controllers writing to a copy would make it differ from the one
// that serves. The request's cluster, user and request info are in its
// context.
func WithHeldWrites(h http.Handler, r *Registry, s runtime.NegotiatedSerializer, marks func(logicalcluster.Name) Marks) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		cluster, ok := logicalcluster.ClusterFromContext(req.Context())
		info, infoOK := apirequest.RequestInfoFrom(req.Context())
		if !ok || cluster.IsWildcard() || !infoOK || !info.IsResourceRequest {
			h.ServeHTTP(w, req)
			return
		}
		u, hasUser := apirequest.UserFrom(req.Context())
		system := hasUser && identities.IsShard(u)
		var m Marks
		if marks != nil {
			m = marks(cluster)
		}
		elsewhere := m.ServedElsewhere
		if !system && (elsewhere || m.WritesHeld || r.Held(cluster)) {
			tooManyRequests(w, req, info, s)
			return
		}
		if info.Verb == "watch" {
			if at := max(r.movedInAt(cluster), m.MovedInAt); at > 0 {
				if rv, err := strconv.ParseUint(req.URL.Query().Get("resourceVersion"), 10, 64); err == nil && rv > 0 && rv < at {
					err := apierrors.NewResourceExpired("the workspace moved to this shard: its resource versions start anew; relist")
					responsewriters.ErrorNegotiated(err, s, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, req)
					return
				}
			}
			ctx, untrack := r.trackWatch(req.Context(), cluster)
			defer untrack()
			h.ServeHTTP(w, req.WithContext(ctx))
			return
		}
		// The system's own writes are held too but for the move's (its
		// migration, dumps, the LogicalCluster's marks): a controller of
		// the origin writing after the final copy would make it differ.
		moveOwn := system && (info.APIGroup == "migration.kcp.io" || info.APIGroup == "core.kcp.io" && info.Resource == "logicalclusters")
		if !writeVerbs[info.Verb] || moveOwn {
			h.ServeHTTP(w, req)
			return
		}
		if elsewhere {
			// No Retry-After: client-go would wait in the controller's worker;
			// the controller's queue retries later instead.
			err := apierrors.NewServiceUnavailable("the workspace is served by another shard: this copy takes only the move's writes")
			responsewriters.ErrorNegotiated(err, s, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, req)
			return
		}
		if m.WritesHeld {
			tooManyRequests(w, req, info, s)
			return
		}
		done, ok := r.beginWrite(cluster)
		if !ok {
			tooManyRequests(w, req, info, s)
			return
		}
		defer done()
		h.ServeHTTP(w, req)
	})
}

func tooManyRequests(w http.ResponseWriter, req *http.Request, info *apirequest.RequestInfo, s runtime.NegotiatedSerializer) {
	err := apierrors.NewTooManyRequests("the workspace is moving to another shard; retry", RetryAfterSeconds)
	w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
	w.Header().Set(HoldHeader, "true")
	responsewriters.ErrorNegotiated(err, s, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, req)
}
