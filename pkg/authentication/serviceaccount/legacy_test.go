package serviceaccount

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kubeserviceaccount "k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
)

// legacyGetter serves one service account and its token secret per cluster.
type legacyGetter struct {
	clusterGetter
	secrets map[logicalcluster.Name]*corev1.Secret
}

func (g legacyGetter) GetSecret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	cluster, _ := logicalcluster.ClusterFromContext(ctx)
	if s := g.secrets[cluster]; s != nil && s.Namespace == ns && s.Name == name {
		return s, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
}

func TestLegacyTokensAuthenticateAgainstTheSecretOfTheirCluster(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := NewLegacyTokenGenerator(key)
	if err != nil {
		t.Fatal(err)
	}
	saA := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "robot", UID: "uid-in-a"}}
	saB := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "robot", UID: "uid-in-b"}}
	secretA := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "robot-token"}}
	claims, private := kubeserviceaccount.LegacyClaims(*saA, *secretA)
	token, err := gen.GenerateToken(logicalcluster.WithCluster(context.Background(), "a"), claims, private)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := TokenCluster(token); !ok || c != "a" {
		t.Fatalf("legacy token cluster = %q, %v; want a", c, ok)
	}
	secretA.Data = map[string][]byte{"token": []byte(token)}
	secretB := secretA.DeepCopy()
	secretB.Data["token"] = []byte("another token")

	keys, err := kubeserviceaccount.StaticPublicKeysGetter([]interface{}{&key.PublicKey})
	if err != nil {
		t.Fatal(err)
	}
	getter := legacyGetter{clusterGetter{"a": saA, "b": saB}, map[logicalcluster.Name]*corev1.Secret{"a": secretA, "b": secretB}}
	auth, err := newLegacyClusterAuthenticator(keys, authenticator.Audiences{issuer}, getter, kubefake.NewClientset().CoreV1())
	if err != nil {
		t.Fatal(err)
	}
	for _, requestCluster := range []logicalcluster.Name{"a", "b"} {
		resp, ok, err := auth.AuthenticateToken(logicalcluster.WithCluster(context.Background(), requestCluster), token)
		if err != nil || !ok {
			t.Fatalf("request to %s: ok=%v err=%v", requestCluster, ok, err)
		}
		if got, _ := scope.ServiceAccountCluster(resp.User); got != "a" || resp.User.GetName() != "system:serviceaccount:team:robot" {
			t.Errorf("request to %s: user %q of cluster %q, want robot of a", requestCluster, resp.User.GetName(), got)
		}
	}

	// Without its secret in a, the token is refused, though b has a secret
	// of the same name.
	getter.secrets = map[logicalcluster.Name]*corev1.Secret{"b": secretB}
	auth, _ = newLegacyClusterAuthenticator(keys, authenticator.Audiences{issuer}, getter, kubefake.NewClientset().CoreV1())
	if _, ok, _ := auth.AuthenticateToken(logicalcluster.WithCluster(context.Background(), "b"), token); ok {
		t.Error("legacy token without its secret authenticated")
	}
	// Bound-token authenticators leave it alone (other issuer).
	bound := NewClusterAuthenticator([]string{issuer}, keys, authenticator.Audiences{issuer}, clusterGetter{"a": saA})
	if _, ok, _ := bound.AuthenticateToken(context.Background(), token); ok {
		t.Error("the bound-token authenticator accepted a legacy token")
	}
}
