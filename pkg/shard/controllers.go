package shard

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/bootstrap"
	"github.com/shardplane/shardplane/pkg/controllers/admissionpolicystatus"
	apibindingcontroller "github.com/shardplane/shardplane/pkg/controllers/apibinding"
	apiexportcontroller "github.com/shardplane/shardplane/pkg/controllers/apiexport"
	"github.com/shardplane/shardplane/pkg/controllers/cachedresource"
	"github.com/shardplane/shardplane/pkg/controllers/defaultapibinding"
	draincontroller "github.com/shardplane/shardplane/pkg/controllers/drain"
	lccontroller "github.com/shardplane/shardplane/pkg/controllers/logicalcluster"
	migrationcontroller "github.com/shardplane/shardplane/pkg/controllers/migration"
	nscontroller "github.com/shardplane/shardplane/pkg/controllers/namespace"
	"github.com/shardplane/shardplane/pkg/controllers/partitionset"
	sacontroller "github.com/shardplane/shardplane/pkg/controllers/serviceaccount"
	shardcontroller "github.com/shardplane/shardplane/pkg/controllers/shard"
	wscontroller "github.com/shardplane/shardplane/pkg/controllers/workspace"
	wsmountcontroller "github.com/shardplane/shardplane/pkg/controllers/workspacemount"
	wtcontroller "github.com/shardplane/shardplane/pkg/controllers/workspacetype"
	"github.com/shardplane/shardplane/pkg/features"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/rootshard"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// controllerClients are what the shard's controllers reach it with.
type controllerClients struct {
	// loopback is the in-memory loopback configuration, not rate limited.
	loopback *restclient.Config
	// kcp reads and writes kcp's objects through loopback.
	kcp *kcpclient.Client
	// relabeler writes claimed objects unchanged, for admission to set
	// their claim labels: all objects of a claim that changed (the
	// APIBinding controller), or single stale ones (claimed objects).
	relabeler *apibindingcontroller.Relabeler
}

// addControllers installs the shard's controllers, each one or small group
// with its own post-start hook and readiness check, and root's bootstrap.
// Every controller serves all logical clusters.
func (c *Server) addControllers(gs *genericapiserver.GenericAPIServer) error {
	loopback := restclient.CopyConfig(c.ControlPlane.Generic.LoopbackClientConfig)
	loopback.QPS, loopback.Burst = -1, 0
	local, err := kcpclient.New(loopback)
	if err != nil {
		return err
	}
	relabeler, err := apibindingcontroller.NewRelabeler(loopback, c.Informers.kcp.bindingsOf)
	if err != nil {
		return err
	}
	c.createSystemNamespaces()
	clients := controllerClients{loopback: loopback, kcp: local, relabeler: relabeler}
	for _, install := range []func(*genericapiserver.GenericAPIServer, controllerClients) error{
		c.installNamespaceController,
		c.installLogicalClusterController,
		c.installWorkspaceTypeController,
		c.installPartitionSetController,
		c.installAPIExportControllers,
		c.installAPIBindingControllers,
		c.installAdmissionPolicyStatusController,
		c.installWorkspaceController,
		c.installWorkspaceMountController,
		c.installCachedResourceController,
		c.installShardStatusControllers,
		c.installMigrationController,
		c.installReplication,
		c.installGlobal,
		c.installGarbageCollector,
		c.installResourceQuotaController,
		c.installServiceAccountControllers,
		c.installRootBootstrap,
	} {
		if err := install(gs, clients); err != nil {
			return err
		}
	}
	return nil
}

// createSystemNamespaces creates the namespaces of system:admin before the
// shard serves: the apiserver's identity lease lives in its kube-system,
// and would otherwise race the namespaces controller.
func (c *Server) createSystemNamespaces() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.inProcess.Create(ctx, logicalcluster.SystemAdmin, lccontroller.NamespaceObjects(bootstrap.SystemNamespaces...)...); err != nil {
		klog.Background().Error(err, "Creating the system namespaces failed; the system namespaces controller creates them later")
	}
}

// addController adds a post-start hook and a readiness check, both named
// name: once the informers have listed, the hook runs start, and the check
// is ready once start returned, or red for good with its error.
func (c *Server) addController(gs *genericapiserver.GenericAPIServer, name string, start func(context.Context) error) error {
	started := newStartupCheck(name)
	if err := gs.AddReadyzChecks(started); err != nil {
		return err
	}
	return c.afterInformers(gs, name, func(ctx context.Context) { started.run(ctx, "start "+name, start) })
}

// afterInformers adds a post-start hook named name that runs run in the
// background once the informers have listed.
func (c *Server) afterInformers(gs *genericapiserver.GenericAPIServer, name string, run func(context.Context)) error {
	return gs.AddPostStartHook(name, func(hc genericapiserver.PostStartHookContext) error {
		go func() {
			ctx := klog.NewContext(hc, klog.Background().WithName(name))
			if err := c.waitForInformers(ctx); err == nil {
				run(ctx)
			}
		}()
		return nil
	})
}

// runner is a controller: Run runs its workers until ctx is done.
type runner interface {
	Run(ctx context.Context, workers int)
}

// running returns a start function that runs each controller with its
// workers in the background. The workspace controllers' work waits on
// round trips, not CPU: many workers keep a burst of thousands of
// workspaces moving.
func running(controllers map[runner]int) func(context.Context) error {
	return func(ctx context.Context) error {
		for controller, workers := range controllers {
			go controller.Run(ctx, workers)
		}
		return nil
	}
}

func (c *Server) installNamespaceController(gs *genericapiserver.GenericAPIServer, cl controllerClients) error {
	namespaces := nscontroller.New(nscontroller.Config{Namespaces: c.Informers.namespaces, Loopback: cl.loopback, ClusterDeleting: c.Informers.kcp.deleting})
	return c.addController(gs, "shardplane-namespace-controller", running(map[runner]int{namespaces: 32}))
}

func (c *Server) installLogicalClusterController(gs *genericapiserver.GenericAPIServer, cl controllerClients) error {
	kcp, ca := c.Informers.kcp, c.rootCA
	logicalClusters := lccontroller.New(lccontroller.Config{
		LogicalClusters: kcp.logicalClusters, Namespaces: c.Informers.namespaces,
		// Most workspaces have an APIBinding, whose finalizer holds their deletion.
		RequeueOnDeletionOf: []*wildcardinformer.Informer{kcp.apiBindings},
		KCP:                 cl.kcp, Loopback: cl.loopback, ExternalURL: c.Options.ExternalURL,
		DeleteContent: c.content.Delete,
		InProcess:     c.inProcess,
		NamespaceObjects: func(namespace string) []runtime.Object {
			return sacontroller.NamespaceObjects(namespace, ca)
		},
	})
	return c.addController(gs, "shardplane-logicalcluster-controller", running(map[runner]int{logicalClusters: 32}))
}

func (c *Server) installWorkspaceTypeController(gs *genericapiserver.GenericAPIServer, cl controllerClients) error {
	workspaceTypes := wtcontroller.New(wtcontroller.Config{WorkspaceTypes: c.Informers.kcp.workspaceTypes, KCP: cl.kcp, Shards: c.Informers.shardInformer()})
	return c.addController(gs, "shardplane-workspacetype-controller", running(map[runner]int{workspaceTypes: 2}))
}

func (c *Server) installPartitionSetController(gs *genericapiserver.GenericAPIServer, cl controllerClients) error {
	partitionSets := partitionset.New(partitionset.Config{
		PartitionSets: c.Informers.kcp.partitionSets, Partitions: c.Informers.kcp.partitions, Shards: c.Informers.shardInformer(), KCP: cl.kcp,
	})
	return c.addController(gs, "shardplane-partitionset-controller", running(map[runner]int{partitionSets: 2}))
}

// installAPIExportControllers installs the controllers of APIExports'
// identities and of their endpoint slices.
func (c *Server) installAPIExportControllers(gs *genericapiserver.GenericAPIServer, cl controllerClients) error {
	loopbackClient, err := kubernetes.NewForConfig(cl.loopback)
	if err != nil {
		return err
	}
	endpointSlices, err := c.newEndpointSliceController(cl.loopback, cl.kcp)
	if err != nil {
		return err
	}
	apiExports := apiexportcontroller.New(apiexportcontroller.Config{APIExports: c.Informers.kcp.apiExports, KCP: cl.kcp, Core: loopbackClient.CoreV1().RESTClient(), Slices: endpointSlices.Informer()})
	return c.addController(gs, "shardplane-apiexport-controllers", running(map[runner]int{apiExports: 4, endpointSlices: 2}))
}

// installAPIBindingControllers installs the controllers of APIBindings and
// of the default APIBindings of new workspaces.
func (c *Server) installAPIBindingControllers(gs *genericapiserver.GenericAPIServer, cl controllerClients) error {
	kcp, globals := c.Informers.kcp, c.Informers.globals()
	apiBindings, err := apibindingcontroller.New(apibindingcontroller.Config{
		APIBindings: kcp.apiBindings, APIExports: kcp.apiExports, APIResourceSchemas: kcp.apiResourceSchemas, CRDs: c.apiExtensions.crds,
		ResolvePath: c.Informers.resolveAnyPath, ClusterPath: kcp.clusterPath, Client: cl.kcp,
		DeleteInstances:  c.apiExtensions.server.DeleteBoundInstances,
		Relabel:          cl.relabeler.Relabel,
		GlobalAPIExports: globals.apiExports, GlobalAPIResourceSchemas: globals.apiResourceSchemas,
		Hosted: c.Informers.hosted, CacheUnreachable: c.Informers.global.Reachable,
	})
	if err != nil {
		return err
	}
	defaultAPIBindings, err := defaultapibinding.New(defaultapibinding.Config{
		LogicalClusters: kcp.logicalClusters, APIBindings: kcp.apiBindings, APIExports: kcp.apiExports, WorkspaceTypes: kcp.workspaceTypes,
		ResolvePath:      c.Informers.resolveAnyPath,
		Types:            c.Informers.workspaceTypes(),
		Client:           cl.kcp,
		GlobalAPIExports: globals.apiExports, GlobalWorkspaceTypes: globals.workspaceTypes,
		InProcess: c.inProcess,
	})
	if err != nil {
		return err
	}
	return c.addController(gs, "shardplane-apibinding-controllers", func(ctx context.Context) error {
		go func() {
			// Naming conflicts with CRDs are only seen once they are listed.
			// Binding is a status write per binding, like the workspace
			// controllers' work: with a few workers the queue, not the
			// writes, limited a burst (test/bench --bindings).
			if wildcardinformer.WaitForSync(ctx, c.apiExtensions.crds) == nil {
				apiBindings.Run(ctx, 32)
			}
		}()
		go defaultAPIBindings.Run(ctx, 32)
		return nil
	})
}

func (c *Server) installAdmissionPolicyStatusController(gs *genericapiserver.GenericAPIServer, cl controllerClients) error {
	policyStatus, err := admissionpolicystatus.New(admissionpolicystatus.Config{Policies: c.Informers.admission.ValidatingPolicies, Loopback: cl.loopback})
	if err != nil {
		return err
	}
	return c.addController(gs, "shardplane-admissionpolicystatus-controller", running(map[runner]int{policyStatus: 2}))
}

func (c *Server) installWorkspaceController(gs *genericapiserver.GenericAPIServer, cl controllerClients) error {
	kcp := c.Informers.kcp
	workspaces := wscontroller.New(wscontroller.Config{
		Workspaces: kcp.workspaces, LogicalClusters: kcp.logicalClusters, Shards: c.Informers.shards(), ShardEvents: c.Informers.shardInformer(),
		Types:       c.Informers.workspaceTypes(),
		Local:       cl.kcp,
		ShardClient: c.shardClient,
		ShardName:   c.Options.ShardName,
		InProcess:   c.inProcess,
		Migrations:  c.Informers.global.LogicalClusterMigrations,
	})
	return c.addController(gs, "shardplane-workspace-controller", running(map[runner]int{workspaces: 32}))
}

// installWorkspaceMountController installs the controller of mounted
// workspaces, with kcp's WorkspaceMounts gate only (kcp installs its
// mounts controller the same way). It must come before the garbage
// collector, whose watches feed it.
func (c *Server) installWorkspaceMountController(gs *genericapiserver.GenericAPIServer, cl controllerClients) error {
	if !features.Enabled(features.WorkspaceMounts) {
		return nil
	}
	c.workspaceMounts = wsmountcontroller.New(wsmountcontroller.Config{Workspaces: c.Informers.kcp.workspaces, Local: cl.kcp, Loopback: cl.loopback})
	return c.addController(gs, "shardplane-workspacemount-controller", running(map[runner]int{c.workspaceMounts: 2}))
}

// installCachedResourceController installs the replication of the
// objects ClusterCachedResources select into the cache server, with kcp's
// CacheAPIs gate only, as kcp does.
func (c *Server) installCachedResourceController(gs *genericapiserver.GenericAPIServer, cl controllerClients) error {
	if !features.Enabled(features.CacheAPIs) {
		return nil
	}
	cacheConfig, err := cacheClientConfig(c.Options, cl.loopback)
	if err != nil {
		return err
	}
	viewBase := c.Options.virtual.URL
	ctrl, err := cachedresource.New(cachedresource.Config{
		ShardName: c.Options.ShardName, CachedResources: c.Informers.kcp.clusterCachedResources, EndpointSlices: c.Informers.kcp.clusterCachedResourceEndpointSlices,
		KCP: cl.kcp, Loopback: cl.loopback, Cache: cacheConfig,
		ViewURL: func(cluster logicalcluster.Name, slice string) string {
			return viewurl.ReplicationURL(viewBase, cluster, slice)
		},
		APIExports: []*wildcardinformer.Informer{c.Informers.kcp.apiExports, c.Informers.global.APIExports},
	})
	if err != nil {
		return err
	}
	return c.addController(gs, "shardplane-cachedresource-controller", running(map[runner]int{ctrl: 4}))
}

// installShardStatusControllers installs the report of this shard's
// status on its Shard in root, its drain, and, on the root shard, the
// marking of shards whose heartbeat stopped.
func (c *Server) installShardStatusControllers(gs *genericapiserver.GenericAPIServer, cl controllerClients) error {
	root := cl.kcp
	if !c.Informers.hostsRoot {
		rootConfig, err := rootshard.LoadConfig(c.Options.RootShardKubeconfig)
		if err != nil {
			return fmt.Errorf("--root-shard-kubeconfig: %w", err)
		}
		if root, err = kcpclient.New(rootConfig); err != nil {
			return err
		}
	}
	controllers := map[runner]int{
		shardcontroller.NewReporter(shardcontroller.ReporterConfig{
			ShardName: c.Options.ShardName, Interval: c.Options.HeartbeatInterval,
			LogicalClusters: c.Informers.kcp.logicalClusters, Shards: c.Informers.shardInformer(), Root: root,
		}): 1,
	}
	// Each shard drains itself: only it sees its logical clusters.
	drain, err := draincontroller.New(draincontroller.Config{
		ShardName: c.Options.ShardName, Shards: c.Informers.shards(), ShardEvents: c.Informers.shardInformer(),
		LogicalClusters: c.Informers.kcp.logicalClusters, Migrations: c.Informers.global.LogicalClusterMigrations, Root: root,
	})
	if err != nil {
		return err
	}
	controllers[drain] = 1
	if c.Informers.hostsRoot {
		controllers[shardcontroller.NewLiveness(shardcontroller.LivenessConfig{
			Timeout: c.Options.HeartbeatTimeout, Shards: c.Informers.shards(), Root: cl.kcp,
		})] = 1
	}
	return c.addController(gs, "shardplane-shard-status", running(controllers))
}

// installMigrationController installs the shard's part of moving logical
// clusters between shards.
func (c *Server) installMigrationController(gs *genericapiserver.GenericAPIServer, cl controllerClients) error {
	migrations, err := migrationcontroller.New(migrationcontroller.Config{
		ShardName:       c.Options.ShardName,
		Migrations:      c.Informers.global.LogicalClusterMigrations,
		LogicalClusters: c.Informers.kcp.logicalClusters,
		Workspaces:      c.Informers.kcp.workspaces,
		Local:           cl.kcp,
		Shards:          c.Informers.shards(),
		ShardClient:     c.shardClient,
		Etcd:            c.etcdKV(),
		Holds:           c.holds,
		EtcdPrefix:      c.Options.ControlPlane.Etcd.StorageConfig.Prefix,
	})
	if err != nil {
		return err
	}
	return c.addController(gs, "shardplane-migration-controller", running(map[runner]int{migrations: 4}))
}

// installReplication installs the replication to the cache server and the
// labeler of the RBAC other shards need. Replication waits for the cache
// server, never for long: a shard serves while it is away.
func (c *Server) installReplication(gs *genericapiserver.GenericAPIServer, cl controllerClients) error {
	replicator, labeler, err := c.newReplication(cl.loopback)
	if err != nil {
		return err
	}
	return c.addController(gs, "shardplane-replication", running(map[runner]int{replicator: 8, labeler: 32}))
}

// installRootBootstrap bootstraps root on the root shard, retrying until it
// succeeds; the shard is not ready before root is.
func (c *Server) installRootBootstrap(gs *genericapiserver.GenericAPIServer, cl controllerClients) error {
	if err := gs.AddReadyzChecks(healthz.NamedCheck("shardplane-root-bootstrapped", func(*http.Request) error { return c.rootReady() })); err != nil {
		return err
	}
	if c.Options.ShardName != corev1alpha1.RootShard {
		return nil
	}
	shard := c.Options.shard()
	return c.afterInformers(gs, "shardplane-root-bootstrap", func(ctx context.Context) {
		err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
			if err := bootstrap.Root(ctx, cl.loopback, shard, c.Options.rootIdentities); err != nil {
				klog.FromContext(ctx).Error(err, "Bootstrapping root failed, retrying")
				return false, nil
			}
			return true, nil
		})
		if err == nil {
			klog.FromContext(ctx).Info("Bootstrapped root", "shard", shard.Name)
		}
	})
}

// waitForInformers blocks until the wildcard informers, and on a shard
// without root the informers of the cache server's replicas, have listed.
// The root shard does not wait for the cache server: what it needs of root
// it hosts.
func (c *Server) waitForInformers(ctx context.Context) error {
	if c.Informers.hostsRoot {
		return wildcardinformer.WaitForSync(ctx, c.Informers.all()...)
	}
	return wildcardinformer.WaitForSync(ctx, c.Informers.withGlobal()...)
}

// rootReady tells whether root has been bootstrapped (its LogicalCluster is
// Ready); the shard is not ready before.
func (c *Server) rootReady() error {
	if c.Options.ShardName != corev1alpha1.RootShard {
		return nil
	}
	lc := c.Informers.kcp.logicalCluster(logicalcluster.Root)
	if lc == nil || lc.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
		return fmt.Errorf("root logical cluster not ready yet")
	}
	return nil
}
