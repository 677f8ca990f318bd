package shard

import (
	"net/http"

	genericapiserver "k8s.io/apiserver/pkg/server"
)

// apiExtensions serves CustomResourceDefinitions per logical cluster.
// TODO(issue 3): replaced by the per-cluster CRD implementation.
type apiExtensions struct{}

func newAPIExtensions(*Config) (*apiExtensions, error) { return &apiExtensions{}, nil }

func (a *apiExtensions) delegate() genericapiserver.DelegationTarget {
	return genericapiserver.NewEmptyDelegate()
}

func (a *apiExtensions) install(*genericapiserver.GenericAPIServer) error { return nil }

func (a *apiExtensions) wrapHandler(h http.Handler) http.Handler { return h }
