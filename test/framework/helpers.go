package framework

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/kcpclient"
)

// KCPClient is a client of kcp's kinds for cfg; the test fails if it
// cannot be built.
func KCPClient(t testing.TB, cfg *rest.Config) *kcpclient.Client {
	t.Helper()
	c, err := kcpclient.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// KubeClient is a Kubernetes clientset for cfg; the test fails if it
// cannot be built.
func KubeClient(t testing.TB, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Grant creates, in the workspace of kc, a ClusterRole with rules and binds
// it to user; the test fails if either cannot be created.
func Grant(ctx context.Context, t testing.TB, kc kubernetes.Interface, name, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	GrantTo(ctx, t, kc, name, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}, rules...)
}

// GrantTo is Grant for any subject: a group, a service account.
func GrantTo(ctx context.Context, t testing.TB, kc kubernetes.Interface, name string, subject rbacv1.Subject, rules ...rbacv1.PolicyRule) {
	t.Helper()
	if _, err := kc.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ClusterRole %s: %v", name, err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{subject},
	}
	if _, err := kc.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ClusterRoleBinding %s: %v", name, err)
	}
}
