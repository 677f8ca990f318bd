package percluster

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/kubernetes/pkg/kubeapiserver/admission/exclusion"

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

// NewClusterClients returns the clients of one logical cluster.
func (c Config) NewClusterClients(cluster logicalcluster.Name) (*ClusterClients, error) {
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
	return &ClusterClients{
		Kube:       kube,
		Dynamic:    dyn,
		RESTMapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery())),
		Informers:  informers.NewSharedInformerFactory(kube, 0),
	}, nil
}
