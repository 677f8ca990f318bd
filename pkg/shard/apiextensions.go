package shard

import (
	"net/http"

	genericapiserver "k8s.io/apiserver/pkg/server"

	"github.com/kplane-dev/kplane/pkg/apiextensions"
)

// apiExtensions serves CustomResourceDefinitions per logical cluster.
type apiExtensions struct {
	server *apiextensions.Server
}

func newAPIExtensions(c *Config) (*apiExtensions, error) {
	s, err := apiextensions.New(apiextensions.Config{
		Generic: c.ControlPlane.Generic,
		Etcd:    c.Options.ControlPlane.Etcd,
	})
	if err != nil {
		return nil, err
	}
	return &apiExtensions{server: s}, nil
}

// delegate serves custom resources: requests no built-in API serves fall
// through to it.
func (a *apiExtensions) delegate() genericapiserver.DelegationTarget {
	return genericapiserver.NewEmptyDelegateWithCustomHandler(a.server.Handler())
}

// install adds the CustomResourceDefinition API and its controllers.
func (a *apiExtensions) install(gs *genericapiserver.GenericAPIServer) error {
	return a.server.Install(gs)
}

// wrapHandler adds each logical cluster's CRDs to its discovery and OpenAPI
// documents.
func (a *apiExtensions) wrapHandler(h http.Handler) http.Handler {
	return a.server.WrapHandler(h)
}
