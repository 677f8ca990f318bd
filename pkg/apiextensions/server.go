package apiextensions

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsoptions "k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/notfoundhandler"
	"k8s.io/apiserver/pkg/util/webhook"
	clientrest "k8s.io/client-go/rest"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	kstorage "github.com/shardplane/shardplane/pkg/storage"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Config configures the per-cluster CRD server.
type Config struct {
	// Generic is the shard's server configuration: loopback client,
	// authorizer, admission, storage and timeouts.
	Generic *genericapiserver.Config
	// Etcd are the shard's etcd options; custom resources are stored with
	// them as unstructured JSON.
	Etcd *genericoptions.EtcdOptions
	// CRDs is the wildcard CRD informer (NewInformer) the process shares.
	// The server indexes it, registers its handlers and runs it after the
	// generic server starts; others register theirs alongside.
	CRDs *wildcardinformer.Informer
	// Bound tells which resources APIBindings serve; nil serves none.
	Bound BoundAPIs
	// Virtual serves the bound resources that are virtual; nil: they are
	// listed in discovery but answer 404.
	Virtual VirtualHandler
	// EtcdClient, if set and talking to Etcd's servers, is the etcd client
	// of all the shard's storages; else custom resources share a client
	// dialed to Etcd's servers, which the server closes when it stops.
	EtcdClient *kstorage.EtcdClient
}

// Server serves CustomResourceDefinitions and custom resources per logical
// cluster.
type Server struct {
	group      *genericapiserver.APIGroupInfo
	generic    *genericapiserver.Config
	crds       *crdIndex
	handler    *crHandler
	controller *crdController
	openAPI    *openAPIMerger
	etcd       *kstorage.EtcdClient
	// ownsEtcd tells that the server dialed etcd itself and closes it.
	ownsEtcd bool
	// client talks to this server (loopback) for CRD status updates.
	client clientrest.Interface
	// native are the APIs the shard serves itself, which no CRD may take.
	native nativeAPIsHolder
	// staticModels are the OpenAPI models installed with the CRD API.
	staticModels atomic.Pointer[map[string]*spec.Schema]
	// running are the informer and controller goroutines the post-start
	// hook starts; shutdown joins them before the storage stops.
	running sync.WaitGroup
}

// New builds the server. Install it into the generic server with Install
// and serve custom resources by delegating to Handler.
func New(c Config) (*Server, error) {
	loopback := c.Generic.LoopbackClientConfig
	if loopback == nil {
		return nil, errors.New("apiextensions: loopback client config is not set")
	}
	if c.CRDs == nil {
		return nil, errors.New("apiextensions: CRD informer is not set")
	}
	loopbackClient, err := apiextensionsclient.NewForConfig(loopback)
	if err != nil {
		return nil, fmt.Errorf("apiextensions loopback client: %w", err)
	}
	crds, err := newCRDIndex(c.CRDs)
	if err != nil {
		return nil, err
	}
	crds.bound = c.Bound
	converters, err := conversion.NewCRConverterFactory(webhook.NewDefaultServiceResolver(), nil)
	if err != nil {
		return nil, err
	}

	etcd, ownsEtcd := c.EtcdClient, false
	if !etcd.Serves(c.Etcd.StorageConfig.Transport) {
		if etcd, err = kstorage.DialEtcdClient(c.Etcd.StorageConfig.Transport); err != nil {
			return nil, fmt.Errorf("custom resource storage: %w", err)
		}
		ownsEtcd = true
	}
	s := &Server{generic: c.Generic, crds: crds, etcd: etcd, ownsEtcd: ownsEtcd, client: loopbackClient.ApiextensionsV1().RESTClient()}
	crds.native = s.native.get
	unstructuredStorage := apiextensionsoptions.NewCRDRESTOptionsGetter(*c.Etcd, c.Generic.ResourceTransformers, c.Generic.StorageObjectCountTracker)
	watchCache := c.Etcd.EnableWatchCache
	s.handler = newCRHandler(crds, &servingInfoBuilder{
		restOptions: func(target servingTarget) generic.RESTOptionsGetter {
			// Across clusters, custom resources are read straight from
			// etcd: a cache of every cluster's objects is what
			// per-cluster storage avoids. Bound resources follow one
			// schema everywhere and share one cache.
			return crRESTOptionsGetter{delegate: unstructuredStorage, target: target, watchCache: watchCache && !target.metadataOnly(), etcd: etcd}
		},
		converterFactory:    converters,
		authorizer:          c.Generic.Authorization.Authorizer,
		maxRequestBodyBytes: c.Generic.MaxRequestBodyBytes,
		staticOpenAPISpec: func() map[string]*spec.Schema {
			if m := s.staticModels.Load(); m != nil {
				return *m
			}
			return nil
		},
	})
	s.handler.bound = c.Bound
	s.handler.virtual = c.Virtual
	s.handler.notFound = notfoundhandler.New(c.Generic.Serializer, genericapifilters.NoMuxAndDiscoveryIncompleteKey)
	s.handler.admission = func() admission.Interface { return c.Generic.AdmissionControl }
	s.handler.minRequestTimeout = time.Duration(c.Generic.MinRequestTimeout) * time.Second
	s.handler.requestTimeout = c.Generic.RequestTimeout
	s.controller = newCRDController(crds)
	s.controller.updateStatus = s.updateStatus
	s.controller.instances = func(cluster logicalcluster.Name, crd *apiextensionsv1.CustomResourceDefinition) (instanceStorage, error) {
		si, err := s.handler.servingInfoFor(cluster, crd.UID, crd.Name)
		if err != nil {
			return nil, err
		}
		return si.storages[si.storageVersion].CustomResource, nil
	}
	s.openAPI = newOpenAPIMerger(crds)
	s.openAPI.hidden = s.hiddenIn
	crds.informer.AddHandler(s.handler)
	crds.informer.AddHandler(s.controller)
	crds.informer.AddHandler(s.openAPI)
	return s, nil
}

// APIGroupInfo is the installed CustomResourceDefinition API group, nil
// before Install.
func (s *Server) APIGroupInfo() *genericapiserver.APIGroupInfo { return s.group }

// Handler serves custom resources and the discovery of CRD groups; use it
// as the delegate of the built-in API handlers.
func (s *Server) Handler() http.Handler { return s.handler }

// Install adds the CustomResourceDefinition API to gs and starts the
// informer and controller after gs starts. staticV2 returns gs's OpenAPI v2
// document, which each cluster's CRDs are merged into (nil: gs has none).
func (s *Server) Install(gs *genericapiserver.GenericAPIServer, staticV2 func() (*spec.Swagger, error)) error {
	group := genericapiserver.NewDefaultAPIGroupInfo(apiextensionsv1.GroupName, legacyscheme.Scheme, metav1.ParameterCodec, legacyscheme.Codecs)
	crdStorage, err := customresourcedefinition.NewREST(legacyscheme.Scheme, s.generic.RESTOptionsGetter)
	if err != nil {
		return fmt.Errorf("customresourcedefinitions storage: %w", err)
	}
	crdStorage.CreateStrategy = crdStrategy{RESTCreateStrategy: crdStorage.CreateStrategy, native: s.native.get, bound: s.handler.bound}
	crdStorage.UpdateStrategy = crdUpdateStrategy{RESTUpdateStrategy: crdStorage.UpdateStrategy, native: s.native.get, bound: s.handler.bound}
	group.VersionedResourcesStorageMap[apiextensionsv1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"customresourcedefinitions":        crdStorage,
		"customresourcedefinitions/status": customresourcedefinition.NewStatusREST(legacyscheme.Scheme, crdStorage),
	}
	if err := gs.InstallAPIGroup(&group); err != nil {
		return err
	}
	s.group = &group
	// Every built-in API is installed by now: what they serve is reserved.
	s.native.p.Store(nativeAPIsOf(gs.Handler.GoRestfulContainer.RegisteredWebServices()))
	models := group.StaticOpenAPISpec
	s.staticModels.Store(&models)
	s.openAPI.staticV2 = staticV2
	// Destroy runs once the server has stopped serving and its post-start
	// contexts are done.
	gs.RegisterDestroyFunc(s.shutdown)

	gs.AddPostStartHookOrDie("shardplane-apiextensions-controllers", func(hc genericapiserver.PostStartHookContext) error {
		s.running.Add(3)
		go func() {
			defer s.running.Done()
			wait.UntilWithContext(hc, func(context.Context) {
				s.handler.releaseUnusedBound()
				s.handler.releaseIdle()
			}, 30*time.Second)
		}()
		go func() {
			defer s.running.Done()
			s.crds.informer.Run(hc)
		}()
		go func() {
			defer s.running.Done()
			s.controller.run(hc, 5)
		}()
		return nil
	})
	return gs.AddReadyzChecks(healthz.NamedCheck("shardplane-crd-informer-synced", func(*http.Request) error {
		if !s.crds.informer.HasSynced() {
			return errors.New("CustomResourceDefinition informer not synced yet")
		}
		return nil
	}))
}

// shutdown joins the goroutines the server owns — the informer, the CRD
// controller, builds and tear-downs of serving state — and then stops the
// custom resource storage and its etcd client. Call it once the server no
// longer serves and the context of its post-start hooks is done.
func (s *Server) shutdown() {
	s.running.Wait()
	s.handler.shutdown()
	if s.ownsEtcd {
		_ = s.etcd.Close()
	}
}

// updateStatus writes the status (and finalizers) of a CRD in its cluster.
func (s *Server) updateStatus(ctx context.Context, cluster logicalcluster.Name, crd *apiextensionsv1.CustomResourceDefinition) (*apiextensionsv1.CustomResourceDefinition, error) {
	out := &apiextensionsv1.CustomResourceDefinition{}
	err := s.client.Put().
		AbsPath(cluster.RequestPath(), "apis", apiextensionsv1.GroupName, "v1", "customresourcedefinitions", crd.Name, "status").
		Body(crd).Do(ctx).Into(out)
	return out, err
}

// ServingCount returns how many CRDs currently have serving state.
func (s *Server) ServingCount() int { return s.handler.servingCount() }
