// Package serviceaccount looks up service accounts for token authentication
// in the logical cluster of the request, so a token only authenticates in
// the cluster whose service account it names.
package serviceaccount

import (
	"context"
	"fmt"
	"sync/atomic"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	kubeserviceaccount "k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// TokenGetter reads service accounts and secrets live, through the shard's
// loopback client, from the cluster in the request context. Pods and nodes
// do not exist in logical clusters.
type TokenGetter struct {
	client atomic.Pointer[rest.RESTClient]
}

// SetClient sets the loopback client once it exists.
func (g *TokenGetter) SetClient(c *rest.RESTClient) { g.client.Store(c) }

// Factory adapts the getter to the authentication options' hook.
func (g *TokenGetter) Factory(informers.SharedInformerFactory) kubeserviceaccount.ServiceAccountTokenGetter {
	return g
}

func (g *TokenGetter) fetch(ctx context.Context, resource, namespace, name string, out runtime.Object) error {
	c := g.client.Load()
	if c == nil {
		return fmt.Errorf("service account lookups are not ready yet")
	}
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok || cluster.IsWildcard() {
		return apierrors.NewNotFound(corev1.Resource(resource), name)
	}
	return c.Get().AbsPath(cluster.RequestPath(), "api/v1/namespaces", namespace, resource, name).Do(ctx).Into(out)
}

// GetServiceAccount returns the service account from the request's cluster.
func (g *TokenGetter) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	sa := &corev1.ServiceAccount{}
	return sa, g.fetch(ctx, "serviceaccounts", namespace, name, sa)
}

// GetSecret returns the secret from the request's cluster.
func (g *TokenGetter) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	return s, g.fetch(ctx, "secrets", namespace, name, s)
}

// GetPod always answers NotFound.
func (g *TokenGetter) GetPod(_ context.Context, _, name string) (*corev1.Pod, error) {
	return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
}

// GetNode always answers NotFound.
func (g *TokenGetter) GetNode(_ context.Context, name string) (*corev1.Node, error) {
	return nil, apierrors.NewNotFound(corev1.Resource("nodes"), name)
}

// GetValidatingWebhookConfiguration always answers NotFound.
func (g *TokenGetter) GetValidatingWebhookConfiguration(_ context.Context, name string) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	return nil, apierrors.NewNotFound(admissionregistrationv1.Resource("validatingwebhookconfigurations"), name)
}

// GetMutatingWebhookConfiguration always answers NotFound.
func (g *TokenGetter) GetMutatingWebhookConfiguration(_ context.Context, name string) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	return nil, apierrors.NewNotFound(admissionregistrationv1.Resource("mutatingwebhookconfigurations"), name)
}
