package serviceaccount

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	kubeserviceaccount "k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// NewLegacyClusterAuthenticator returns the authenticator of secret-based
// (legacy) service account tokens: tokens of kubernetes' legacy issuer that
// carry ClusterClaim. As upstream, such a token is valid while its secret
// exists with the same token and its service account exists with the same
// UID, both looked up in the token's own cluster; its scope.ServiceAccountClusterExtraKey keeps
// it there. getter must be the shard's TokenGetter.
func NewLegacyClusterAuthenticator(keys kubeserviceaccount.PublicKeysGetter, implicitAudiences authenticator.Audiences, getter *TokenGetter) (*ClusterAuthenticator, error) {
	return newLegacyClusterAuthenticator(keys, implicitAudiences, getter, clusterSecrets{getter})
}

// newLegacyClusterAuthenticator looks up service accounts and secrets with
// getter and records last use with secrets, both in the cluster of the
// context.
func newLegacyClusterAuthenticator(keys kubeserviceaccount.PublicKeysGetter, implicitAudiences authenticator.Audiences, getter kubeserviceaccount.ServiceAccountTokenGetter, secrets corev1client.SecretsGetter) (*ClusterAuthenticator, error) {
	validator, err := kubeserviceaccount.NewLegacyValidator(true, getter, secrets)
	if err != nil {
		return nil, err
	}
	return &ClusterAuthenticator{Delegate: kubeserviceaccount.JWTTokenAuthenticator(
		[]string{kubeserviceaccount.LegacyIssuer}, keys, implicitAudiences, validator)}, nil
}

// NewLegacyTokenGenerator returns the signer of legacy tokens: upstream's,
// with the cluster of the context added as ClusterClaim.
func NewLegacyTokenGenerator(privateKey interface{}) (kubeserviceaccount.TokenGenerator, error) {
	g, err := kubeserviceaccount.JWTTokenGenerator(kubeserviceaccount.LegacyIssuer, privateKey)
	if err != nil {
		return nil, err
	}
	return ClusterTokenGenerator{Delegate: g}, nil
}

// clusterSecrets lets the legacy validator record a token's last use on its
// secret, in the cluster of the context; the validator patches nothing else.
type clusterSecrets struct{ getter *TokenGetter }

func (s clusterSecrets) Secrets(namespace string) corev1client.SecretInterface {
	return clusterSecretPatcher{getter: s.getter, namespace: namespace}
}

// clusterSecretPatcher implements Patch only; the embedded nil interface
// is never called by the validator.
type clusterSecretPatcher struct {
	corev1client.SecretInterface
	getter    *TokenGetter
	namespace string
}

func (p clusterSecretPatcher) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, _ metav1.PatchOptions, subresources ...string) (*corev1.Secret, error) {
	c := p.getter.client.Load()
	if c == nil {
		return nil, fmt.Errorf("service account lookups are not ready yet")
	}
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok || cluster.IsWildcard() {
		return nil, fmt.Errorf("no logical cluster to patch secret %s/%s in", p.namespace, name)
	}
	out := &corev1.Secret{}
	err := c.Patch(pt).AbsPath(append([]string{cluster.RequestPath(), "api/v1/namespaces", p.namespace, "secrets", name}, subresources...)...).
		Body(data).Do(ctx).Into(out)
	return out, err
}
