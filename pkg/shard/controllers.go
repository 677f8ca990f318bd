package shard

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/bootstrap"
	"github.com/shardplane/shardplane/pkg/controllers/admissionpolicystatus"
	apibindingcontroller "github.com/shardplane/shardplane/pkg/controllers/apibinding"
	apiexportcontroller "github.com/shardplane/shardplane/pkg/controllers/apiexport"
	"github.com/shardplane/shardplane/pkg/controllers/defaultapibinding"
	lccontroller "github.com/shardplane/shardplane/pkg/controllers/logicalcluster"
	nscontroller "github.com/shardplane/shardplane/pkg/controllers/namespace"
	sacontroller "github.com/shardplane/shardplane/pkg/controllers/serviceaccount"
	wscontroller "github.com/shardplane/shardplane/pkg/controllers/workspace"
	wtcontroller "github.com/shardplane/shardplane/pkg/controllers/workspacetype"
	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// shardClient returns a client for a shard's baseURL that acts as
// system:kcp:logical-cluster-admin. Clients are kept per base URL: the
// scheduler asks for one on every workspace it places or deletes.
func (c *Server) shardClient(shard *corev1alpha1.Shard) (*kcpclient.Client, error) {
	if client, ok := c.shardClients.Load(shard.Spec.BaseURL); ok {
		return client.(*kcpclient.Client), nil
	}
	cfg, err := c.logicalClusterAdminConfig(shard.Name)
	if err != nil {
		return nil, err
	}
	cfg.Host = shard.Spec.BaseURL
	client, err := kcpclient.New(cfg)
	if err != nil {
		return nil, err
	}
	actual, _ := c.shardClients.LoadOrStore(shard.Spec.BaseURL, client)
	return actual.(*kcpclient.Client), nil
}

// logicalClusterAdminConfig returns the credentials for a shard:
// --logical-cluster-admin-kubeconfig, or, for this shard only, its own
// token and serving CA. Another shard accepts only credentials it was given
// (a token or client certificate in group system:kcp:logical-cluster-admin),
// never this shard's own token.
func (c *Server) logicalClusterAdminConfig(shardName string) (*restclient.Config, error) {
	if path := c.Options.LogicalClusterAdminKubeconfig; path != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, fmt.Errorf("--logical-cluster-admin-kubeconfig: %w", err)
		}
		cfg.QPS = -1
		return cfg, nil
	}
	if shardName != c.Options.ShardName {
		return nil, fmt.Errorf("shard %s is another shard: creating logical clusters there needs --logical-cluster-admin-kubeconfig with credentials in group %s that it accepts",
			shardName, identities.LogicalClusterAdminGroup)
	}
	ca, err := c.servingCA()
	if err != nil {
		return nil, err
	}
	return &restclient.Config{
		BearerToken:     c.Options.tokens.LogicalClusterAdmin,
		TLSClientConfig: restclient.TLSClientConfig{CAData: ca},
		QPS:             -1,
	}, nil
}

// addControllers registers the bootstrap and the shard's controllers as
// post-start hooks. Every controller serves all logical clusters.
func (c *Server) addControllers(gs *genericapiserver.GenericAPIServer) error {
	loopback := restclient.CopyConfig(c.ControlPlane.Generic.LoopbackClientConfig)
	loopback.QPS, loopback.Burst = -1, 0
	local, err := kcpclient.New(loopback)
	if err != nil {
		return err
	}
	// The apiserver's identity lease lives in kube-system of system:admin:
	// create it before serving instead of racing the namespaces controller.
	systemCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.inProcess.Create(systemCtx, logicalcluster.SystemAdmin, lccontroller.NamespaceObjects(bootstrap.SystemNamespaces...)...); err != nil {
		klog.Background().Error(err, "Creating the system namespaces failed; the system namespaces controller creates them later")
	}
	kcp := c.Informers.kcp
	namespaces := nscontroller.New(c.Informers.namespaces, loopback, kcp.deleting)
	ca := c.rootCA
	logicalClusters := lccontroller.New(lccontroller.Config{
		LogicalClusters: kcp.logicalClusters, Namespaces: c.Informers.namespaces,
		// Most workspaces have an APIBinding, whose finalizer holds their deletion.
		RequeueOnDeletionOf: []*wildcardinformer.Informer{kcp.apiBindings},
		KCP:                 local, Loopback: loopback, ExternalURL: c.Options.ExternalURL,
		DeleteContent: c.content.Delete,
		InProcess:     c.inProcess,
		NamespaceObjects: func(namespace string) []runtime.Object {
			return sacontroller.NamespaceObjects(namespace, ca)
		},
	})
	workspaceTypes := wtcontroller.New(kcp.workspaceTypes, local, wtcontroller.WithShards(c.Informers.shardInformer()))
	loopbackClient, err := kubernetes.NewForConfig(loopback)
	if err != nil {
		return err
	}
	apiExports := apiexportcontroller.New(kcp.apiExports, local, loopbackClient.CoreV1().RESTClient())
	endpointSlices, err := c.newEndpointSliceController(loopback, local)
	if err != nil {
		return err
	}
	apiBindings, err := apibindingcontroller.New(apibindingcontroller.Config{
		APIBindings: kcp.apiBindings, APIExports: kcp.apiExports, APIResourceSchemas: kcp.apiResourceSchemas, CRDs: c.apiExtensions.crds,
		ResolvePath: c.Informers.resolveAnyPath, ClusterPath: kcp.clusterPath, Client: local,
		DeleteInstances:  c.apiExtensions.server.DeleteBoundInstances,
		GlobalAPIExports: c.Informers.globals().apiExports, GlobalAPIResourceSchemas: c.Informers.globals().apiResourceSchemas,
		Hosted: c.Informers.hosted, CacheUnreachable: c.Informers.global.Reachable,
	})
	if err != nil {
		return err
	}
	defaultAPIBindings, err := defaultapibinding.New(defaultapibinding.Config{
		LogicalClusters: kcp.logicalClusters, APIBindings: kcp.apiBindings, APIExports: kcp.apiExports, WorkspaceTypes: kcp.workspaceTypes,
		ResolvePath:      c.Informers.resolveAnyPath,
		Types:            c.Informers.workspaceTypes(),
		Client:           local,
		GlobalAPIExports: c.Informers.globals().apiExports, GlobalWorkspaceTypes: c.Informers.globals().workspaceTypes,
		InProcess: c.inProcess,
	})
	if err != nil {
		return err
	}
	policyStatus, err := admissionpolicystatus.New(c.Informers.admission.ValidatingPolicies, loopback)
	if err != nil {
		return err
	}
	workspaces := wscontroller.New(wscontroller.Config{
		Workspaces: kcp.workspaces, LogicalClusters: kcp.logicalClusters, Shards: c.Informers.shards(),
		Types:       c.Informers.workspaceTypes(),
		Local:       local,
		ShardClient: c.shardClient,
		ShardName:   c.Options.ShardName,
		InProcess:   c.inProcess,
	})

	replicator, labeler, err := c.newReplication(loopback)
	if err != nil {
		return err
	}
	if err := c.addGlobal(gs); err != nil {
		return err
	}
	shard := bootstrap.Shard{Name: c.Options.ShardName, BaseURL: c.Options.BaseURL, ExternalURL: c.Options.ExternalURL}
	started := newStartupCheck("shardplane-controllers")
	if err := gs.AddReadyzChecks(started); err != nil {
		return err
	}
	return gs.AddPostStartHook("shardplane-bootstrap-and-controllers", func(hc genericapiserver.PostStartHookContext) error {
		go func() {
			ctx := klog.NewContext(hc, klog.Background().WithName("controllers"))
			if err := c.waitForInformers(ctx); err != nil {
				return
			}
			// Their work waits on round trips, not CPU: many workers keep a
			// burst of thousands of workspaces moving.
			go namespaces.Run(ctx, 32)
			go logicalClusters.Run(ctx, 32)
			go workspaces.Run(ctx, 32)
			go workspaceTypes.Run(ctx, 2)
			go apiExports.Run(ctx, 4)
			go endpointSlices.Run(ctx, 2)
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
			go policyStatus.Run(ctx, 2)
			// Replication waits for the cache server, never for long: a
			// shard serves while it is away.
			go replicator.Run(ctx, 8)
			go labeler.Run(ctx, 32)
			started.run(ctx, "start Kubernetes controllers", c.startKubeControllers)
			if c.Options.ShardName != corev1alpha1.RootShard {
				return
			}
			err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
				if err := bootstrap.Root(ctx, loopback, shard, c.Options.rootIdentities); err != nil {
					klog.FromContext(ctx).Error(err, "Bootstrapping root failed, retrying")
					return false, nil
				}
				return true, nil
			})
			if err == nil {
				klog.FromContext(ctx).Info("Bootstrapped root", "shard", shard.Name)
			}
		}()
		return nil
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
