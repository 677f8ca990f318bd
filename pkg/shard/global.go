package shard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/admission/percluster"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/bootstrap"
	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/cacheserver"
	"github.com/shardplane/shardplane/pkg/controllers/replication"
	"github.com/shardplane/shardplane/pkg/globalinformers"
	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/rootshard"
	"github.com/shardplane/shardplane/pkg/shardlookup"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
	"github.com/shardplane/shardplane/pkg/workspacetypes"
)

// globalCopies is the folder of the root directory that keeps the copies
// of the cache server's replicas a shard has seen.
const globalCopies = "global"

// cacheClientConfig reaches the cache server: --cache-kubeconfig, or this
// shard's own loopback when it serves the cache in-process.
func cacheClientConfig(o CompletedOptions, loopback *rest.Config) (*rest.Config, error) {
	if o.CacheKubeconfig == "" {
		return rest.CopyConfig(loopback), nil
	}
	cfg, err := rootshard.LoadConfig(o.CacheKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--cache-kubeconfig: %w", err)
	}
	// Replication writes in bursts (a shard's start, a cache that returns).
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg, nil
}

// newEmbeddedCache builds the cache server a shard without
// --cache-kubeconfig serves below /services/cache: on the shard's etcd
// (keys below /cache), with the shard's authenticator; shards and the
// shard's own loopback (system:masters) write, members of the writer group
// too, readers read.
func newEmbeddedCache(o CompletedOptions, gc *genericapiserver.Config) (*cacheserver.Server, error) {
	if o.CacheKubeconfig != "" {
		return nil, nil
	}
	etcd := *o.ControlPlane.Etcd
	storage := etcd.StorageConfig
	storage.Prefix = cacheserver.DefaultEtcdPrefix
	etcd.StorageConfig = storage
	etcd.EnableWatchCache = false
	etcd.WatchCacheSizes = nil
	// The shard's configuration is not completed yet: its external address
	// may lack the port.
	external := gc.ExternalAddress
	if _, _, err := net.SplitHostPort(external); err != nil {
		external = net.JoinHostPort(external, strconv.Itoa(o.ControlPlane.SecureServing.BindPort))
	}
	c, err := cacheserver.NewEmbeddedConfig(cacheserver.Embedding{
		Authenticator:   gc.Authentication.Authenticator,
		Loopback:        gc.LoopbackClientConfig,
		ExternalAddress: external,
		Etcd:            &etcd,
		EtcdClient:      o.etcdClient,
		Access:          cacheserver.Access{WriterGroups: []string{identities.CacheWriterGroup}, ReaderGroups: []string{identities.CacheReaderGroup}},
	})
	if err != nil {
		return nil, fmt.Errorf("in-process cache server: %w", err)
	}
	return c.Complete().New()
}

// withEmbeddedCache serves /services/cache/ by the in-process cache server,
// everything else by handler.
func withEmbeddedCache(handler http.Handler, cache *cacheserver.Server) http.Handler {
	if cache == nil {
		return handler
	}
	cacheHandler := cache.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, cacheclient.ServicePrefix+"/") || r.URL.Path == cacheclient.ServicePrefix {
			cacheHandler.ServeHTTP(w, r)
			return
		}
		handler.ServeHTTP(w, r)
	})
}

// newGlobalInformers returns the informers of every shard's replicas on the
// cache server.
func newGlobalInformers(o CompletedOptions, loopback *rest.Config) (*globalinformers.Informers, error) {
	cfg, err := cacheClientConfig(o, loopback)
	if err != nil {
		return nil, err
	}
	return globalinformers.New(cfg, filepath.Join(o.RootDirectory, globalCopies))
}

// withGlobal returns the informers of this shard and those of the cache
// server's replicas.
func (i wildcardInformers) withGlobal() []*wildcardinformer.Informer {
	return append(i.all(), i.global.All()...)
}

// shards finds the Shard objects: in root on the root shard, as replicated
// to the cache server on the others.
func (i wildcardInformers) shards() shardlookup.Source {
	return shardlookup.Root{Informer: i.shardInformer()}
}

// shardInformer holds the Shard objects: root's on the root shard, the
// cache server's replicas on the others.
func (i wildcardInformers) shardInformer() *wildcardinformer.Informer {
	if !i.hostsRoot {
		return i.global.Shards
	}
	return i.kcp.shards
}

// hosted tells whether this shard hosts a logical cluster.
func (i wildcardInformers) hosted(cluster logicalcluster.Name) bool {
	return i.kcp.logicalCluster(cluster) != nil
}

// resolveAnyPath maps a workspace path to its logical cluster: one this
// shard hosts, or one whose replicated objects carry the path. Requests are
// routed by the shard's own paths alone (kcpInformers.resolvePath); this is
// for references to objects in other workspaces.
func (i wildcardInformers) resolveAnyPath(p logicalcluster.Path) (logicalcluster.Name, bool) {
	if cluster, ok := i.kcp.resolvePath(p); ok {
		return cluster, true
	}
	return i.global.ResolvePath(p)
}

// exportExists tells whether an APIExport exists on this shard or, through
// the cache server, on another.
func (i wildcardInformers) exportExists(cluster logicalcluster.Name, name string) bool {
	_, exists, err := wildcardinformer.First(cluster, "", name, i.kcp.apiExports, i.global.APIExports)
	return err == nil && exists
}

// workspaceTypes resolves WorkspaceTypes of this shard's logical clusters
// and, through the cache server, of every other shard's.
func (i wildcardInformers) workspaceTypes() workspacetypes.Resolver {
	get := func(cluster logicalcluster.Name, name string) *tenancyv1alpha1.WorkspaceType {
		obj, exists, err := wildcardinformer.First(cluster, "", name, i.kcp.workspaceTypes, i.global.WorkspaceTypes)
		if err != nil || !exists {
			return nil
		}
		return obj.(*tenancyv1alpha1.WorkspaceType)
	}
	return workspacetypes.Resolver{ResolvePath: i.resolveAnyPath, Get: get}
}

// globalShardReady is ready once the cache server's replicas are known
// (read from the cache, or from the copy of an earlier start), this shard's
// own Shard is among them (the shard has been registered in root at least
// once) and its system:admin cluster is bootstrapped. The root shard does
// not wait for the cache.
func (c *Server) globalShardReady(systemAdmin *atomic.Bool) healthz.HealthChecker {
	return healthz.NamedCheck("shardplane-global", func(*http.Request) error {
		if c.Informers.hostsRoot {
			return nil
		}
		global := c.Informers.global
		if !systemAdmin.Load() {
			return fmt.Errorf("system:admin is not bootstrapped yet")
		}
		if !wildcardinformer.Synced(global.All()...) {
			return fmt.Errorf("the cache server's objects were never read: the cache server (--cache-kubeconfig) must answer once")
		}
		if global.Shard(c.Options.ShardName) == nil {
			return fmt.Errorf("shard %q is not registered in root, or not replicated to the cache server, yet", c.Options.ShardName)
		}
		return nil
	})
}

// installGlobal runs the informers of the cache server's replicas and, on a
// shard without root, the registration of this shard's Shard in root.
func (c *Server) installGlobal(gs *genericapiserver.GenericAPIServer, _ controllerClients) error {
	var systemAdmin atomic.Bool
	if err := gs.AddReadyzChecks(c.globalShardReady(&systemAdmin)); err != nil {
		return err
	}
	var rootConfig *rest.Config
	if !c.Informers.hostsRoot {
		var err error
		if rootConfig, err = rootshard.LoadConfig(c.Options.RootShardKubeconfig); err != nil {
			return fmt.Errorf("--root-shard-kubeconfig: %w", err)
		}
	}
	shard := c.Options.shard()
	loopback := c.ControlPlane.Generic.LoopbackClientConfig
	return gs.AddPostStartHook("shardplane-global", func(hc genericapiserver.PostStartHookContext) error {
		ctx := klog.NewContext(hc, klog.Background().WithName("global"))
		go c.Informers.global.Run(ctx)
		if c.embeddedCache != nil {
			go func() {
				<-ctx.Done()
				c.embeddedCache.GenericAPIServer.Destroy()
			}()
		}
		if rootConfig == nil {
			return nil
		}
		go func() { _ = rootshard.Register(ctx, rootConfig, shard) }()
		go func() {
			_ = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
				if err := bootstrap.SystemAdmin(ctx, loopback); err != nil {
					klog.FromContext(ctx).Error(err, "Bootstrapping system:admin failed, retrying")
					return false, nil
				}
				systemAdmin.Store(true)
				return true, nil
			})
		}()
		return nil
	})
}

// globalInformers are the informers of every shard's replicated objects.
type globalInformers struct {
	apiExports, apiResourceSchemas, workspaceTypes *wildcardinformer.Informer
	clusterRoles, clusterRoleBindings              *wildcardinformer.Informer
}

func (i wildcardInformers) globals() globalInformers {
	return globalInformers{
		apiExports: i.global.APIExports, apiResourceSchemas: i.global.APIResourceSchemas, workspaceTypes: i.global.WorkspaceTypes,
		clusterRoles: i.global.ClusterRoles, clusterRoleBindings: i.global.ClusterRoleBindings,
	}
}

// readAdmissionReplicas makes the webhooks and admission policies of an
// APIExport's workspace on another shard judge the resources bound from it
// here, read from its replicas in the cache server as in kcp.
func (c *Config) readAdmissionReplicas(perCluster *percluster.Config) error {
	cacheConfig, err := cacheClientConfig(c.Options, perCluster.Loopback)
	if err != nil {
		return err
	}
	g := c.Informers.global
	perCluster.Cache, perCluster.Hosted = cacheConfig, c.Informers.hosted
	perCluster.Replicas = &percluster.Informers{
		ValidatingWebhooks: g.ValidatingWebhooks, MutatingWebhooks: g.MutatingWebhooks,
		ValidatingPolicies: g.ValidatingPolicies, ValidatingPolicyBindings: g.ValidatingPolicyBindings,
		MutatingPolicies: g.MutatingPolicies, MutatingPolicyBindings: g.MutatingPolicyBindings,
	}
	return nil
}

// newReplication returns the controller that replicates this shard's
// APIExports, APIResourceSchemas, WorkspaceTypes, Shards,
// LogicalClusterMigrations (as kcp: every shard a move concerns reads it
// there), ClusterCachedResources and their endpoint slices (with CacheAPIs),
// marked RBAC and
// the admission configuration of export workspaces to the cache server, and the labeler that marks the RBAC other shards need.
func (c *Server) newReplication(loopback *rest.Config) (*replication.Controller, *replication.Labeler, error) {
	kind := func(resource string) cacheclient.Kind {
		for _, k := range cacheclient.Kinds {
			if k.Resource.Resource == resource {
				return k
			}
		}
		panic("cacheclient.Kinds lacks " + resource)
	}
	i := c.Informers
	sources := []replication.Source{
		{Kind: kind("apiexports"), Informer: i.kcp.apiExports},
		{Kind: kind("apiresourceschemas"), Informer: i.kcp.apiResourceSchemas},
		{Kind: kind("apiexportendpointslices"), Informer: i.kcp.apiExportEndpointSlices},
		{Kind: kind("workspacetypes"), Informer: i.kcp.workspaceTypes},
		{Kind: kind("workspaceauthenticationconfigurations"), Informer: i.kcp.workspaceAuthenticationConfigurations},
		{Kind: kind("shards"), Informer: i.kcp.shards},
		{Kind: kind("logicalclustermigrations"), Informer: i.kcp.logicalClusterMigrations},
		{Kind: kind("clusterroles"), Informer: i.rbac.ClusterRoles, Filter: replication.MarkedForReplication},
		{Kind: kind("clusterrolebindings"), Informer: i.rbac.ClusterRoleBindings, Filter: replication.MarkedForReplication},
	}
	if i.kcp.clusterCachedResources != nil {
		sources = append(sources,
			replication.Source{Kind: kind("clustercachedresources"), Informer: i.kcp.clusterCachedResources},
			replication.Source{Kind: kind("clustercachedresourceendpointslices"), Informer: i.kcp.clusterCachedResourceEndpointSlices})
	}
	inExportWorkspace := replication.InExportWorkspace(i.kcp.apiExports)
	for n, inf := range i.admission.All() {
		sources = append(sources, replication.Source{Kind: kind(percluster.Resources()[n]), Informer: inf, Filter: inExportWorkspace, FilterReads: []*wildcardinformer.Informer{i.kcp.apiExports}})
	}
	cacheConfig, err := cacheClientConfig(c.Options, loopback)
	if err != nil {
		return nil, nil, err
	}
	replicator, err := replication.New(replication.Config{ShardName: c.Options.ShardName, Cache: cacheConfig, Sources: sources})
	if err != nil {
		return nil, nil, err
	}
	rbacClient, err := kubernetes.NewForConfig(loopback)
	if err != nil {
		return nil, nil, err
	}
	labeler, err := replication.NewLabeler(replication.LabelerConfig{ClusterRoles: i.rbac.ClusterRoles, ClusterRoleBindings: i.rbac.ClusterRoleBindings, Client: rbacClient.RbacV1().RESTClient()})
	if err != nil {
		return nil, nil, err
	}
	return replicator, labeler, nil
}
