package maximalpermission

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/cache"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/authorization/clusterrbac"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

func informer(t *testing.T, example runtime.Object, objs ...runtime.Object) *wildcardinformer.Informer {
	t.Helper()
	inf := wildcardinformer.New(&cache.ListWatch{}, example, "test")
	for _, o := range objs {
		if err := inf.Indexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return inf
}

func meta(cluster logicalcluster.Name, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Annotations: map[string]string{logicalcluster.AnnotationKey: string(cluster)}}
}

// TestPolicyIsJudgedByTheExportClustersRBAC runs the authorizer on the
// shard's informers and the RBAC authorizer it is wired with: the export's
// cluster holds the policy, the request's cluster the binding.
func TestPolicyIsJudgedByTheExportClustersRBAC(t *testing.T) {
	policy := &rbacv1.ClusterRole{ObjectMeta: meta(provider, "widget-readers"),
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{group}, Resources: []string{"widgets"}}}}
	bindPolicy := func(cluster logicalcluster.Name, subject string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: meta(cluster, "widget-readers-"+string(cluster)),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "widget-readers"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: subject}}}
	}
	rbac := clusterrbac.New(clusterrbac.Informers{
		Roles:        informer(t, &rbacv1.Role{}),
		RoleBindings: informer(t, &rbacv1.RoleBinding{}),
		// The consumer's own copy of the role is no policy.
		ClusterRoles:        informer(t, &rbacv1.ClusterRole{}, policy, &rbacv1.ClusterRole{ObjectMeta: meta(consumer, "widget-readers"), Rules: policy.Rules}),
		ClusterRoleBindings: informer(t, &rbacv1.ClusterRoleBinding{}, bindPolicy(provider, Prefix+"alice"), bindPolicy(consumer, Prefix+"bob")),
	})
	limited := binding("widgets", provider, "limited", "widgets", "gadgets")
	bindings := informer(t, &apisv1alpha2.APIBinding{}, limited)
	exports := informer(t, &apisv1alpha2.APIExport{}, export("limited", local))
	a, err := NewForInformers(bindings, exports, rbac)
	if err != nil {
		t.Fatal(err)
	}

	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	bob := &user.DefaultInfo{Name: "bob", Groups: []string{user.AllAuthenticated}}
	check := func(t *testing.T, cluster logicalcluster.Name, attr authorizer.AttributesRecord, want authorizer.Decision) {
		t.Helper()
		d, reason, err := a.Authorize(logicalcluster.WithCluster(context.Background(), cluster), attr)
		if d != want || err != nil {
			t.Errorf("%s in %s as %s: got %v %q %v, want %v", attr.Verb, cluster, attr.User.GetName(), d, reason, err, want)
		}
	}
	check(t, consumer, request(alice, "list", "widgets", ""), authorizer.DecisionNoOpinion)
	check(t, consumer, request(alice, "create", "widgets", ""), authorizer.DecisionDeny)
	// The policy names widgets only, not the other resource of the binding.
	check(t, consumer, request(alice, "list", "gadgets", ""), authorizer.DecisionDeny)
	// bob's prefixed grant is in the consumer's cluster.
	check(t, consumer, request(bob, "list", "widgets", ""), authorizer.DecisionDeny)
	// Another cluster binds nothing.
	check(t, "elsewhere", request(bob, "create", "widgets", ""), authorizer.DecisionNoOpinion)

	// Once the binding no longer serves widgets, the policy no longer applies.
	unbound := limited.DeepCopy()
	unbound.Status.BoundResources = unbound.Status.BoundResources[1:]
	if err := bindings.Indexer().Update(unbound); err != nil {
		t.Fatal(err)
	}
	check(t, consumer, request(bob, "create", "widgets", ""), authorizer.DecisionNoOpinion)
	check(t, consumer, request(bob, "create", "gadgets", ""), authorizer.DecisionDeny)
}
