package serviceaccount

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	kubeserviceaccount "k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// byServiceAccount indexes token secrets by cluster|namespace|service account.
const byServiceAccount = "serviceaccount-tokens-by-serviceaccount"

// TokenSecretsListWatch returns the wildcard list/watch of the secrets the
// tokens controller fills, made by lw: only those of type
// kubernetes.io/service-account-token, selected on the server.
func TokenSecretsListWatch(lw ListWatchFunc) cache.ListerWatcher {
	return lw("secrets", &corev1.Secret{}, fields.OneTermEqualSelector("type", string(corev1.SecretTypeServiceAccountToken)))
}

// TokensController fills the secret-based (legacy) service account tokens
// of all logical clusters, as kube-controller-manager's tokens controller
// does for one cluster: a secret of type kubernetes.io/service-account-token
// naming a service account gets "token" (signed with the legacy issuer and
// bound to the secret's logical cluster), "ca.crt" and "namespace"; a token
// secret whose service account is gone is deleted.
type TokensController struct {
	loop     *loop.Loop
	secrets  *wildcardinformer.Informer
	accounts *cache.Reflector
	fill     *tokenSecret
}

// TokensConfig is what the tokens controller needs.
type TokensConfig struct {
	// Secrets must be built on TokenSecretsListWatch and not yet started.
	Secrets *wildcardinformer.Informer
	// Loopback is the shard's loopback configuration without a cluster.
	Loopback *rest.Config
	// CABundle is written into every token secret.
	CABundle []byte
	// Generator signs legacy tokens and reads the cluster from the context
	// (serviceaccount.ClusterTokenGenerator).
	Generator kubeserviceaccount.TokenGenerator
}

// NewTokensController returns the controller.
func NewTokensController(cfg TokensConfig) (*TokensController, error) {
	secrets, base, caBundle, generator := cfg.Secrets, cfg.Loopback, cfg.CABundle, cfg.Generator
	if err := secrets.AddIndexers(cache.Indexers{byServiceAccount: func(obj interface{}) ([]string, error) {
		s, ok := obj.(*corev1.Secret)
		if !ok {
			return nil, nil
		}
		cluster, _ := logicalcluster.ObjectCluster(s.Annotations)
		return []string{serviceAccountIndexKey(cluster, s.Namespace, s.Annotations[corev1.ServiceAccountNameKey])}, nil
	}}); err != nil {
		return nil, err
	}
	httpClient, err := rest.HTTPClientFor(base)
	if err != nil {
		return nil, err
	}
	clientFor := func(cluster logicalcluster.Name) (corev1client.CoreV1Interface, error) {
		return corev1client.NewForConfigAndClient(kcpclient.ClusterConfig(base, cluster), httpClient)
	}
	c := &TokensController{secrets: secrets}
	c.fill = &tokenSecret{
		caBundle: caBundle,
		getServiceAccount: func(ctx context.Context, cluster logicalcluster.Name, ns, name string) (*corev1.ServiceAccount, error) {
			client, err := clientFor(cluster)
			if err != nil {
				return nil, err
			}
			return client.ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		},
		generate: func(ctx context.Context, cluster logicalcluster.Name, sa *corev1.ServiceAccount, secret *corev1.Secret) (string, error) {
			claims, private := kubeserviceaccount.LegacyClaims(*sa, *secret)
			return generator.GenerateToken(logicalcluster.WithCluster(ctx, cluster), claims, private)
		},
		update: func(ctx context.Context, cluster logicalcluster.Name, secret *corev1.Secret) error {
			client, err := clientFor(cluster)
			if err != nil {
				return err
			}
			_, err = client.Secrets(secret.Namespace).Update(ctx, secret, metav1UpdateOptions)
			return err
		},
		delete: func(ctx context.Context, cluster logicalcluster.Name, secret *corev1.Secret) error {
			client, err := clientFor(cluster)
			if err != nil {
				return err
			}
			return client.Secrets(secret.Namespace).Delete(ctx, secret.Name, metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(secret.UID))})
		},
	}
	c.loop = loop.New("serviceaccount-tokens", c.reconcile)
	secrets.AddHandler(c.loop.Handler(nil))

	// Only deletions matter: metadata is enough.
	wildcardMetadata, err := metadata.NewForConfigAndClient(kcpclient.ClusterConfig(base, logicalcluster.Wildcard), httpClient)
	if err != nil {
		return nil, err
	}
	accounts := wildcardMetadata.Resource(corev1.SchemeGroupVersion.WithResource("serviceaccounts"))
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return accounts.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return accounts.Watch(ctx, opts)
		},
	}
	c.accounts = cache.NewReflectorWithOptions(listOnly{lw}, &metav1.PartialObjectMetadata{}, serviceAccountEvents{c},
		cache.ReflectorOptions{Name: "serviceaccount-tokens-serviceaccounts"})
	return c, nil
}

// Run watches service accounts and fills token secrets with the given
// number of workers until ctx is done. The secrets informer runs on its own.
func (c *TokensController) Run(ctx context.Context, workers int) {
	go c.accounts.RunWithContext(ctx)
	for _, key := range c.secrets.Indexer().ListKeys() {
		c.loop.Enqueue(key)
	}
	c.loop.Run(ctx, workers)
}

func (c *TokensController) reconcile(ctx context.Context, key string) error {
	cluster, _, _, ok := wildcardinformer.SplitKey(key)
	if !ok {
		return nil
	}
	obj, exists, err := c.secrets.Indexer().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	secret, ok := obj.(*corev1.Secret)
	if !ok || secret.Type != corev1.SecretTypeServiceAccountToken || secret.DeletionTimestamp != nil {
		return nil
	}
	return c.fill.reconcile(klog.NewContext(ctx, klog.FromContext(ctx).WithValues("cluster", cluster)), cluster, secret)
}

// enqueueTokensOf looks again at the token secrets of a service account.
func (c *TokensController) enqueueTokensOf(cluster logicalcluster.Name, ns, name string) {
	objs, _ := c.secrets.ByIndex(byServiceAccount, serviceAccountIndexKey(cluster, ns, name))
	for _, obj := range objs {
		if key, err := wildcardinformer.KeyFunc(obj); err == nil {
			c.loop.Enqueue(key)
		}
	}
}

func serviceAccountIndexKey(cluster logicalcluster.Name, ns, name string) string {
	return string(cluster) + "|" + ns + "|" + name
}

// listOnly keeps a reflector from watch-list mode, whose initial store is
// keyed by namespace/name and would merge objects of different clusters.
type listOnly struct{ cache.ListerWatcher }

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

// serviceAccountEvents is the store of the service account reflector: it
// keeps nothing and sends the token secrets of deleted service accounts (or
// of all, after a relist) back to the queue.
type serviceAccountEvents struct{ c *TokensController }

func (s serviceAccountEvents) Add(interface{}) error    { return nil }
func (s serviceAccountEvents) Update(interface{}) error { return nil }
func (s serviceAccountEvents) Delete(obj interface{}) error {
	if sa, err := meta.Accessor(obj); err == nil {
		if cluster, ok := logicalcluster.ObjectCluster(sa.GetAnnotations()); ok {
			s.c.enqueueTokensOf(cluster, sa.GetNamespace(), sa.GetName())
		}
	}
	return nil
}

func (s serviceAccountEvents) Replace([]interface{}, string) error {
	// Deletions missed while the watch was down show up only here.
	for _, key := range s.c.secrets.Indexer().ListKeys() {
		s.c.loop.Enqueue(key)
	}
	return nil
}

func (s serviceAccountEvents) Resync() error { return nil }
