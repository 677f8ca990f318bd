package serviceaccount

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/kubernetes/pkg/apis/core"
	kubeserviceaccount "k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
)

const issuer = "https://shardplane.test"

// clusterGetter serves service accounts by the cluster in the context.
type clusterGetter map[logicalcluster.Name]*corev1.ServiceAccount

func (g clusterGetter) GetServiceAccount(ctx context.Context, ns, name string) (*corev1.ServiceAccount, error) {
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	if sa := g[cluster]; sa != nil && sa.Namespace == ns && sa.Name == name {
		return sa, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccounts"), name)
}
func (clusterGetter) GetPod(context.Context, string, string) (*corev1.Pod, error) { return nil, nil }
func (clusterGetter) GetSecret(context.Context, string, string) (*corev1.Secret, error) {
	return nil, nil
}
func (clusterGetter) GetNode(context.Context, string) (*corev1.Node, error) { return nil, nil }
func (clusterGetter) GetValidatingWebhookConfiguration(context.Context, string) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	return nil, nil
}
func (clusterGetter) GetMutatingWebhookConfiguration(context.Context, string) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	return nil, nil
}

func TestTokensAuthenticateAgainstTheServiceAccountOfTheirCluster(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := kubeserviceaccount.JWTTokenGenerator(issuer, key)
	if err != nil {
		t.Fatal(err)
	}
	gen := ClusterTokenGenerator{Delegate: inner}
	sa := core.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "default", UID: types.UID("uid-in-a")}}
	claims, private, err := kubeserviceaccount.Claims(sa, nil, nil, nil, nil, nil, 3600, 0, []string{issuer}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.GenerateToken(context.Background(), claims, private); err == nil {
		t.Fatal("a token was issued without a logical cluster")
	}
	token, err := gen.GenerateToken(logicalcluster.WithCluster(context.Background(), "a"), claims, private)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := TokenCluster(token); !ok || c != "a" {
		t.Fatalf("token cluster = %q, %v; want a", c, ok)
	}

	keys, err := kubeserviceaccount.StaticPublicKeysGetter([]interface{}{&key.PublicKey})
	if err != nil {
		t.Fatal(err)
	}
	saA := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "default", UID: "uid-in-a"}}
	saB := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "default", UID: "uid-in-b"}}
	auth := NewClusterAuthenticator([]string{issuer}, keys, authenticator.Audiences{issuer}, clusterGetter{"a": saA, "b": saB})

	// Whatever cluster the request addresses, the token is checked in a.
	for _, requestCluster := range []logicalcluster.Name{"a", "b"} {
		resp, ok, err := auth.AuthenticateToken(logicalcluster.WithCluster(context.Background(), requestCluster), token)
		if err != nil || !ok {
			t.Fatalf("request to %s: ok=%v err=%v", requestCluster, ok, err)
		}
		if got, ok := scope.ServiceAccountCluster(resp.User); !ok || got != "a" {
			t.Errorf("request to %s: user cluster %q, want a", requestCluster, got)
		}
		if resp.User.GetName() != "system:serviceaccount:team:default" {
			t.Errorf("user %q", resp.User.GetName())
		}
	}

	// The service account is gone from a: the token is refused, even though
	// b has one of the same name.
	auth = NewClusterAuthenticator([]string{issuer}, keys, authenticator.Audiences{issuer}, clusterGetter{"b": saB})
	if _, ok, _ := auth.AuthenticateToken(logicalcluster.WithCluster(context.Background(), "b"), token); ok {
		t.Error("token of a deleted service account authenticated")
	}

	// Tokens without the claim are left to other authenticators.
	plain, err := inner.GenerateToken(context.Background(), claims, private)
	if err != nil {
		t.Fatal(err)
	}
	if resp, ok, err := auth.AuthenticateToken(context.Background(), plain); ok || err != nil || resp != nil {
		t.Errorf("token without cluster: ok=%v err=%v", ok, err)
	}
}
