package fairness

import (
	"context"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fq "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestTenantsAreKeyedByWorkspaceAndUserTheSystemAsItIs(t *testing.T) {
	tenant := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	for _, tc := range []struct {
		name    string
		cluster logicalcluster.Name
		user    user.Info
		want    string
	}{
		{"tenant in its workspace", "abc", tenant, "abc/alice"},
		{"the same name in another workspace is another flow", "xyz", tenant, "xyz/alice"},
		{"a service account of a workspace", "abc", &user.DefaultInfo{Name: "system:serviceaccount:default:sa", Groups: []string{"system:serviceaccounts"}}, "abc/system:serviceaccount:default:sa"},
		{"system:masters", "abc", &user.DefaultInfo{Name: "shard-admin", Groups: []string{user.SystemPrivilegedGroup}}, "shard-admin"},
		{"kcp-admin", "abc", &user.DefaultInfo{Name: identities.KCPAdminUser, Groups: []string{identities.KCPAdminGroup}}, identities.KCPAdminUser},
		{"a shard's logical cluster admin", "abc", &user.DefaultInfo{Name: identities.LogicalClusterAdminUser, Groups: []string{identities.LogicalClusterAdminGroup}}, identities.LogicalClusterAdminUser},
		{"wildcard requests", logicalcluster.Wildcard, tenant, "alice"},
		{"no cluster", "", tenant, "alice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.cluster != "" {
				ctx = logicalcluster.WithCluster(ctx, tc.cluster)
			}
			if got := FlowUser(ctx, tc.user).GetName(); got != tc.want {
				t.Errorf("flow user %q, want %q", got, tc.want)
			}
		})
	}
}

// recordingAPF classifies every request into the workspaces level and
// records the digest and the estimate it is given.
type recordingAPF struct {
	utilflowcontrol.Interface
	digest   utilflowcontrol.RequestDigest
	estimate fcrequest.WorkEstimate
}

func (r *recordingAPF) Handle(_ context.Context, rd utilflowcontrol.RequestDigest,
	noteFn func(*flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration, string),
	workEstimator func() fcrequest.WorkEstimate, _ fq.QueueNoteFn, execFn func()) {
	r.digest = rd
	if noteFn != nil {
		noteFn(&flowcontrolv1.FlowSchema{}, &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: WorkspacesPriorityLevel}}, "")
	}
	if workEstimator != nil {
		r.estimate = workEstimator()
	}
	execFn()
}

func (r *recordingAPF) GetMaxSeats(level string) uint64 {
	if level != WorkspacesPriorityLevel {
		return 1
	}
	return 10
}

func TestByWorkspaceHandsTheFlowUserOnAndPricesNoCounts(t *testing.T) {
	rec := &recordingAPF{}
	apf := ByWorkspace(rec, nil)
	ctx := logicalcluster.WithCluster(context.Background(), "abc")
	ran := false
	apf.Handle(ctx, utilflowcontrol.RequestDigest{User: &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}}, nil, nil, nil, func() { ran = true })
	if !ran || rec.digest.User.GetName() != "abc/alice" {
		t.Errorf("executed %v as %q, want abc/alice", ran, rec.digest.User.GetName())
	}
	if n := apf.GetInterestedWatchCount(nil); n != 0 {
		t.Errorf("interested watches %d, want none counted", n)
	}
	if _, err := (NoObjectCounts{}).Get("configmaps"); err != fcrequest.ObjectCountNotFoundErr {
		t.Errorf("object count error %v, want ObjectCountNotFoundErr", err)
	}
}

func TestConfigurationIsValidAndPutsTenantsLast(t *testing.T) {
	levels := map[string]bool{}
	for _, pl := range priorityLevels {
		levels[pl.Name] = true
	}
	levels["exempt"], levels["catch-all"] = true, true
	for _, fs := range flowSchemas {
		if !levels[fs.Spec.PriorityLevelConfiguration.Name] {
			t.Errorf("flow schema %s names the unknown priority level %s", fs.Name, fs.Spec.PriorityLevelConfiguration.Name)
		}
		if fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("flow schema %s is not kept up to date by the shard", fs.Name)
		}
	}
	var system, tenants int32
	for _, fs := range flowSchemas {
		switch fs.Name {
		case SystemFlowSchema:
			system = fs.Spec.MatchingPrecedence
		case WorkspacesFlowSchema:
			tenants = fs.Spec.MatchingPrecedence
		}
	}
	if system == 0 || tenants <= system {
		t.Errorf("system identities (precedence %d) must match before tenants (%d)", system, tenants)
	}
}

type listSizes map[string]int64

func (l listSizes) Get(cluster logicalcluster.Name, gr schema.GroupResource) (int64, bool) {
	n, ok := l[string(cluster)+"/"+gr.String()]
	return n, ok
}

func TestATenantsListIsPricedByItsOwnWorkspacesObjects(t *testing.T) {
	lists := listSizes{"big/configmaps": 1000, "mid/configmaps": 350, "huge/configmaps": 50000}
	tenant := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	admin := &user.DefaultInfo{Name: identities.KCPAdminUser, Groups: []string{identities.KCPAdminGroup}}
	list := &request.RequestInfo{IsResourceRequest: true, Verb: "list", APIVersion: "v1", Resource: "configmaps"}
	get := &request.RequestInfo{IsResourceRequest: true, Verb: "get", APIVersion: "v1", Resource: "configmaps", Name: "x"}
	for _, tc := range []struct {
		name    string
		cluster logicalcluster.Name
		user    user.Info
		info    *request.RequestInfo
		want    uint64
	}{
		{"a LIST of 1,000 objects", "big", tenant, list, 10},
		{"a LIST of 350 objects", "mid", tenant, list, 4},
		{"past the level's maximum", "huge", tenant, list, 10},
		{"the same resource in a small workspace", "small", tenant, list, 1},
		{"a GET", "big", tenant, get, 1},
		{"the system's LIST", "big", admin, list, 1},
		{"a wildcard LIST", logicalcluster.Wildcard, tenant, list, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingAPF{}
			apf := ByWorkspace(rec, lists)
			ctx := logicalcluster.WithCluster(context.Background(), tc.cluster)
			noted := ""
			note := func(_ *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration, _ string) {
				noted = pl.Name
			}
			apf.Handle(ctx, utilflowcontrol.RequestDigest{RequestInfo: tc.info, User: tc.user}, note,
				func() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: 1} }, nil, func() {})
			if noted != WorkspacesPriorityLevel {
				t.Errorf("the caller's note saw level %q", noted)
			}
			if rec.estimate.InitialSeats != tc.want {
				t.Errorf("%d seats, want %d", rec.estimate.InitialSeats, tc.want)
			}
		})
	}
}
