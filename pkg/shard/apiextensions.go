package shard

import (
	"fmt"
	"net/http"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/shardplane/shardplane/pkg/apiextensions"
	"github.com/shardplane/shardplane/pkg/boundapis"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// apiExtensions serves CustomResourceDefinitions per logical cluster.
type apiExtensions struct {
	server *apiextensions.Server
	// crds is the shard's one wildcard CRD informer: the CRD server runs it
	// and the garbage collector and quota controller share it.
	crds *wildcardinformer.Informer
	// bound tells the CRD server what APIBindings serve.
	bound *boundapis.Index
}

func newAPIExtensions(c *Config) (*apiExtensions, error) {
	client, err := apiextensionsclient.NewForConfig(kcpclient.ClusterConfig(c.ControlPlane.Generic.LoopbackClientConfig, logicalcluster.Wildcard))
	if err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition informer client: %w", err)
	}
	crds := apiextensions.NewInformer(client.ApiextensionsV1().RESTClient())
	bound, err := boundapis.New(c.Informers.kcp.apiBindings, c.Informers.kcp.apiResourceSchemas, c.Informers.global.APIResourceSchemas)
	if err != nil {
		return nil, err
	}
	s, err := apiextensions.New(apiextensions.Config{
		Generic: c.ControlPlane.Generic,
		Etcd:    c.Options.ControlPlane.Etcd,
		CRDs:    crds,
		Bound:   bound,
		Virtual: virtualResources(c.Informers.kcp.apiBindings, c.Informers.kcp.apiExports, c.Informers.global.APIExports, c.views),
		// Custom resources share the storages' client.
		EtcdClient: c.Options.etcdClient,
	})
	if err != nil {
		return nil, err
	}
	return &apiExtensions{server: s, crds: crds, bound: bound}, nil
}

// delegate serves custom resources: requests no built-in API serves fall
// through to it.
func (a *apiExtensions) delegate() genericapiserver.DelegationTarget {
	return genericapiserver.NewEmptyDelegateWithCustomHandler(a.server.Handler())
}

// install adds the CustomResourceDefinition API and its controllers;
// staticV2 is gs's OpenAPI v2 document.
func (a *apiExtensions) install(gs *genericapiserver.GenericAPIServer, staticV2 func() (*spec.Swagger, error)) error {
	return a.server.Install(gs, staticV2)
}

// wrapHandler adds each logical cluster's CRDs to its discovery and OpenAPI
// documents.
func (a *apiExtensions) wrapHandler(h http.Handler) http.Handler {
	return a.server.WrapHandler(h)
}
