package shard

import (
	"context"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	unionauth "k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	kcpopenapi "github.com/shardplane/shardplane/pkg/apis/generated/openapi"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	"github.com/shardplane/shardplane/pkg/authorization/othershards"
	"github.com/shardplane/shardplane/pkg/authorization/workspacecontent"
	"github.com/shardplane/shardplane/pkg/clusterhold"
	"github.com/shardplane/shardplane/pkg/proxyauth"

	apibindingadmission "github.com/shardplane/shardplane/pkg/admission/apibinding"
	lcadmission "github.com/shardplane/shardplane/pkg/admission/logicalcluster"
	"github.com/shardplane/shardplane/pkg/admission/namespacelifecycle"
	"github.com/shardplane/shardplane/pkg/admission/objectcountlimit"
	"github.com/shardplane/shardplane/pkg/admission/pathannotation"
	"github.com/shardplane/shardplane/pkg/admission/percluster"
	"github.com/shardplane/shardplane/pkg/admission/permissionclaims"
	"github.com/shardplane/shardplane/pkg/admission/policy"
	rqadmission "github.com/shardplane/shardplane/pkg/admission/resourcequota"
	"github.com/shardplane/shardplane/pkg/admission/systemstatus"
	admissionwebhook "github.com/shardplane/shardplane/pkg/admission/webhook"
	wsadmission "github.com/shardplane/shardplane/pkg/admission/workspace"
	"github.com/shardplane/shardplane/pkg/authentication/admin"
	"github.com/shardplane/shardplane/pkg/authentication/workspaceauth"
	"github.com/shardplane/shardplane/pkg/authorization"
	"github.com/shardplane/shardplane/pkg/authorization/clusterrbac"
	"github.com/shardplane/shardplane/pkg/authorization/maximalpermission"
	"github.com/shardplane/shardplane/pkg/boundapis"
	"github.com/shardplane/shardplane/pkg/cacheserver"
	lccontroller "github.com/shardplane/shardplane/pkg/controllers/logicalcluster"
	"github.com/shardplane/shardplane/pkg/fairness"
	"github.com/shardplane/shardplane/pkg/features"
	"github.com/shardplane/shardplane/pkg/globalinformers"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/loopback"
	"github.com/shardplane/shardplane/pkg/objectcount"
	apisregistry "github.com/shardplane/shardplane/pkg/registry/apis"
	kstorage "github.com/shardplane/shardplane/pkg/storage"
	"github.com/shardplane/shardplane/pkg/version"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Config is the shard's server configuration: the options, the generic
// control plane configuration, and the cluster-aware informers, handlers and
// admission plugins it is built from. It holds no running state: the Server
// built from it owns that.
type Config struct {
	Options      CompletedOptions
	ControlPlane *controlplaneapiserver.Config

	// Informers span all logical clusters of the shard.
	Informers wildcardInformers
	// apiExtensions serves CustomResourceDefinitions per logical cluster.
	apiExtensions *apiExtensions
	// clusterAdmission are the webhook and policy plugins, one instance per
	// logical cluster with configuration.
	clusterAdmission []*percluster.Plugins
	// embeddedCache is the cache server served below /services/cache when
	// the shard has no --cache-kubeconfig; nil otherwise.
	embeddedCache *cacheserver.Server
	// loopback serves the shard's own clients in memory.
	loopback *loopback.Server
	// virtualWorkspaces serves the views in-process; nil when they are
	// turned off.
	virtualWorkspaces http.Handler
	// views serves the views as the user in the request's context (no
	// authentication), for requests the shard itself sends there.
	views http.Handler
	// holds are the writes held to logical clusters moving away.
	holds *clusterhold.Registry
	// rootCA is the bundle every namespace's kube-root-ca.crt and each
	// token secret publish (CompletedOptions.rootCA), read once.
	rootCA []byte
	// workspaceAuth authenticates tokens of the issuers of workspace
	// types; nil unless the WorkspaceAuthentication gate is on.
	workspaceAuth *workspaceauth.Authenticator
	// fairness is API Priority and Fairness by workspace; nil when off.
	fairness *fairness.Controller
	// objectCounts are the logical clusters' object counts for their
	// total object limits.
	objectCounts *objectcount.Registry
}

type completedConfig struct {
	Options          CompletedOptions
	ControlPlane     controlplaneapiserver.CompletedConfig
	Informers        wildcardInformers
	apiExtensions    *apiExtensions
	clusterAdmission []*percluster.Plugins
	embeddedCache    *cacheserver.Server
	loopback         *loopback.Server
	rootCA           []byte
	workspaceAuth    *workspaceauth.Authenticator
	fairness         *fairness.Controller
	objectCounts     *objectcount.Registry
	holds            *clusterhold.Registry
}

// CompletedConfig is a Config with every default filled in; only it builds
// a Server.
type CompletedConfig struct {
	*completedConfig
}

// Complete fills in the defaults of the generic control plane. Call it
// once.
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{
		Options:          c.Options,
		ControlPlane:     c.ControlPlane.Complete(),
		Informers:        c.Informers,
		apiExtensions:    c.apiExtensions,
		clusterAdmission: c.clusterAdmission,
		embeddedCache:    c.embeddedCache,
		loopback:         c.loopback,
		rootCA:           c.rootCA,
		workspaceAuth:    c.workspaceAuth,
		fairness:         c.fairness,
		objectCounts:     c.objectCounts,
		holds:            c.holds,
	}}
}

// wildcardInformers are the cluster-aware informers the shard's own
// authorizer, admission and controllers read.
type wildcardInformers struct {
	rbac       clusterrbac.Informers
	namespaces *wildcardinformer.Informer
	kcp        kcpInformers
	admission  percluster.Informers
	// resourceQuotas are read by quota admission and the quota controller.
	resourceQuotas *wildcardinformer.Informer
	// global are every shard's replicated objects, read from the cache
	// server.
	global *globalinformers.Informers
	// hostsRoot tells that this is the root shard.
	hostsRoot bool

	// storage is where the in-process informers list and watch, installed
	// by New before they run.
	storage *inProcessStorage
}

func (i wildcardInformers) all() []*wildcardinformer.Informer {
	return append([]*wildcardinformer.Informer{i.rbac.Roles, i.rbac.RoleBindings, i.rbac.ClusterRoles, i.rbac.ClusterRoleBindings, i.namespaces, i.resourceQuotas}, append(i.kcp.all(), i.admission.All()...)...)
}

// resourceConfig enables the group versions a shard serves: the stable
// generic control plane APIs it installs and kcp's own. Nothing else is
// linked in (the upstream default lists every kube-apiserver group).
func resourceConfig() *serverstorage.ResourceConfig {
	rc := serverstorage.NewResourceConfig()
	rc.EnableVersions(
		schema.GroupVersion{Version: "v1"},
		schema.GroupVersion{Group: "authentication.k8s.io", Version: "v1"},
		schema.GroupVersion{Group: "authorization.k8s.io", Version: "v1"},
		schema.GroupVersion{Group: "certificates.k8s.io", Version: "v1"},
		schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1"},
		schema.GroupVersion{Group: "rbac.authorization.k8s.io", Version: "v1"},
		schema.GroupVersion{Group: "admissionregistration.k8s.io", Version: "v1"},
		schema.GroupVersion{Group: "events.k8s.io", Version: "v1"},
		schema.GroupVersion{Group: "apiextensions.k8s.io", Version: "v1"},
		schema.GroupVersion{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"},
		corev1alpha1.SchemeGroupVersion,
		tenancyv1alpha1.SchemeGroupVersion,
		topologyv1alpha1.SchemeGroupVersion,
		migrationv1alpha1.SchemeGroupVersion,
		apisv1alpha1.SchemeGroupVersion,
		apisv1alpha2.SchemeGroupVersion,
	)
	// cache.kcp.io exists only with kcp's CacheAPIs gate, as in kcp.
	if features.Enabled(features.CacheAPIs) {
		rc.EnableVersions(cachev1alpha1.SchemeGroupVersion)
	}
	return rc
}

// NewConfig builds the generic control plane configuration and makes it
// cluster-aware: storage keys, authentication of the admin users,
// authorization, admission and the handler chain (handler.go).
func NewConfig(o CompletedOptions) (*Config, error) {
	fair := o.ControlPlane.Features.EnablePriorityAndFairness
	o.ControlPlane.Features.EnablePriorityAndFairness = false
	genericConfig, versionedInformers, storageFactory, err := controlplaneapiserver.BuildGenericConfig(
		o.ControlPlane, []*runtime.Scheme{legacyscheme.Scheme}, resourceConfig(), kcpopenapi.GetServedOpenAPIDefinitions, nil)
	if err != nil {
		return nil, err
	}
	genericConfig.EffectiveVersion = version.Project(genericConfig.EffectiveVersion)
	// The shard's own clients reach it in memory, through the same handler
	// chain as the secure port (the informers BuildGenericConfig made keep
	// the TLS loopback: a handful of watches).
	inMemory := loopback.New()
	genericConfig.LoopbackClientConfig = inMemory.ClientConfig(genericConfig.LoopbackClientConfig)
	config := &Config{Options: o, Informers: newWildcardInformers(&inProcessStorage{}), loopback: inMemory, holds: clusterhold.New()}
	if config.rootCA, err = configureStorage(o, genericConfig, storageFactory); err != nil {
		return nil, err
	}
	var workspaceAuth authenticator.Request
	if features.Enabled(features.WorkspaceAuthentication) {
		config.workspaceAuth = workspaceauth.New(config.Informers.workspaceAuthSources(), genericConfig.Authentication.APIAudiences)
		workspaceAuth = config.workspaceAuth
	}
	if err := configureAuthentication(o, genericConfig, workspaceAuth); err != nil {
		return nil, err
	}
	if err := config.completeInformers(genericConfig.LoopbackClientConfig); err != nil {
		return nil, err
	}
	if config.workspaceAuth != nil {
		config.Informers.forgetGoneWorkspaceTypes(config.workspaceAuth)
	}
	rbacAuthorizer, err := config.configureAuthorization(genericConfig)
	if err != nil {
		return nil, err
	}
	if err := config.configureFairness(genericConfig, fair); err != nil {
		return nil, err
	}
	if config.ControlPlane, _, err = controlplaneapiserver.CreateConfig(o.ControlPlane, genericConfig, versionedInformers, nil, storageFactory, webhook.NewDefaultServiceResolver(), nil); err != nil {
		return nil, err
	}
	if err := config.configureAdmission(genericConfig, rbacAuthorizer); err != nil {
		return nil, err
	}
	if config.embeddedCache, err = newEmbeddedCache(o, genericConfig); err != nil {
		return nil, err
	}
	if config.virtualWorkspaces, config.views, err = newVirtualWorkspaces(o, genericConfig, config.Informers); err != nil {
		return nil, err
	}
	if config.apiExtensions, err = newAPIExtensions(config); err != nil {
		return nil, err
	}
	genericConfig.BuildHandlerChainFunc = config.buildHandlerChain
	return config, nil
}

// configureStorage stores kcp's kinds as JSON in their storage versions,
// inserts the cluster into every storage key and returns the root CA.
func configureStorage(o CompletedOptions, genericConfig *genericapiserver.Config, storageFactory *serverstorage.DefaultStorageFactory) ([]byte, error) {
	// kcp's types have no protobuf encoding: store them as JSON.
	for _, gr := range []schema.GroupResource{
		corev1alpha1.Resource("logicalclusters"), corev1alpha1.Resource("shards"),
		tenancyv1alpha1.Resource("workspaces"), tenancyv1alpha1.Resource("workspacetypes"),
		tenancyv1alpha1.Resource("workspaceauthenticationconfigurations"),
		topologyv1alpha1.Resource("partitions"), topologyv1alpha1.Resource("partitionsets"),
		migrationv1alpha1.Resource("logicalclustermigrations"),
		cachev1alpha1.Resource("clustercachedresources"), cachev1alpha1.Resource("clustercachedresourceendpointslices"),
	} {
		storageFactory.SetSerializer(gr, runtime.ContentTypeJSON, nil)
	}
	// apis.kcp.io prefers v1alpha2, which lacks the v1alpha1-only kinds:
	// each resource is stored in its own storage version, as JSON.
	for gr, version := range apisregistry.StorageVersions {
		storageFactory.SetSerializer(gr, runtime.ContentTypeJSON, nil)
		if encoding, ok := storageFactory.ResourceEncodingConfig.(*serverstorage.DefaultResourceEncodingConfig); ok {
			encoding.SetResourceEncoding(gr, version, apisv1alpha1.InternalGroupVersion)
		}
	}
	// Every namespace publishes the root CA in its kube-root-ca.crt: the
	// watch cache and the informers keep one copy of it, not one each per
	// namespace. Registered before any cache lists.
	ca, err := o.rootCA()
	if err != nil {
		return nil, err
	}
	kstorage.ShareValue(string(ca))
	genericConfig.RESTOptionsGetter = kstorage.RESTOptionsGetter{
		Delegate:   genericConfig.RESTOptionsGetter,
		WatchCache: o.ControlPlane.Etcd.EnableWatchCache,
		Etcd:       o.etcdClient,
	}
	return ca, nil
}

// configureAuthentication puts the cluster-bound service account tokens and
// the admin tokens before upstream's authenticators, and the issuers of
// the requested workspace's type (nil: the gate is off) after them.
func configureAuthentication(o CompletedOptions, genericConfig *genericapiserver.Config, workspaceAuth authenticator.Request) error {
	serviceAccounts, err := serviceAccountAuthenticator(o)
	if err != nil {
		return err
	}
	// Requests from the front-proxy: its certificate is verified once per
	// connection rather than on every request.
	upstream := proxyauth.Prepend(genericConfig.Authentication.RequestHeaderConfig, genericConfig.Authentication.APIAudiences, genericConfig.Authentication.Authenticator)
	// The admin tokens are for any audience, as upstream's static tokens:
	// a TokenReview that names the shard's audiences accepts them.
	admins := authenticator.WrapAudienceAgnosticRequest(genericConfig.Authentication.APIAudiences, admin.Authenticator(o.tokens))
	authenticators := []authenticator.Request{serviceAccounts, admins, upstream}
	if workspaceAuth != nil {
		authenticators = append(authenticators, workspaceAuth)
	}
	genericConfig.Authentication.Authenticator = unionauth.New(authenticators...)
	return nil
}

// completeInformers adds the kcp, global and admission informers to the
// Kubernetes ones.
func (c *Config) completeInformers(loopbackConfig *rest.Config) error {
	wildcardConfig := rest.CopyConfig(loopbackConfig)
	wildcardConfig.Host = logicalcluster.Wildcard.Path().URL(wildcardConfig.Host)
	wildcardClient, err := kubernetes.NewForConfig(wildcardConfig)
	if err != nil {
		return err
	}
	informers := &c.Informers
	if informers.kcp, err = newKCPInformers(informers.storage); err != nil {
		return err
	}
	if informers.global, err = newGlobalInformers(c.Options, loopbackConfig); err != nil {
		return err
	}
	informers.hostsRoot = c.Options.ShardName == corev1alpha1.RootShard
	global := informers.globals()
	informers.rbac.GlobalClusterRoles, informers.rbac.GlobalClusterRoleBindings = global.clusterRoles, global.clusterRoleBindings
	informers.rbac.Hosted = informers.hosted
	informers.admission = percluster.NewInformers(wildcardClient.AdmissionregistrationV1().RESTClient())
	return nil
}

// configureAuthorization installs the authorizer chain and returns its
// per-cluster RBAC authorizer.
func (c *Config) configureAuthorization(genericConfig *genericapiserver.Config) (authorizer.Authorizer, error) {
	informers := c.Informers
	rbacAuthorizer := clusterrbac.New(informers.rbac)
	// Moved away: held by the registry, or, after a restart, by the marks
	// of a handed-over origin (a destination's copy is not held).
	movedAway := func(cluster logicalcluster.Name) bool {
		if c.holds.Held(cluster) {
			return true
		}
		lc := informers.kcp.logicalCluster(cluster)
		return lc != nil && lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] != "" && lc.Annotations[migrationv1alpha1.WritesHeldAnnotationKey] != ""
	}
	content := workspacecontent.New(informers.kcp.logicalCluster, rbacAuthorizer, movedAway)
	maxPermission, err := maximalpermission.NewForInformers(informers.kcp.apiBindings, informers.kcp.apiExports, rbacAuthorizer, informers.globals().apiExports)
	if err != nil {
		return nil, err
	}
	chain, resolver, err := authorization.NewChain(content, maxPermission, rbacAuthorizer)
	if err != nil {
		return nil, err
	}
	genericConfig.RuleResolver = resolver
	// kcp's --authorization-order puts the chain among system:masters, the
	// always-allowed paths and an optional webhook. The webhook's context
	// only ends its configuration reloads, which it has none of.
	genericConfig.Authorization.Authorizer, err = c.Options.kcpStart.authorizationOptions().authorizer(context.Background(), chain, genericConfig.APIServerID)
	return rbacAuthorizer, err
}

// configureAdmission installs the admission chain: kcp's plugins, the
// per-cluster webhooks and policies, upstream's, then quota.
func (c *Config) configureAdmission(genericConfig *genericapiserver.Config, rbacAuthorizer authorizer.Authorizer) error {
	loopback, err := kubernetes.NewForConfig(genericConfig.LoopbackClientConfig)
	if err != nil {
		return err
	}
	c.Options.serviceAccountTokenGetter.SetClient(loopback.CoreV1().RESTClient().(*rest.RESTClient))
	informers := c.Informers
	namespaces := namespaceGetter{informer: informers.namespaces, client: loopback.CoreV1().RESTClient()}
	otherWorkspaces := othershards.New(genericConfig.Authorization.Authorizer, rbacAuthorizer, informers.hosted)
	// Webhooks and admission policies run per logical cluster, in
	// kube-apiserver's order: mutating (reinvoked when asked) before validating.
	perCluster := percluster.Config{Loopback: genericConfig.LoopbackClientConfig, Authorizer: genericConfig.Authorization.Authorizer, Informers: informers.admission,
		SourceCluster: boundapis.AdmissionSource(informers.kcp.apiBindings)}
	if err := c.readAdmissionReplicas(&perCluster); err != nil {
		return err
	}
	c.objectCounts = objectcount.NewRegistry(c.Options.kcpStart.ObjectCountLimit)
	c.clusterAdmission = []*percluster.Plugins{policy.NewMutating(perCluster), admissionwebhook.NewMutating(perCluster), policy.NewValidating(perCluster), admissionwebhook.NewValidating(perCluster)}
	plugins := admission.NewChainHandler(
		namespacelifecycle.New(namespaces.get, informers.kcp.deleting),
		pathannotation.New(informers.kcp.clusterPath),
		lcadmission.New(),
		systemstatus.New(),
		wsadmission.New(informers.workspaceTypes(), informers.kcp.logicalCluster, otherWorkspaces),
		apibindingadmission.New(apibindingadmission.Config{ResolvePath: informers.resolveAnyPath, Authorizer: otherWorkspaces, ExportExists: informers.exportExists}),
		permissionclaims.New(informers.kcp.bindingsOf),
		percluster.Reinvoking(c.clusterAdmission[0], c.clusterAdmission[1]),
		c.clusterAdmission[2], c.clusterAdmission[3], admissionwebhook.NewServiceReferences(),
		objectcountlimit.New(c.objectCounts, informers.kcp.logicalCluster, lccontroller.OwnerBindingName),
	)
	if genericConfig.AdmissionControl != nil {
		plugins = append(plugins, genericConfig.AdmissionControl)
	}
	// Quota goes last, as in kube-apiserver: it charges what the others admit.
	quotas := rqadmission.New(informers.resourceQuotas)
	if err := quotas.SetLoopback(genericConfig.LoopbackClientConfig); err != nil {
		return err
	}
	genericConfig.AdmissionControl = append(plugins, quotas)
	return nil
}

// newWildcardInformers returns the informers of Kubernetes' kinds that
// read storage in-process: their objects share maps and slices with the
// watch caches (see wildcardinformer.InProcessInternal), readers copy before
// they change one.
func newWildcardInformers(storage *inProcessStorage) wildcardInformers {
	informer := func(gvr schema.GroupVersionResource, example runtime.Object) *wildcardinformer.Informer {
		return wildcardinformer.New(storage.internal(gvr, example, fields.Everything()), example, "wildcard-"+gvr.Resource)
	}
	rbac := rbacv1.SchemeGroupVersion
	core := corev1.SchemeGroupVersion
	return wildcardInformers{
		rbac: clusterrbac.Informers{
			Roles:               informer(rbac.WithResource("roles"), &rbacv1.Role{}),
			RoleBindings:        informer(rbac.WithResource("rolebindings"), &rbacv1.RoleBinding{}),
			ClusterRoles:        informer(rbac.WithResource("clusterroles"), &rbacv1.ClusterRole{}),
			ClusterRoleBindings: informer(rbac.WithResource("clusterrolebindings"), &rbacv1.ClusterRoleBinding{}),
		},
		namespaces:     informer(core.WithResource("namespaces"), &corev1.Namespace{}),
		resourceQuotas: informer(core.WithResource("resourcequotas"), &corev1.ResourceQuota{}),
		storage:        storage,
	}
}

// namespaceGetter finds a namespace of a logical cluster: in the wildcard
// informer first, live through the loopback client when the informer has
// not seen it yet (it was created a moment ago).
type namespaceGetter struct {
	informer *wildcardinformer.Informer
	client   rest.Interface
}

func (g namespaceGetter) get(ctx context.Context, cluster logicalcluster.Name, name string) (*corev1.Namespace, error) {
	if obj, exists, err := g.informer.Get(cluster, "", name); err == nil && exists {
		return obj.(*corev1.Namespace), nil
	}
	ns := &corev1.Namespace{}
	err := g.client.Get().AbsPath(cluster.RequestPath(), "api/v1/namespaces", name).Do(ctx).Into(ns)
	return ns, err
}
