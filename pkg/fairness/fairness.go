// Package fairness runs API Priority and Fairness on a shard with flows of
// workspaces: a tenant's requests are classified and queued as the user
// "<logical cluster>/<user>", so that one workspace flooding its share does
// not delay another's requests, while the system's own identities keep
// priority levels of their own. The configuration is upstream's
// FlowSchemas and PriorityLevelConfigurations, held by each shard in its
// system:admin logical cluster, which tenants cannot reach.
package fairness

import (
	"context"
	"net/http"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/storage"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fq "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// ConfigCluster holds the shard's FlowSchemas and PriorityLevelConfigurations.
const ConfigCluster = logicalcluster.SystemAdmin

// ByWorkspace wraps the APF controller so that every tenant request is
// classified as its FlowUser. Requests of system identities are classified
// as they are.
//
// Object and watch counts, which upstream's work estimator uses to price
// LISTs and the fan-out of writes, are kept per resource across all
// workspaces of the shard: one tenant's objects and watches would raise the
// price of every other's requests, so the estimator gets none. A tenant's
// LIST is priced instead by what the last LIST of the same resource in its
// workspace read (lists; nil: not priced), as upstream's count-based
// estimate prices one: a seat per ObjectsPerSeat objects, up to the priority
// level's maximum.
func ByWorkspace(inner utilflowcontrol.Interface, lists ListSizes) utilflowcontrol.Interface {
	return byWorkspace{Interface: inner, lists: lists}
}

// ListSizes tells how many objects the last LIST of a resource in a
// logical cluster read.
type ListSizes interface {
	Get(cluster logicalcluster.Name, resource schema.GroupResource) (int64, bool)
}

// ObjectsPerSeat is upstream's default price of a LIST by object count.
const ObjectsPerSeat = 100

type byWorkspace struct {
	utilflowcontrol.Interface
	lists ListSizes
}

func (b byWorkspace) Handle(ctx context.Context, rd utilflowcontrol.RequestDigest,
	noteFn func(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration, flowDistinguisher string),
	workEstimator func() fcrequest.WorkEstimate, queueNoteFn fq.QueueNoteFn, execFn func()) {
	rd.User = FlowUser(ctx, rd.User)
	if n, ok := b.listed(ctx, rd); ok && workEstimator != nil {
		// The classification (noteFn) comes before the estimate: it names
		// the priority level whose maximum bounds the price.
		var level string
		note := noteFn
		noteFn = func(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration, distinguisher string) {
			level = pl.Name
			if note != nil {
				note(fs, pl, distinguisher)
			}
		}
		estimate := workEstimator
		workEstimator = func() fcrequest.WorkEstimate {
			return priceList(estimate(), n, b.GetMaxSeats(level))
		}
	}
	b.Interface.Handle(ctx, rd, noteFn, workEstimator, queueNoteFn, execFn)
}

// listed is the size of the last LIST like rd's: a tenant's LIST of a
// collection of one workspace.
func (b byWorkspace) listed(ctx context.Context, rd utilflowcontrol.RequestDigest) (int64, bool) {
	info := rd.RequestInfo
	if b.lists == nil || info == nil || info.Verb != "list" || info.Name != "" || rd.User == nil || identities.IsSystem(rd.User) {
		return 0, false
	}
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok || cluster == "" || cluster.IsWildcard() {
		return 0, false
	}
	return b.lists.Get(cluster, schema.GroupResource{Group: info.APIGroup, Resource: info.Resource})
}

// priceList raises est to a seat per ObjectsPerSeat of n objects, at most
// maxSeats (0: no maximum known).
func priceList(est fcrequest.WorkEstimate, n int64, maxSeats uint64) fcrequest.WorkEstimate {
	seats := uint64((n + ObjectsPerSeat - 1) / ObjectsPerSeat)
	if maxSeats > 0 && seats > maxSeats {
		seats = maxSeats
	}
	if seats > est.InitialSeats {
		est.InitialSeats = seats
	}
	return est
}

func (byWorkspace) GetInterestedWatchCount(*request.RequestInfo) int { return 0 }

// RegisterWatch keeps no count either: GetInterestedWatchCount reads none.
func (byWorkspace) RegisterWatch(*http.Request) utilflowcontrol.ForgetWatchFunc {
	return func() {}
}

// FlowUser is the user APF sees for a request of u in the logical cluster
// of ctx: a tenant as "<cluster>/<name>" (so a FlowSchema distinguishing by
// user keys its flows by workspace and user, and a User subject names a
// tenant user of one workspace so), system identities as they are.
func FlowUser(ctx context.Context, u user.Info) user.Info {
	if u == nil || identities.IsSystem(u) {
		return u
	}
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok || cluster == "" || cluster.IsWildcard() {
		return u
	}
	return &user.DefaultInfo{Name: string(cluster) + "/" + u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}
}

// NoObjectCounts is the object count tracker of the work estimator: counts
// are per resource across all workspaces, so none is reported and a LIST is
// priced as any other request (see ByWorkspace).
type NoObjectCounts struct{}

func (NoObjectCounts) Set(string, storage.Stats) {}
func (NoObjectCounts) Get(string) (storage.Stats, error) {
	return storage.Stats{}, fcrequest.ObjectCountNotFoundErr
}
func (NoObjectCounts) RunUntil(<-chan struct{}) {}
