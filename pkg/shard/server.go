package shard

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/registry/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/controller/clusterroleaggregation"
	controlplaneapiserver "k8s.io/kubernetes/pkg/controlplane/apiserver"
	admissionregistrationrest "k8s.io/kubernetes/pkg/registry/admissionregistration/rest"
	authenticationrest "k8s.io/kubernetes/pkg/registry/authentication/rest"
	authorizationrest "k8s.io/kubernetes/pkg/registry/authorization/rest"
	certificatesrest "k8s.io/kubernetes/pkg/registry/certificates/rest"
	coordinationrest "k8s.io/kubernetes/pkg/registry/coordination/rest"
	eventsrest "k8s.io/kubernetes/pkg/registry/events/rest"
	rbacrest "k8s.io/kubernetes/pkg/registry/rbac/rest"

	wsmountcontroller "github.com/shardplane/shardplane/pkg/controllers/workspacemount"
	"github.com/shardplane/shardplane/pkg/exepages"
	"github.com/shardplane/shardplane/pkg/features"
	"github.com/shardplane/shardplane/pkg/listencoder"
	"github.com/shardplane/shardplane/pkg/loopback"
	"github.com/shardplane/shardplane/pkg/registry"
	apisregistry "github.com/shardplane/shardplane/pkg/registry/apis"
	"github.com/shardplane/shardplane/pkg/registry/content"
	"github.com/shardplane/shardplane/pkg/rootdir"
	"github.com/shardplane/shardplane/pkg/servercmd"
	kstorage "github.com/shardplane/shardplane/pkg/storage"
	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Run starts a shard with the given options and serves until ctx is done.
func Run(ctx context.Context, o *Options) error {
	if err := validateOwn(o); err != nil {
		return err
	}
	o.kcpStart.logWarnings(klog.Background())
	if o.kcpStart.BindFreePort {
		port, err := bindFreePort(o.ControlPlane.SecureServing.BindAddress)
		if err != nil {
			return err
		}
		// Chosen: from here on the options read as --secure-port=<port>.
		o.ControlPlane.SecureServing.BindPort, o.kcpStart.BindFreePort = port, false
	}
	if err := o.applyProcessDefaults(); err != nil {
		return err
	}
	if err := o.PrepareRootDirectory(); err != nil {
		return err
	}
	if err := kstorage.DisableWatchListClient(); err != nil {
		return err
	}
	var embedded *embeddedetcd.Server
	if o.EmbeddedEtcd() {
		var stop func()
		var err error
		etcdOptions, err := o.embeddedEtcdOptions()
		if err != nil {
			return err
		}
		ctx, embedded, stop, err = embeddedetcd.StartForServer(ctx, etcdOptions)
		if err != nil {
			return err
		}
		defer stop()
	}
	completed, err := o.Complete(ctx, embedded)
	if err != nil {
		return err
	}
	defer completed.Close()
	if errs := completed.Validate(); len(errs) > 0 {
		return utilerrors.NewAggregate(errs)
	}
	config, err := NewConfig(completed)
	if err != nil {
		return err
	}
	server, err := config.Complete().New()
	if err != nil {
		return err
	}
	return servercmd.StopCause(ctx, server.Run(ctx))
}

// Server is a shard: the generic API server with every API the shard serves
// installed, and what it runs besides (the content deleter, the clients of
// other shards, the controllers started by its post-start hooks).
type Server struct {
	CompletedConfig
	GenericAPIServer *genericapiserver.GenericAPIServer

	// content deletes the content of logical clusters in-process.
	content *content.Deleter
	// shardClients are the clients of shards' base URLs, by URL.
	shardClients sync.Map
	// inProcess calls the installed built-in API groups' storages as the
	// shard itself.
	inProcess *loopback.Client
	// workspaceMounts is the controller of mounted workspaces, nil without
	// the WorkspaceMounts gate; the garbage collector's watches feed it.
	workspaceMounts *wsmountcontroller.Controller
}

// Run serves until ctx is done: the secure port and, in memory, the
// shard's own clients, with the same handler. The in-memory server outlives
// the secure port's shutdown, during which the shard's clients still call.
func (s *Server) Run(ctx context.Context) error {
	prepared := s.GenericAPIServer.PrepareRun()
	inMemory := make(chan error, 1)
	go func() { inMemory <- s.loopback.Serve(s.GenericAPIServer.Handler) }()
	if s.Options.ReleaseStartupPages {
		kstorage.OnMemoryReturned(func() { exepages.ReleaseAgain(context.Background()) })
		go exepages.ReleaseWhenReady(ctx, prepared.Handler.NonGoRestfulMux)
	}
	err := prepared.RunWithContext(ctx)
	stop, cancel := context.WithTimeout(context.Background(), s.GenericAPIServer.ShutdownTimeout)
	defer cancel()
	return errors.Join(err, s.loopback.Shutdown(stop), <-inMemory)
}

// New creates the shard with every API installed and its informers,
// controllers and bootstrap registered as post-start hooks.
func (c CompletedConfig) New() (*Server, error) {
	s := &Server{CompletedConfig: c}
	completed := c.ControlPlane
	// The OpenAPI documents are built on their first request (openapi.go),
	// not by PrepareRun; the v3 settings still give the models of managed
	// fields.
	completed.Generic.SkipOpenAPIInstallation = true
	server, err := completed.New("shardplane-shard", c.apiExtensions.delegate())
	if err != nil {
		return nil, err
	}
	groups, err := installAPIs(server, completed, registry.MigrationRESTStorageProvider{EtcdKV: c.etcdKV, EtcdPrefix: c.Options.ControlPlane.Etcd.StorageConfig.Prefix})
	if err != nil {
		return nil, err
	}
	s.inProcess = loopback.NewClient(legacyscheme.Scheme, groups)
	c.Informers.storage.install(s.inProcess.Storage)
	gs := server.GenericAPIServer
	if err := c.apiExtensions.install(gs, installOpenAPI(gs, completed.Generic)); err != nil {
		return nil, err
	}
	if s.content, err = content.New(append(groups, c.apiExtensions.server.APIGroupInfo())); err != nil {
		return nil, err
	}
	for _, install := range []func(*genericapiserver.GenericAPIServer) error{
		s.installWildcardInformers,
		s.installWorkspaceAuthentication,
		s.installClusterRoleAggregation,
		s.installFairness,
		s.installObjectCounts,
		s.addControllers,
		s.installAdminKubeconfig,
	} {
		if err := install(gs); err != nil {
			return nil, err
		}
	}
	s.GenericAPIServer = gs
	return s, nil
}

// installAPIs installs the built-in API groups the shard serves and kcp's,
// and returns them (the in-process client and the content deleter work on
// their storages).
func installAPIs(server *controlplaneapiserver.Server, completed controlplaneapiserver.CompletedConfig, migration registry.MigrationRESTStorageProvider) ([]*genericapiserver.APIGroupInfo, error) {
	generic := completed.Generic
	// Resolves a policy's paramKind to the resource whose read permission its
	// author needs. Resolving has no request context, so it sees the
	// built-in resources (the same in every logical cluster); a paramKind
	// that is a custom resource then needs read permission on all resources
	// of its group version, never less.
	paramKinds, err := discovery.NewDiscoveryClientForConfig(generic.LoopbackClientConfig)
	if err != nil {
		return nil, err
	}
	providers := []controlplaneapiserver.RESTStorageProvider{
		completed.NewCoreGenericConfig(),
		clusterTokenReviews{
			RESTStorageProvider: authenticationrest.RESTStorageProvider{Authenticator: generic.Authentication.Authenticator, APIAudiences: generic.Authentication.APIAudiences},
			authenticator:       generic.Authentication.Authenticator, audiences: generic.Authentication.APIAudiences,
		},
		authorizationrest.RESTStorageProvider{Authorizer: generic.Authorization.Authorizer, RuleResolver: generic.RuleResolver},
		certificatesrest.RESTStorageProvider{Authorizer: generic.Authorization.Authorizer, Generic: true},
		coordinationrest.RESTStorageProvider{},
		rbacrest.RESTStorageProvider{Authorizer: generic.Authorization.Authorizer},
		admissionregistrationrest.RESTStorageProvider{Authorizer: generic.Authorization.Authorizer, DiscoveryClient: paramKinds},
		eventsrest.RESTStorageProvider{TTL: completed.EventTTL},
		flowcontrolStorage{},
		registry.CoreRESTStorageProvider{},
		registry.TenancyRESTStorageProvider{},
		registry.TopologyRESTStorageProvider{},
		migration,
		apisregistry.RESTStorageProvider{},
	}
	if features.Enabled(features.CacheAPIs) {
		providers = append(providers, registry.CacheRESTStorageProvider{})
	}
	var groups []*genericapiserver.APIGroupInfo
	if err := server.InstallAPIs(capturing(providers, &groups)...); err != nil {
		return nil, err
	}
	return groups, nil
}

// installOpenAPI serves the OpenAPI documents, built on their first
// request, and returns the static v2 document's getter (nil without one).
func installOpenAPI(gs *genericapiserver.GenericAPIServer, generic genericapiserver.CompletedConfig) func() (*spec.Swagger, error) {
	var staticV2 func() (*spec.Swagger, error)
	if config := generic.OpenAPIConfig; config != nil {
		v2 := newLazyOpenAPIV2(gs.Handler.GoRestfulContainer, config)
		v2.install(gs.Handler.NonGoRestfulMux)
		staticV2 = v2.get
	}
	if config := generic.OpenAPIV3Config; config != nil {
		installLazyOpenAPIV3(gs.Handler.GoRestfulContainer, config, gs.Handler.NonGoRestfulMux)
	}
	return staticV2
}

// installWildcardInformers runs the wildcard informers and the per-cluster
// admission plugins' informers; the shard is not ready before they listed.
func (s *Server) installWildcardInformers(gs *genericapiserver.GenericAPIServer) error {
	informers := s.Informers.all()
	if err := gs.AddReadyzChecks(wildcardinformer.SyncedCheck("shardplane-wildcard-informers-synced", informers...)); err != nil {
		return err
	}
	return gs.AddPostStartHook("shardplane-start-wildcard-informers", func(hc genericapiserver.PostStartHookContext) error {
		for _, inf := range informers {
			go inf.Run(hc)
		}
		for _, p := range s.clusterAdmission {
			go p.Run(hc)
		}
		return nil
	})
}

// installClusterRoleAggregation aggregates the rules of the bootstrap roles
// admin, edit and view from other roles: without kube-controller-manager
// the shard does it.
func (s *Server) installClusterRoleAggregation(gs *genericapiserver.GenericAPIServer) error {
	versioned := s.ControlPlane.Extra.VersionedInformers
	client, err := kubernetes.NewForConfig(s.ControlPlane.Generic.LoopbackClientConfig)
	if err != nil {
		return err
	}
	aggregation := clusterroleaggregation.NewClusterRoleAggregation(versioned.Rbac().V1().ClusterRoles(), client.RbacV1())
	return gs.AddPostStartHook("shardplane-clusterrole-aggregation", func(hc genericapiserver.PostStartHookContext) error {
		versioned.Start(hc.Done())
		go aggregation.Run(hc, 1)
		return nil
	})
}

// installAdminKubeconfig writes admin.kubeconfig once the server listens,
// with the admin battery.
func (s *Server) installAdminKubeconfig(gs *genericapiserver.GenericAPIServer) error {
	batteries, err := s.Options.kcpStart.batteries()
	if err != nil || !batteries.Has(BatteryAdmin) {
		return err
	}
	kubeconfig := s.Options.AdminKubeconfigPath()
	return gs.AddPostStartHook("shardplane-admin-kubeconfig", func(hc genericapiserver.PostStartHookContext) error {
		return s.writeAdminKubeconfig(kubeconfig)
	})
}

// servingCA returns the serving certificate bundle, which clients of this
// shard trust.
func (c *Server) servingCA() ([]byte, error) { return c.Options.servingCA() }

// servingCA reads the certificate the shard serves with.
func (o CompletedOptions) servingCA() ([]byte, error) {
	serving := o.ControlPlane.SecureServing
	certFile := serving.ServerCert.CertKey.CertFile
	if certFile == "" {
		certFile = filepath.Join(serving.ServerCert.CertDirectory, serving.ServerCert.PairName+".crt")
	}
	ca, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("read serving certificate: %w", err)
	}
	return ca, nil
}

// rootCA returns the CA bundle every namespace's kube-root-ca.crt and each
// service account token secret publish: --root-ca-file, or else the CA
// certificates of the serving certificate file. That file holds the
// serving certificate first, then its chain; a client needs only the CAs
// to verify the server, and the bundle is in two ConfigMaps of every
// workspace.
func (o CompletedOptions) rootCA() ([]byte, error) {
	return rootCA(o.kcpStart.RootCAFile, o.servingCA)
}

// rootCA reads rootCAFile if set, else takes the CAs of serving's bundle.
func rootCA(rootCAFile string, serving func() ([]byte, error)) ([]byte, error) {
	if rootCAFile != "" {
		bundle, err := os.ReadFile(rootCAFile)
		if err != nil {
			return nil, fmt.Errorf("read --root-ca-file: %w", err)
		}
		if _, err := certutil.ParseCertsPEM(bundle); err != nil {
			return nil, fmt.Errorf("--root-ca-file %s: %w", rootCAFile, err)
		}
		return bundle, nil
	}
	bundle, err := serving()
	if err != nil {
		return nil, err
	}
	return caCertificates(bundle)
}

// caCertificates returns the certificates of bundle that are CAs, PEM
// encoded, or bundle itself when none is (a serving certificate given
// without its chain: clients then trust it directly).
func caCertificates(bundle []byte) ([]byte, error) {
	certs, err := certutil.ParseCertsPEM(bundle)
	if err != nil {
		return nil, fmt.Errorf("parse serving certificate: %w", err)
	}
	var cas []byte
	for _, c := range certs {
		if c.IsCA {
			cas = append(cas, pem.EncodeToMemory(&pem.Block{Type: certutil.CertificateBlockType, Bytes: c.Raw})...)
		}
	}
	if cas == nil {
		return bundle, nil
	}
	return cas, nil
}

// writeAdminKubeconfig writes admin.kubeconfig once the server listens.
func (c *Server) writeAdminKubeconfig(path string) error {
	ca, err := c.servingCA()
	if err != nil {
		return err
	}
	if err := rootdir.WriteAdminKubeconfig(path, c.Options.BaseURL, ca, c.Options.tokens); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	klog.Background().Info("Wrote admin kubeconfig", "path", path)
	return nil
}

// capturing wraps storage providers so that the API groups they build are
// also recorded in groups (the content deleter works on their storages),
// and serve large lists with listencoder.
func capturing(providers []controlplaneapiserver.RESTStorageProvider, groups *[]*genericapiserver.APIGroupInfo) []controlplaneapiserver.RESTStorageProvider {
	out := make([]controlplaneapiserver.RESTStorageProvider, 0, len(providers))
	for _, p := range providers {
		c := capturingProvider{RESTStorageProvider: p, groups: groups}
		if hook, ok := p.(genericapiserver.PostStartHookProvider); ok {
			out = append(out, capturingHookProvider{c, hook})
			continue
		}
		out = append(out, c)
	}
	return out
}

type capturingProvider struct {
	controlplaneapiserver.RESTStorageProvider
	groups *[]*genericapiserver.APIGroupInfo
}

func (p capturingProvider) NewRESTStorage(rc serverstorage.APIResourceConfigSource, getter generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	info, err := p.RESTStorageProvider.NewRESTStorage(rc, getter)
	if err == nil {
		info.NegotiatedSerializer = listencoder.WithParallelLists(info.NegotiatedSerializer)
		*p.groups = append(*p.groups, &info)
	}
	return info, err
}

// capturingHookProvider keeps a provider's post-start hook (RBAC's
// bootstrap policy, for one) visible to InstallAPIs.
type capturingHookProvider struct {
	capturingProvider
	hook genericapiserver.PostStartHookProvider
}

func (p capturingHookProvider) PostStartHook() (string, genericapiserver.PostStartHookFunc, error) {
	return p.hook.PostStartHook()
}

// etcdKV is the shard's etcd for what reads or writes keys directly: the
// copy of a moving logical cluster.
func (c CompletedConfig) etcdKV() clientv3.KV {
	if c.Options.etcdClient == nil {
		return nil
	}
	return c.Options.etcdClient.KV()
}
