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
// price of every other's requests, so ByWorkspace prices neither.
func ByWorkspace(inner utilflowcontrol.Interface) utilflowcontrol.Interface {
	return byWorkspace{Interface: inner}
}

type byWorkspace struct {
	utilflowcontrol.Interface
}

func (b byWorkspace) Handle(ctx context.Context, rd utilflowcontrol.RequestDigest,
	noteFn func(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration, flowDistinguisher string),
	workEstimator func() fcrequest.WorkEstimate, queueNoteFn fq.QueueNoteFn, execFn func()) {
	rd.User = FlowUser(ctx, rd.User)
	b.Interface.Handle(ctx, rd, noteFn, workEstimator, queueNoteFn, execFn)
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
