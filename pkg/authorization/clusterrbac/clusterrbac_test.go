package clusterrbac

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

func informer(t *testing.T, example runtime.Object, objs ...metav1.Object) *wildcardinformer.Informer {
	t.Helper()
	inf := wildcardinformer.New(&cache.ListWatch{}, example, "test")
	for _, o := range objs {
		if err := inf.Indexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return inf
}

func in(cluster logicalcluster.Name) metav1.ObjectMeta {
	return metav1.ObjectMeta{Annotations: map[string]string{logicalcluster.AnnotationKey: string(cluster)}}
}

func named(m metav1.ObjectMeta, namespace, name string) metav1.ObjectMeta {
	m.Namespace, m.Name = namespace, name
	return m
}

func TestRBACReadsOnlyTheRequestsClusterPlusBootstrapPolicy(t *testing.T) {
	readSecrets := []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}
	bindTo := func(m metav1.ObjectMeta, role, user string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: m, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	}
	a := New(Informers{
		Roles: informer(t, &rbacv1.Role{},
			&rbacv1.Role{ObjectMeta: named(in("team-a"), "ns", "reader"), Rules: readSecrets}),
		RoleBindings: informer(t, &rbacv1.RoleBinding{},
			&rbacv1.RoleBinding{ObjectMeta: named(in("team-a"), "ns", "alice-reads"), RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}}}),
		ClusterRoles: informer(t, &rbacv1.ClusterRole{},
			// Only in system:admin: a bootstrap role every cluster may bind.
			&rbacv1.ClusterRole{ObjectMeta: named(in(BootstrapCluster), "", "secret-reader"), Rules: readSecrets},
			// Same name in team-b: team-b's own definition wins there.
			&rbacv1.ClusterRole{ObjectMeta: named(in("team-b"), "", "secret-reader")}),
		ClusterRoleBindings: informer(t, &rbacv1.ClusterRoleBinding{},
			bindTo(named(in("team-a"), "", "bob-reads"), "secret-reader", "bob"),
			bindTo(named(in("team-b"), "", "carol-reads"), "secret-reader", "carol"),
			bindTo(named(in(BootstrapCluster), "", "dave-reads"), "secret-reader", "dave")),
	})
	for _, tc := range []struct {
		user      string
		cluster   logicalcluster.Name
		namespace string
		want      authorizer.Decision
	}{
		{"alice", "team-a", "ns", authorizer.DecisionAllow},        // RoleBinding in team-a
		{"alice", "team-b", "ns", authorizer.DecisionNoOpinion},    // ... not in team-b
		{"alice", "team-a", "other", authorizer.DecisionNoOpinion}, // ... nor another namespace
		{"bob", "team-a", "ns", authorizer.DecisionAllow},          // bootstrap ClusterRole bound in team-a
		{"bob", "team-b", "ns", authorizer.DecisionNoOpinion},      // binding is team-a's alone
		{"carol", "team-b", "ns", authorizer.DecisionNoOpinion},    // team-b's own empty role wins
		{"dave", "team-a", "ns", authorizer.DecisionAllow},         // bootstrap bindings apply everywhere
		{"dave", "team-b", "ns", authorizer.DecisionAllow},         // ... naming system:admin's role, as kcp's bootstrap policy reads it
	} {
		ctx := logicalcluster.WithCluster(context.Background(), tc.cluster)
		attr := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: tc.user}, Verb: "get", Resource: "secrets", Namespace: tc.namespace, Name: "s", ResourceRequest: true}
		got, _, err := a.Authorize(ctx, attr)
		if err != nil {
			t.Errorf("%s in %s/%s: %v", tc.user, tc.cluster, tc.namespace, err)
		}
		if got != tc.want {
			t.Errorf("%s get secrets in %s/%s: decision %v, want %v", tc.user, tc.cluster, tc.namespace, got, tc.want)
		}
	}
}

func TestEachStepDecidesWithItsOwnRBACAndSaysWhichItIs(t *testing.T) {
	readSecrets := []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}
	bindTo := func(m metav1.ObjectMeta, role, user string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: m, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	}
	a := New(Informers{
		Roles:        informer(t, &rbacv1.Role{}),
		RoleBindings: informer(t, &rbacv1.RoleBinding{}),
		ClusterRoles: informer(t, &rbacv1.ClusterRole{},
			&rbacv1.ClusterRole{ObjectMeta: named(in(BootstrapCluster), "", "secret-reader"), Rules: readSecrets}),
		ClusterRoleBindings: informer(t, &rbacv1.ClusterRoleBinding{},
			bindTo(named(in(BootstrapCluster), "", "boot-reads"), "secret-reader", "boot"),
			bindTo(named(in("team-a"), "", "loc-reads"), "secret-reader", "loc")),
		GlobalClusterRoles: informer(t, &rbacv1.ClusterRole{}),
		GlobalClusterRoleBindings: informer(t, &rbacv1.ClusterRoleBinding{},
			bindTo(named(in("team-a"), "", "glob-reads"), "secret-reader", "glob")),
		Hosted: func(logicalcluster.Name) bool { return false },
	})
	bootstrap, local, global := a.Steps()
	steps := map[string]authorizer.Authorizer{"bootstrap": bootstrap, "local": local, "global": global}
	ctx := logicalcluster.WithCluster(context.Background(), "team-a")
	for who, allowedBy := range map[string]string{"boot": "bootstrap", "loc": "local", "glob": "global"} {
		attr := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: who}, Verb: "get", Resource: "secrets", Namespace: "ns", Name: "s", ResourceRequest: true}
		for name, s := range steps {
			want := authorizer.DecisionNoOpinion
			if name == allowedBy {
				want = authorizer.DecisionAllow
			}
			if d, _, err := s.Authorize(ctx, attr); err != nil || d != want {
				t.Errorf("%s by the %s step: %v %v, want %v", who, name, d, err, want)
			}
		}
		if d, _, err := a.Authorize(ctx, attr); err != nil || d != authorizer.DecisionAllow {
			t.Errorf("%s by all steps: %v %v, want Allow", who, d, err)
		}
	}
	// The step that allows says which it is, with kcp's prefix; one
	// without an opinion and without a reason gives none.
	for who, want := range map[string]struct {
		step   authorizer.Authorizer
		prefix string
	}{"boot": {bootstrap, "bootstrap policy: "}, "loc": {local, `local policy for cluster "team-a" reason: `}, "glob": {global, `global cluster "team-a" policy: `}} {
		attr := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: who}, Verb: "get", Resource: "secrets", Namespace: "ns", Name: "s", ResourceRequest: true}
		if _, reason, _ := want.step.Authorize(ctx, attr); !strings.HasPrefix(reason, want.prefix) {
			t.Errorf("%s: reason %q, want kcp's prefix %q", who, reason, want.prefix)
		}
		if _, reason, _ := bootstrap.Authorize(ctx, authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "nobody"}, Verb: "get", Resource: "secrets", ResourceRequest: true}); reason != "" {
			t.Errorf("no opinion with reason %q, want none", reason)
		}
	}
}

func TestRBACOfClustersOnOtherShardsComesFromGlobalInformers(t *testing.T) {
	readSecrets := []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}
	bindTo := func(m metav1.ObjectMeta, role, user string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: m, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	}
	a := New(Informers{
		Roles:        informer(t, &rbacv1.Role{}),
		RoleBindings: informer(t, &rbacv1.RoleBinding{}),
		ClusterRoles: informer(t, &rbacv1.ClusterRole{},
			&rbacv1.ClusterRole{ObjectMeta: named(in(BootstrapCluster), "", "bootstrap-reader"), Rules: readSecrets}),
		ClusterRoleBindings: informer(t, &rbacv1.ClusterRoleBinding{},
			bindTo(named(in("local"), "", "erin-reads"), "root-reader", "erin")),
		// root lives on another shard: its role and bindings are global.
		GlobalClusterRoles: informer(t, &rbacv1.ClusterRole{},
			&rbacv1.ClusterRole{ObjectMeta: named(in("root"), "", "root-reader"), Rules: readSecrets}),
		GlobalClusterRoleBindings: informer(t, &rbacv1.ClusterRoleBinding{},
			bindTo(named(in("root"), "", "frank-reads"), "root-reader", "frank"),
			bindTo(named(in("root"), "", "gina-reads"), "bootstrap-reader", "gina"),
			// A stale replica of local's own RBAC never counts on local's shard.
			bindTo(named(in("local"), "", "hank-reads"), "bootstrap-reader", "hank")),
		Hosted: func(c logicalcluster.Name) bool { return c == "local" },
	})
	for _, tc := range []struct {
		user    string
		cluster logicalcluster.Name
		want    authorizer.Decision
	}{
		{"frank", "root", authorizer.DecisionAllow},      // global binding to a global role
		{"gina", "root", authorizer.DecisionAllow},       // global binding to a bootstrap role
		{"frank", "local", authorizer.DecisionNoOpinion}, // root's bindings stay in root
		{"erin", "local", authorizer.DecisionNoOpinion},  // root's roles are not local's
		{"hank", "local", authorizer.DecisionNoOpinion},  // a hosted cluster's replicas are ignored
	} {
		ctx := logicalcluster.WithCluster(context.Background(), tc.cluster)
		attr := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: tc.user}, Verb: "get", Resource: "secrets", Namespace: "ns", Name: "s", ResourceRequest: true}
		if got, _, err := a.Authorize(ctx, attr); err != nil || got != tc.want {
			t.Errorf("%s in %s: %v %v, want %v", tc.user, tc.cluster, got, err, tc.want)
		}
	}
}

func TestBootstrapBindingChangesApplyToTheNextRequest(t *testing.T) {
	readSecrets := []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}
	binding := func(cluster logicalcluster.Name, name, user string) *rbacv1.ClusterRoleBinding {
		m := named(in(cluster), "", name)
		m.ResourceVersion = "1"
		return &rbacv1.ClusterRoleBinding{ObjectMeta: m, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "secret-reader"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	}
	watcher := watch.NewFake()
	bindings := wildcardinformer.New(&cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &rbacv1.ClusterRoleBindingList{ListMeta: metav1.ListMeta{ResourceVersion: "1"},
				Items: []rbacv1.ClusterRoleBinding{*binding(BootstrapCluster, "dave-reads", "dave")}}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watcher, nil },
	}, &rbacv1.ClusterRoleBinding{}, "clusterrolebindings")
	a := New(Informers{
		Roles:        informer(t, &rbacv1.Role{}),
		RoleBindings: informer(t, &rbacv1.RoleBinding{}),
		ClusterRoles: informer(t, &rbacv1.ClusterRole{},
			&rbacv1.ClusterRole{ObjectMeta: named(in(BootstrapCluster), "", "secret-reader"), Rules: readSecrets}),
		ClusterRoleBindings: bindings,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go bindings.Run(ctx)
	if err := wildcardinformer.WaitForSync(ctx, bindings); err != nil {
		t.Fatal(err)
	}
	decision := func(u string, cluster logicalcluster.Name) authorizer.Decision {
		attr := authorizer.AttributesRecord{User: &user.DefaultInfo{Name: u}, Verb: "get", Resource: "secrets", Namespace: "ns", Name: "s", ResourceRequest: true}
		d, _, err := a.Authorize(logicalcluster.WithCluster(context.Background(), cluster), attr)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// awaitDecision waits for the informer to have handled the last event.
	awaitDecision := func(u string, cluster logicalcluster.Name, want authorizer.Decision) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
			return decision(u, cluster) == want, nil
		}); err != nil {
			t.Fatalf("%s in %s: decision %v, want %v", u, cluster, decision(u, cluster), want)
		}
	}
	awaitDecision("dave", "team-a", authorizer.DecisionAllow)
	awaitDecision("erin", "team-a", authorizer.DecisionNoOpinion) // cached now

	watcher.Add(binding(BootstrapCluster, "erin-reads", "erin"))
	awaitDecision("erin", "team-a", authorizer.DecisionAllow)
	awaitDecision("erin", BootstrapCluster, authorizer.DecisionAllow)

	watcher.Delete(binding(BootstrapCluster, "dave-reads", "dave"))
	awaitDecision("dave", "team-a", authorizer.DecisionNoOpinion)

	// A binding of another cluster leaves the bootstrap bindings as they are.
	watcher.Add(binding("team-b", "frank-reads", "frank"))
	awaitDecision("frank", "team-b", authorizer.DecisionAllow)
	if d := decision("frank", "team-a"); d != authorizer.DecisionNoOpinion {
		t.Errorf("frank in team-a: %v, want NoOpinion", d)
	}
	if d := decision("erin", "team-b"); d != authorizer.DecisionAllow {
		t.Errorf("erin in team-b: %v, want Allow", d)
	}
}
