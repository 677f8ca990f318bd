package workspacecontent

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
)

type fakeRBAC struct{ allow map[string]bool }

func (f fakeRBAC) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if f.allow[a.GetUser().GetName()] && a.GetVerb() == "access" {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}
func (f fakeRBAC) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(f.Authorize(ctx, a))
}
func (f fakeRBAC) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", nil
}

func TestAuthorizeEntry(t *testing.T) {
	now := metav1.Now()
	initializer := &user.DefaultInfo{Name: "init", Groups: []string{InitializerGroup("root:mine")}}
	otherInitializer := &user.DefaultInfo{Name: "init", Groups: []string{InitializerGroup("root:other")}}
	terminator := &user.DefaultInfo{Name: "term", Groups: []string{TerminatorGroup("root:mine")}}
	clusters := map[logicalcluster.Name]*corev1alpha1.LogicalCluster{
		"open":         {},
		"cutting-over": {},
		"handed-over":  {ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{migrationv1alpha1.ServedElsewhereAnnotationKey: "true"}}},
		"guarded":      {ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{corev1alpha1.RequiredGroupsAnnotationKey: "a,b;c"}}},
		"initializing": {Status: corev1alpha1.LogicalClusterStatus{Phase: corev1alpha1.LogicalClusterPhaseInitializing,
			Initializers: []corev1alpha1.LogicalClusterInitializer{"root:mine"}, Terminators: []corev1alpha1.LogicalClusterTerminator{"root:mine"}}},
		"initialized": {Status: corev1alpha1.LogicalClusterStatus{Phase: corev1alpha1.LogicalClusterPhaseReady,
			Terminators: []corev1alpha1.LogicalClusterTerminator{"root:mine"}}},
		"terminating": {ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1alpha1.LogicalClusterStatus{Phase: corev1alpha1.LogicalClusterPhaseTerminating,
			Initializers: []corev1alpha1.LogicalClusterInitializer{"root:mine"}, Terminators: []corev1alpha1.LogicalClusterTerminator{"root:mine"}}},
		"released": {ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1alpha1.LogicalClusterStatus{Phase: corev1alpha1.LogicalClusterPhaseDeleting}},
	}
	a := New(func(n logicalcluster.Name) *corev1alpha1.LogicalCluster { return clusters[n] },
		fakeRBAC{allow: map[string]bool{"alice": true, "carol": true, "bob": true}}, func(n logicalcluster.Name) bool { return n == "moved" || n == "cutting-over" || n == "handed-over" })
	ownSA := &user.DefaultInfo{Name: "system:serviceaccount:ns:sa", Extra: map[string][]string{scope.ServiceAccountClusterExtraKey: {"guarded"}}}
	for _, tc := range []struct {
		name    string
		cluster logicalcluster.Name
		user    *user.DefaultInfo
		attr    authorizer.AttributesRecord
		want    authorizer.Decision
	}{
		{"missing cluster is denied", "nope", &user.DefaultInfo{Name: "alice"}, authorizer.AttributesRecord{}, authorizer.DecisionDeny},
		{"a cluster moved away is left to the hold", "moved", &user.DefaultInfo{Name: "mallory"}, authorizer.AttributesRecord{ResourceRequest: true, Resource: "configmaps", Verb: "create"}, authorizer.DecisionAllow},
		{"a cluster moved away serves no other path", "moved", &user.DefaultInfo{Name: "mallory"}, authorizer.AttributesRecord{Path: "/version"}, authorizer.DecisionDeny},
		{"a handed-over cluster is left to the hold", "handed-over", &user.DefaultInfo{Name: "mallory"}, authorizer.AttributesRecord{ResourceRequest: true, Resource: "configmaps", Verb: "get"}, authorizer.DecisionAllow},
		{"a cluster held for its cut-over is judged as ever", "cutting-over", &user.DefaultInfo{Name: "mallory"}, authorizer.AttributesRecord{ResourceRequest: true, Resource: "configmaps", Verb: "get"}, authorizer.DecisionDeny},
		{"access granted passes on", "open", &user.DefaultInfo{Name: "alice"}, authorizer.AttributesRecord{}, authorizer.DecisionNoOpinion},
		{"no access is denied", "open", &user.DefaultInfo{Name: "mallory"}, authorizer.AttributesRecord{}, authorizer.DecisionDeny},
		{"kcp admin needs no access binding", "open", &user.DefaultInfo{Name: "x", Groups: []string{identities.KCPAdminGroup}}, authorizer.AttributesRecord{}, authorizer.DecisionNoOpinion},
		{"kcp admin still needs the cluster", "nope", &user.DefaultInfo{Name: "x", Groups: []string{identities.KCPAdminGroup}}, authorizer.AttributesRecord{}, authorizer.DecisionDeny},
		{"required groups: all of one alternative", "guarded", &user.DefaultInfo{Name: "alice", Groups: []string{"a", "b"}}, authorizer.AttributesRecord{}, authorizer.DecisionNoOpinion},
		{"required groups: other alternative", "guarded", &user.DefaultInfo{Name: "carol", Groups: []string{"c"}}, authorizer.AttributesRecord{}, authorizer.DecisionNoOpinion},
		{"required groups: partial alternative refused", "guarded", &user.DefaultInfo{Name: "bob", Groups: []string{"a"}}, authorizer.AttributesRecord{}, authorizer.DecisionDeny},
		{"own service account needs no access binding", "guarded", ownSA, authorizer.AttributesRecord{}, authorizer.DecisionNoOpinion},
		{"own service account still needs the cluster", "nope", &user.DefaultInfo{Name: "system:serviceaccount:ns:sa", Extra: map[string][]string{scope.ServiceAccountClusterExtraKey: {"nope"}}}, authorizer.AttributesRecord{}, authorizer.DecisionDeny},
		{"service account of another cluster needs access", "open", ownSA, authorizer.AttributesRecord{}, authorizer.DecisionDeny},
		{"system clusters are not checked", "system:admin", &user.DefaultInfo{Name: "mallory"}, authorizer.AttributesRecord{}, authorizer.DecisionNoOpinion},
		{"initializer enters a cluster waiting for it", "initializing", initializer, authorizer.AttributesRecord{}, authorizer.DecisionAllow},
		{"initializer of another type is refused", "initializing", otherInitializer, authorizer.AttributesRecord{}, authorizer.DecisionDeny},
		{"initializer is refused once the cluster is initialized", "initialized", initializer, authorizer.AttributesRecord{}, authorizer.DecisionDeny},
		{"initializer is refused while the cluster is deleted", "terminating", initializer, authorizer.AttributesRecord{}, authorizer.DecisionDeny},
		{"initializer still needs the cluster", "nope", initializer, authorizer.AttributesRecord{}, authorizer.DecisionDeny},
		{"terminator enters a cluster being deleted", "terminating", terminator, authorizer.AttributesRecord{}, authorizer.DecisionAllow},
		{"terminator is refused before deletion", "initialized", terminator, authorizer.AttributesRecord{}, authorizer.DecisionDeny},
		{"terminator is refused once released", "released", terminator, authorizer.AttributesRecord{}, authorizer.DecisionDeny},
		{"logical cluster admin creates the LogicalCluster", "new", &user.DefaultInfo{Name: "sched", Groups: []string{identities.LogicalClusterAdminGroup}},
			authorizer.AttributesRecord{ResourceRequest: true, APIGroup: corev1alpha1.GroupName, Resource: "logicalclusters", Verb: "create"}, authorizer.DecisionAllow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attr := tc.attr
			attr.User = tc.user
			got, _, _ := a.Authorize(logicalcluster.WithCluster(context.Background(), tc.cluster), attr)
			if got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDeepSARNeedsNoAccess: a check another workspace makes on a user's
// behalf (kcp's deep SubjectAccessReview) is left to the target's RBAC.
func TestDeepSARNeedsNoAccess(t *testing.T) {
	a := New(func(logicalcluster.Name) *corev1alpha1.LogicalCluster { return &corev1alpha1.LogicalCluster{} }, fakeRBAC{allow: map[string]bool{}}, nil)
	attr := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "mallory"}, Verb: "bind", Resource: "apiexports", ResourceRequest: true}
	ctx := logicalcluster.WithCluster(context.Background(), "provider")
	if got, _, _ := a.Authorize(ctx, attr); got != authorizer.DecisionDeny {
		t.Errorf("without access: %v, want Deny", got)
	}
	if got, _, _ := a.Authorize(WithDeepSAR(ctx), attr); got != authorizer.DecisionNoOpinion {
		t.Errorf("deep SubjectAccessReview without access: %v, want NoOpinion (RBAC decides)", got)
	}
}
