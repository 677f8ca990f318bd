package replication

import (
	"context"
	"fmt"
	"sync"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestLabelerMarksAndUnmarksTheRBACOtherShardsNeed(t *testing.T) {
	roles := newFakeResource(func() runtime.Object { return &rbacv1.ClusterRoleList{} })
	bindings := newFakeResource(func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} })
	srv := fakeShardServer(t, map[string]*fakeResource{clusterRolesKind: roles, clusterRoleBindingsKind: bindings})
	clientset, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, QPS: 1000, Burst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	roleInformer := roles.informer(&rbacv1.ClusterRole{}, "wildcard-clusterroles")
	bindingInformer := bindings.informer(&rbacv1.ClusterRoleBinding{}, "wildcard-clusterrolebindings")
	l, err := NewLabeler(LabelerConfig{ClusterRoles: roleInformer, ClusterRoleBindings: bindingInformer, Client: clientset.RbacV1().RESTClient()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(){
		func() { roleInformer.Run(ctx) },
		func() { bindingInformer.Run(ctx) },
		func() { l.Run(ctx, 2) },
	} {
		wg.Add(1)
		go func() { defer wg.Done(); run() }()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })

	rule := func(group, resource, verb string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: []string{verb}}
	}
	role := func(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	}
	binding := func(name, roleName string, subject string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: subject}},
		}
	}
	const c1, c2 = logicalcluster.Name("c1"), logicalcluster.Name("c2")
	roles.set(logicalcluster.SystemAdmin, role("cluster-admin", rule("*", "*", "*")))
	roles.set(logicalcluster.SystemAdmin, role("exports-binder", rule("apis.kcp.io", "apiexports", "bind")))
	roles.set(c1, role("binder", rule("apis.kcp.io", "apiexports", "bind")))
	roles.set(c1, role("content-reader", rule("apis.kcp.io", "apiexports/content", "list")))
	roles.set(c1, role("type-user", rule("tenancy.kcp.io", "workspacetypes", "use")))
	roles.set(c1, role("viewer", rule("", "configmaps", "get")))
	roles.set(c1, role("claimed", rule("", "configmaps", "get")))
	bindings.set(c1, binding("bind-binder", "binder", "alice"))
	bindings.set(c1, binding("bind-type-user", "type-user", "alice"))
	bindings.set(c1, binding("bind-viewer", "viewer", "alice"))
	bindings.set(c1, binding("claim", "claimed", "apis.kcp.io:binding:alice"))
	// Every workspace's owner is bound to the bootstrap cluster-admin: such
	// a binding is not replicated (it would copy every workspace to every
	// shard); a bootstrap role that names bind is.
	bindings.set(c2, binding("admins", "cluster-admin", "bob"))
	bindings.set(c2, binding("binders", "exports-binder", "bob"))

	marked := func(r *fakeResource, cluster logicalcluster.Name, name, want string) func() error {
		return func() error {
			obj := r.get(cluster, name)
			if obj == nil {
				return fmt.Errorf("%s|%s is gone", cluster, name)
			}
			if got := obj.(metav1.Object).GetAnnotations()[ReplicateAnnotationKey]; got != want {
				return fmt.Errorf("%s|%s is marked %q, want %q", cluster, name, got, want)
			}
			return nil
		}
	}
	for _, tc := range []struct {
		r       *fakeResource
		cluster logicalcluster.Name
		name    string
		want    string
	}{
		{roles, c1, "binder", "apis.kcp.io"},
		{roles, c1, "content-reader", "apis.kcp.io"},
		{roles, c1, "type-user", "tenancy.kcp.io"},
		{roles, c1, "claimed", "apis.kcp.io"},
		{bindings, c1, "bind-binder", "apis.kcp.io"},
		{bindings, c1, "bind-type-user", "tenancy.kcp.io"},
		{bindings, c1, "claim", "apis.kcp.io"},
		{bindings, c2, "binders", "apis.kcp.io"},
	} {
		eventually(t, "marked", marked(tc.r, tc.cluster, tc.name, tc.want))
	}
	// Everything above is done; nothing else was marked.
	for _, tc := range []struct {
		r       *fakeResource
		cluster logicalcluster.Name
		name    string
	}{{roles, c1, "viewer"}, {bindings, c1, "bind-viewer"}, {roles, logicalcluster.SystemAdmin, "cluster-admin"}, {bindings, c2, "admins"}} {
		if err := marked(tc.r, tc.cluster, tc.name, "")(); err != nil {
			t.Error(err)
		}
	}

	// A role that stops granting bind is unmarked, and so is its binding.
	roles.set(c1, withAnnotations(role("binder", rule("apis.kcp.io", "apiexports", "get")), roles.get(c1, "binder")))
	eventually(t, "role unmarked", marked(roles, c1, "binder", ""))
	eventually(t, "binding of an unmarked role unmarked", marked(bindings, c1, "bind-binder", ""))
	// A role that starts granting use is marked, and so is its binding.
	roles.set(c1, withAnnotations(role("viewer", rule("tenancy.kcp.io", "workspacetypes", "use")), roles.get(c1, "viewer")))
	eventually(t, "role marked", marked(roles, c1, "viewer", "tenancy.kcp.io"))
	eventually(t, "binding of a marked role marked", marked(bindings, c1, "bind-viewer", "tenancy.kcp.io"))
	// A role no maximal permission policy subject is bound to any more is
	// unmarked.
	bindings.remove(c1, "claim")
	eventually(t, "role without claims unmarked", marked(roles, c1, "claimed", ""))
}

// withAnnotations gives obj the annotations of the stored object.
func withAnnotations[T metav1.Object](obj T, stored runtime.Object) T {
	obj.SetAnnotations(stored.(metav1.Object).GetAnnotations())
	return obj
}
