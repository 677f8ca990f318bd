package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/test/framework"
)

// robotCluster is a cluster with namespace "team" and a service account
// "robot" that is cluster-admin there.
func robotCluster(ctx context.Context, t *testing.T, s *framework.Shard, prefix string) kcCluster {
	t.Helper()
	c := newKCCluster(ctx, t, s, prefix)
	createNamespace(ctx, t, c.kube, "team")
	if _, err := c.kube.CoreV1().ServiceAccounts("team").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "robot-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "team", Name: "robot"}},
	}
	if _, err := c.kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return c
}

// createTokenSecret creates a secret-based token of a service account.
func createTokenSecret(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name, serviceAccount string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{corev1.ServiceAccountNameKey: serviceAccount}},
		Type:       corev1.SecretTypeServiceAccountToken,
	}
	created, err := c.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create token secret %s/%s: %v", ns, name, err)
	}
	return created
}

// waitFilled waits until the tokens controller filled a token secret.
func waitFilled(t *testing.T, c kubernetes.Interface, ns, name string) *corev1.Secret {
	t.Helper()
	var got *corev1.Secret
	framework.EventuallyWithin(t, gcTimeout, func(ctx context.Context) error {
		var err error
		if got, err = c.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		if len(got.Data["token"]) == 0 || len(got.Data["ca.crt"]) == 0 || len(got.Data["namespace"]) == 0 {
			return fmt.Errorf("not filled: %+v", got)
		}
		return nil
	}, "token secret %s/%s was never filled", ns, name)
	return got
}

// TestLegacyServiceAccountTokenSecretWorksOnlyInItsCluster: a
// kubernetes.io/service-account-token secret gets a token, the CA and the
// namespace, as in Kubernetes. The token must not let its holder act as the
// same-named service account of another workspace (which has the same
// cluster-admin binding), and it stops working when its secret goes.
func TestLegacyServiceAccountTokenSecretWorksOnlyInItsCluster(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	a, b := robotCluster(ctx, t, s, "legacy-a"), robotCluster(ctx, t, s, "legacy-b")

	createTokenSecret(ctx, t, a.kube, "team", "robot-token", "robot")
	secret := waitFilled(t, a.kube, "team", "robot-token")
	if !bytes.Equal(secret.Data["ca.crt"], rootCA(t, s)) || string(secret.Data["namespace"]) != "team" {
		t.Errorf("ca.crt is not the serving certificate's CA or namespace is %q", secret.Data["namespace"])
	}
	if secret.Annotations[corev1.ServiceAccountUIDKey] == "" {
		t.Errorf("secret has no %s annotation", corev1.ServiceAccountUIDKey)
	}
	token := string(secret.Data["token"])
	as := func(cluster string) kubernetes.Interface {
		cfg := rest.AnonymousClientConfig(s.ClusterConfig(t, "shard-base", cluster))
		cfg.BearerToken = token
		return newKubeClient(t, cfg)
	}

	framework.EventuallyWithin(t, gcTimeout, func(ctx context.Context) error {
		_, err := as(a.name).CoreV1().ConfigMaps("team").List(ctx, metav1.ListOptions{})
		return err
	}, "legacy token in its own cluster")
	review, err := as(a.name).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview: %v", err)
	}
	if u := review.Status.UserInfo; u.Username != "system:serviceaccount:team:robot" {
		t.Errorf("user %q, want the robot service account", u.Username)
	}

	_, err = as(b.name).CoreV1().ConfigMaps("team").List(ctx, metav1.ListOptions{})
	requireStatus(t, err, http.StatusForbidden, "list configmaps in another cluster with A's legacy token")
	_, err = as(b.name).CoreV1().Secrets("team").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "planted"}}, metav1.CreateOptions{})
	requireStatus(t, err, http.StatusForbidden, "create a secret in another cluster with A's legacy token")

	// A's secret goes: its token stops working (after the authentication
	// cache's few seconds).
	if err := a.kube.CoreV1().Secrets("team").Delete(ctx, "robot-token", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, gcTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := as(a.name).CoreV1().ConfigMaps("team").List(ctx, metav1.ListOptions{})
		return apierrors.IsUnauthorized(err), nil
	})
	if err != nil {
		t.Errorf("legacy token of a deleted secret still authenticates")
	}
}

// TestLegacyTokenSecretsOfMissingServiceAccountsAreDeleted: a token secret
// cannot be kept for a service account that does not exist (or is deleted
// later), as kube-controller-manager's tokens controller ensures.
func TestLegacyTokenSecretsOfMissingServiceAccountsAreDeleted(t *testing.T) {
	t.Parallel()
	s := sharedShard(t)
	ctx := testContext(t)
	c := robotCluster(ctx, t, s, "legacy-gone")

	createTokenSecret(ctx, t, c.kube, "team", "ghost-token", "ghost")
	waitGone(t, "token secret of a missing service account", func(ctx context.Context) error {
		_, err := c.kube.CoreV1().Secrets("team").Get(ctx, "ghost-token", metav1.GetOptions{})
		return err
	})

	createTokenSecret(ctx, t, c.kube, "team", "robot-token", "robot")
	waitFilled(t, c.kube, "team", "robot-token")
	if err := c.kube.CoreV1().ServiceAccounts("team").Delete(ctx, "robot", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, "token secret of a deleted service account", func(ctx context.Context) error {
		_, err := c.kube.CoreV1().Secrets("team").Get(ctx, "robot-token", metav1.GetOptions{})
		return err
	})
}
