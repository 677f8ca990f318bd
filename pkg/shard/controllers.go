package shard

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
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
	"github.com/shardplane/shardplane/pkg/registry/content"
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
	create, err := c.inProcessCreator()
	if err != nil {
		return err
	}
	// The apiserver's identity lease lives in kube-system of system:admin:
	// create it before serving instead of racing the namespaces controller.
	systemCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := create(systemCtx, logicalcluster.SystemAdmin, lccontroller.NamespaceObjects(bootstrap.SystemNamespaces...)...); err != nil {
		klog.Background().Error(err, "Creating the system namespaces failed; the system namespaces controller creates them later")
	}
	kcp := c.Informers.kcp
	namespaces := nscontroller.New(c.Informers.namespaces, loopback, kcp.deleting)
	logicalClusters := lccontroller.New(kcp.logicalClusters, c.Informers.namespaces, local, loopback, c.Options.ExternalURL,
		func(ctx context.Context, cluster logicalcluster.Name, resourceVersion string) (content.Remaining, error) {
			return c.content.Delete(ctx, cluster, resourceVersion)
		})
	ca := c.rootCA
	logicalClusters.BootstrapInProcess(create, func(namespace string) []runtime.Object {
		return sacontroller.NamespaceObjects(namespace, ca)
	})
	writeStatus, err := c.inProcessLogicalClusterWriter("logicalclusters/status")
	if err != nil {
		return err
	}
	logicalClusters.BootstrapStatusInProcess(writeStatus)
	writeFinalizers, err := c.inProcessLogicalClusterWriter("logicalclusters")
	if err != nil {
		return err
	}
	logicalClusters.DeletionInProcess(writeFinalizers)
	// Most workspaces have an APIBinding, whose finalizer holds their deletion.
	logicalClusters.RequeueOnDeletionOf(kcp.apiBindings)
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
		CreateLocal: create,
	})
	if err != nil {
		return err
	}
	policyStatus, err := admissionpolicystatus.New(c.Informers.admission.ValidatingPolicies, loopback)
	if err != nil {
		return err
	}
	deleteLogicalCluster, err := c.inProcessLogicalClusterDeleter()
	if err != nil {
		return err
	}
	workspaces := wscontroller.New(wscontroller.Config{
		Workspaces: kcp.workspaces, LogicalClusters: kcp.logicalClusters, Shards: c.Informers.shards(),
		Types:                     c.Informers.workspaceTypes(),
		Local:                     local,
		ShardClient:               c.shardClient,
		ShardName:                 c.Options.ShardName,
		CreateLocal:               create,
		DeleteLocalLogicalCluster: deleteLogicalCluster,
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

// inProcessResources are the kinds inProcessCreator creates, with their
// resources: a new logical cluster's LogicalCluster, what its bootstrap
// creates, its default APIBindings, and the shard's system namespaces.
var inProcessResources = map[schema.GroupVersionKind]schema.GroupVersionResource{
	corev1.SchemeGroupVersion.WithKind("Namespace"):            corev1.SchemeGroupVersion.WithResource("namespaces"),
	corev1.SchemeGroupVersion.WithKind("ServiceAccount"):       corev1.SchemeGroupVersion.WithResource("serviceaccounts"),
	corev1.SchemeGroupVersion.WithKind("ConfigMap"):            corev1.SchemeGroupVersion.WithResource("configmaps"),
	rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"):   rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"),
	apisv1alpha2.SchemeGroupVersion.WithKind("APIBinding"):     apisv1alpha2.SchemeGroupVersion.WithResource("apibindings"),
	corev1alpha1.SchemeGroupVersion.WithKind("LogicalCluster"): corev1alpha1.SchemeGroupVersion.WithResource("logicalclusters"),
}

// inProcessCreator returns a function that creates objects of
// inProcessResources in a logical cluster through the REST storages, as
// the shard itself (system:masters), leaving existing ones alone, all at
// once: no HTTP round trip, TLS, encoding, authorization or admission, for
// objects of a new cluster, which no admission plugin of that cluster has a
// say on yet, and of the shard's own system clusters before it serves. The
// objects are defaulted as a decoded request body would be.
func (c *Server) inProcessCreator() (func(ctx context.Context, cluster logicalcluster.Name, objs ...runtime.Object) error, error) {
	storages := map[schema.GroupVersionResource]rest.Creater{}
	for _, gvr := range inProcessResources {
		creater, ok := c.storageOf(gvr).(rest.Creater)
		if !ok {
			return nil, fmt.Errorf("no storage of %s to create in-process", gvr)
		}
		storages[gvr] = creater
	}
	createOne := func(ctx context.Context, cluster logicalcluster.Name, obj runtime.Object) error {
		gvks, _, err := legacyscheme.Scheme.ObjectKinds(obj)
		if err != nil {
			return err
		}
		gvr, ok := inProcessResources[gvks[0]]
		if !ok {
			return fmt.Errorf("%s is not created in-process", gvks[0])
		}
		storage := storages[gvr]
		accessor, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		external := obj.DeepCopyObject()
		legacyscheme.Scheme.Default(external)
		internal := storage.New()
		if reflect.TypeOf(internal) == reflect.TypeOf(external) {
			internal = external // kcp's kinds are stored as served
		} else if err := legacyscheme.Scheme.Convert(external, internal, nil); err != nil {
			return fmt.Errorf("convert %s: %w", gvks[0].Kind, err)
		}
		ns, name := accessor.GetNamespace(), accessor.GetName()
		ctx = asShard(ctx, cluster, "create", gvr, ns, name)
		if _, err := storage.Create(ctx, internal, rest.ValidateAllObjectFunc, &metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s/%s in %s: %w", gvks[0].Kind, ns, name, cluster, err)
		}
		return nil
	}
	return func(ctx context.Context, cluster logicalcluster.Name, objs ...runtime.Object) error {
		g, ctx := errgroup.WithContext(ctx)
		for _, obj := range objs {
			g.Go(func() error { return createOne(ctx, cluster, obj) })
		}
		return g.Wait()
	}, nil
}

// inProcessExists returns a function that tells whether an object of the
// core group (serviceaccounts or configmaps) exists in a logical cluster,
// read through its REST storage from etcd as the shard itself: no HTTP
// round trip for a question only the shard's own controllers ask.
func (c *Server) inProcessExists() (func(ctx context.Context, cluster logicalcluster.Name, resource, namespace, name string) (bool, error), error) {
	getters := map[string]rest.Getter{}
	for _, resource := range []string{"serviceaccounts", "configmaps"} {
		getter, ok := c.storageOf(corev1.SchemeGroupVersion.WithResource(resource)).(rest.Getter)
		if !ok {
			return nil, fmt.Errorf("no storage of %s to read in-process", resource)
		}
		getters[resource] = getter
	}
	return func(ctx context.Context, cluster logicalcluster.Name, resource, namespace, name string) (bool, error) {
		getter, ok := getters[resource]
		if !ok {
			return false, fmt.Errorf("no storage of %s to read in-process", resource)
		}
		ctx = asShard(ctx, cluster, "get", corev1.SchemeGroupVersion.WithResource(resource), namespace, name)
		_, err := getter.Get(ctx, name, &metav1.GetOptions{})
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsNotFound(err):
			return false, nil
		default:
			return false, err
		}
	}, nil
}

// inProcessLogicalClusterWriter returns a function that writes a
// LogicalCluster through the REST storage of resource, "logicalclusters"
// or "logicalclusters/status", as the shard itself (system:masters): no
// HTTP round trip, encoding, audit or admission, for the writes that only
// the system makes while nobody else reaches the cluster: the status
// write that ends a new cluster's Scheduling, and the finalizers of a
// cluster being deleted. The write is conditional on lc's
// resourceVersion, as a PUT is. When it removes the last finalizer of a
// deleted LogicalCluster, it deletes it and returns it as it was last.
func (c *Server) inProcessLogicalClusterWriter(resource string) (func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) (*corev1alpha1.LogicalCluster, error), error) {
	gvr := corev1alpha1.SchemeGroupVersion.WithResource(resource)
	updater, ok := c.storageOf(gvr).(rest.Updater)
	if !ok {
		return nil, fmt.Errorf("no storage of %s to write in-process", gvr)
	}
	return func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) (*corev1alpha1.LogicalCluster, error) {
		ctx = asShard(ctx, cluster, "update", gvr, "", lc.Name)
		obj, _, err := updater.Update(ctx, lc.Name, rest.DefaultUpdatedObjectInfo(lc.DeepCopy()), nil, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
		if err != nil {
			return nil, err
		}
		updated, ok := obj.(*corev1alpha1.LogicalCluster)
		if !ok {
			return nil, fmt.Errorf("in-process write of %s returned %T", gvr, obj)
		}
		return updated, nil
	}, nil
}

// inProcessLogicalClusterDeleter returns a function that deletes the
// LogicalCluster of a logical cluster through its REST storage as the
// shard itself (system:masters), as the workspace controller's DELETE did
// without options: no HTTP round trip, encoding, audit or admission, for a
// write that only the system makes (the admission of LogicalClusters lets
// nobody else delete a workspace's LogicalCluster). Its deletion finalizer
// keeps it until the cluster's content is gone.
func (c *Server) inProcessLogicalClusterDeleter() (func(ctx context.Context, cluster logicalcluster.Name) error, error) {
	gvr := corev1alpha1.SchemeGroupVersion.WithResource("logicalclusters")
	deleter, ok := c.storageOf(gvr).(rest.GracefulDeleter)
	if !ok {
		return nil, fmt.Errorf("no storage of %s to delete in-process", gvr)
	}
	return func(ctx context.Context, cluster logicalcluster.Name) error {
		ctx = asShard(ctx, cluster, "delete", gvr, "", corev1alpha1.LogicalClusterName)
		_, _, err := deleter.Delete(ctx, corev1alpha1.LogicalClusterName, rest.ValidateAllObjectFunc, &metav1.DeleteOptions{})
		return err
	}, nil
}

// storageOf returns the REST storage of gvr, whose resource may name a
// subresource ("logicalclusters/status"), or nil.
func (c *Server) storageOf(gvr schema.GroupVersionResource) rest.Storage {
	for _, g := range c.apiGroups {
		if g.PrioritizedVersions[0].Group != gvr.Group {
			continue
		}
		if s, ok := g.VersionedResourcesStorageMap[gvr.Version][gvr.Resource]; ok {
			return s
		}
	}
	return nil
}

// shardUser is who the shard's in-process requests come from.
var shardUser = &user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup}}

// asShard returns ctx for an in-process request of verb on gvr (whose
// resource may name a subresource) in a namespace of cluster, as the shard
// itself. Validation reads what is being written from the request info;
// RBAC's escalation check, who writes it.
func asShard(ctx context.Context, cluster logicalcluster.Name, verb string, gvr schema.GroupVersionResource, namespace, name string) context.Context {
	resource, subresource, _ := strings.Cut(gvr.Resource, "/")
	ctx = logicalcluster.WithCluster(genericapirequest.WithNamespace(ctx, namespace), cluster)
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: verb, APIGroup: gvr.Group, APIVersion: gvr.Version,
		Resource: resource, Subresource: subresource, Namespace: namespace, Name: name,
	})
	return genericapirequest.WithUser(ctx, shardUser)
}
