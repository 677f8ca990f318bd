package percluster

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	admissioninformers "k8s.io/client-go/informers/admissionregistration/v1"
	"k8s.io/client-go/informers/internalinterfaces"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/kubeapiserver/admission/exclusion"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Config is what every per-cluster plugin is built from.
type Config struct {
	// Loopback reaches this shard as system:masters; per-cluster clients
	// append /clusters/<name> to its host.
	Loopback *rest.Config
	// Authorizer backs the authorizer variable of admission policies; it
	// reads the logical cluster from the request context.
	Authorizer authorizer.UnconditionalAuthorizer
	// Informers are the wildcard informers of admission configuration.
	Informers Informers
	// Replicas are the informers of the admission configuration other
	// shards replicated to the cache server (that of workspaces holding an
	// APIExport); Cache reaches the cache server; Hosted tells whether this
	// shard hosts a logical cluster. A cluster this shard does not host is
	// judged by its replicas, as kcp reads other shards' configuration from
	// the cache server. Replicas and Cache unset: local configuration only.
	Replicas *Informers
	Cache    *rest.Config
	Hosted   func(logicalcluster.Name) bool
	// SourceCluster returns the logical cluster whose configuration judges
	// a request on gr in cluster: for a bound resource that of its
	// APIExport, as in kcp (pkg/boundapis.AdmissionSource). nil: cluster.
	SourceCluster func(cluster logicalcluster.Name, gr schema.GroupResource) logicalcluster.Name
}

// ExcludedResources are the virtual resources (reviews) no webhook or policy
// may intercept, as in kube-apiserver.
func ExcludedResources() []schema.GroupResource { return exclusion.Excluded() }

// ClusterClients are clients and an informer factory scoped to one logical
// cluster. The factory's informers are created on demand by the plugins that
// use it; nothing runs before Start.
type ClusterClients struct {
	Kube       kubernetes.Interface
	Dynamic    dynamic.Interface
	RESTMapper meta.RESTMapper
	Informers  informers.SharedInformerFactory
}

// remote tells whether the configuration of cluster is read from the
// cache server's replicas.
func (c Config) remote(cluster logicalcluster.Name) bool {
	return c.Replicas != nil && c.Cache != nil && c.Hosted != nil && !c.Hosted(cluster)
}

// InformersOf returns the informers that hold the configuration of
// cluster: this shard's, or the cache server's replicas.
func (c Config) InformersOf(cluster logicalcluster.Name) Informers {
	if c.remote(cluster) {
		return *c.Replicas
	}
	return c.Informers
}

// NewClusterClients returns the clients of one logical cluster. For a
// cluster another shard hosts, the informers of admission configuration
// list and watch its replicas in the cache server, and only those: every
// other informer and client reaches this shard.
//
// The instance of a Foreign context judges other clusters' requests: its
// namespace informer holds nothing, so that the upstream plugins, missing
// it, read the namespace of the object from the request's cluster
// (requestNamespaces) and never find a namesake of this cluster.
func (c Config) NewClusterClients(ctx context.Context, cluster logicalcluster.Name) (*ClusterClients, error) {
	cfg := kcpclient.ClusterConfig(c.Loopback, cluster)
	cfg.QPS, cfg.Burst = -1, 0
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client of logical cluster %s: %w", cluster, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client of logical cluster %s: %w", cluster, err)
	}
	base := rest.CopyConfig(c.Loopback)
	base.QPS, base.Burst = -1, 0
	shard, err := kubernetes.NewForConfig(base)
	if err != nil {
		return nil, fmt.Errorf("client of the shard: %w", err)
	}
	factory := informers.NewSharedInformerFactory(kube, 0)
	if Foreign(ctx) {
		factory.InformerFor(&corev1.Namespace{}, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
			return cache.NewSharedIndexInformer(noNamespaces{}, &corev1.Namespace{}, 0, cache.Indexers{})
		})
	}
	if c.remote(cluster) {
		if err := c.readReplicas(factory, cluster); err != nil {
			return nil, err
		}
	}
	return &ClusterClients{
		Kube:       requestNamespaces{Interface: kube, shard: shard.CoreV1().RESTClient()},
		Dynamic:    dyn,
		RESTMapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery())),
		Informers:  factory,
	}, nil
}

// readReplicas makes factory's informers of admission configuration read
// the replicas of cluster from every shard in the cache server; the
// upstream plugins then find them there when they ask the factory.
func (c Config) readReplicas(factory informers.SharedInformerFactory, cluster logicalcluster.Name) error {
	cfg := rest.CopyConfig(c.Cache)
	cfg.Host = cacheclient.URL(cfg.Host, cacheclient.WildcardShard, cluster)
	cfg.QPS, cfg.Burst = -1, 0
	replicas, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("cache server client of logical cluster %s: %w", cluster, err)
	}
	indexers := cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}
	for example, newInformer := range map[runtime.Object]func(kubernetes.Interface, time.Duration, cache.Indexers, internalinterfaces.TweakListOptionsFunc) cache.SharedIndexInformer{
		&admissionregistrationv1.ValidatingWebhookConfiguration{}:   admissioninformers.NewFilteredValidatingWebhookConfigurationInformer,
		&admissionregistrationv1.MutatingWebhookConfiguration{}:     admissioninformers.NewFilteredMutatingWebhookConfigurationInformer,
		&admissionregistrationv1.ValidatingAdmissionPolicy{}:        admissioninformers.NewFilteredValidatingAdmissionPolicyInformer,
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}: admissioninformers.NewFilteredValidatingAdmissionPolicyBindingInformer,
		&admissionregistrationv1.MutatingAdmissionPolicy{}:          admissioninformers.NewFilteredMutatingAdmissionPolicyInformer,
		&admissionregistrationv1.MutatingAdmissionPolicyBinding{}:   admissioninformers.NewFilteredMutatingAdmissionPolicyBindingInformer,
	} {
		factory.InformerFor(example, func(_ kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			return newInformer(replicas, resync, indexers, nil)
		})
	}
	return nil
}

// noNamespaces lists no namespaces and never changes.
type noNamespaces struct{}

func (noNamespaces) List(metav1.ListOptions) (runtime.Object, error) {
	return &corev1.NamespaceList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}}, nil
}

func (noNamespaces) Watch(metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil }

// IsWatchListSemanticsUnSupported makes the reflector list first: the
// watch never sends the initial events a streaming list waits for.
func (noNamespaces) IsWatchListSemanticsUnSupported() bool { return true }
