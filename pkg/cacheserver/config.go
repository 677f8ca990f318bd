package cacheserver

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	unionauth "k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/token/tokenfile"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/registry/generic"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/panics"
	"github.com/shardplane/shardplane/pkg/rootdir"
	kstorage "github.com/shardplane/shardplane/pkg/storage"
	"github.com/shardplane/shardplane/pkg/version"
)

// Config is the cache server's configuration: the generic server (serving,
// authentication, authorization, health) and the storage of the replicas.
type Config struct {
	Generic *genericapiserver.Config
	// Access names who may write and read.
	Access Access

	// restOptions store replicas as unstructured JSON.
	restOptions generic.RESTOptionsGetter
	// standalone are the options of a cache-server process; nil for a
	// cache server embedded in another process.
	standalone *CompletedOptions
}

type completedConfig struct {
	Generic     genericapiserver.CompletedConfig
	Access      Access
	restOptions generic.RESTOptionsGetter
	standalone  *CompletedOptions
}

// CompletedConfig is a Config with every default filled in; only it builds
// a Server.
type CompletedConfig struct {
	*completedConfig
}

// Complete fills in the defaults of the generic server. Call it once.
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{
		Generic:     c.Generic.Complete(nil),
		Access:      c.Access,
		restOptions: c.restOptions,
		standalone:  c.standalone,
	}}
}

// NewConfig builds the configuration of a cache-server process: its own
// listener, client-certificate, token and admin-token authentication, and
// the etcd of the options.
func NewConfig(ctx context.Context, o CompletedOptions) (*Config, error) {
	gc := genericapiserver.NewConfig(codecs)
	if err := o.SecureServing.ApplyTo(&gc.SecureServing, &gc.LoopbackClientConfig); err != nil {
		return nil, err
	}
	authn, err := o.Authentication.toAuthentication()
	if err != nil {
		return nil, err
	}
	if authn.clientCA != nil {
		if err := gc.Authentication.ApplyClientCert(authn.clientCA, gc.SecureServing); err != nil {
			return nil, fmt.Errorf("client CA: %w", err)
		}
	}
	authenticators := []authenticator.Request{adminAuthenticator(o.tokens)}
	if authn.authenticator != nil {
		authenticators = append(authenticators, authn.authenticator)
	}
	c, err := newConfig(gc, unionauth.New(authenticators...), o.Etcd, nil, o.Access)
	if err != nil {
		return nil, err
	}
	c.standalone = &o
	if o.SyntheticDelay > 0 {
		chain := gc.BuildHandlerChainFunc
		gc.BuildHandlerChainFunc = func(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
			return withSyntheticDelay(chain(apiHandler, c), o.SyntheticDelay)
		}
	}
	return c, nil
}

// withSyntheticDelay holds every request for delay before serving it, as
// kcp's cache server does with --synthetic-delay: a test sees how clients
// cope with a slow cache. A request whose client gives up is not served.
func withSyntheticDelay(handler http.Handler, delay time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		timer := time.NewTimer(delay)
		defer timer.Stop()
		select {
		case <-timer.C:
			handler.ServeHTTP(w, req)
		case <-req.Context().Done():
		}
	})
}

// Embedding is what a process that runs the cache server in-process (a
// shard) gives it.
type Embedding struct {
	// Authenticator authenticates the host's clients.
	Authenticator authenticator.Request
	// Loopback is the host's loopback client configuration.
	Loopback *rest.Config
	// ExternalAddress is the host's host:port, as discovery reports it.
	ExternalAddress string
	// Etcd stores the replicas; with the prefix DefaultEtcdPrefix it may be
	// the host's etcd.
	Etcd   *genericoptions.EtcdOptions
	Access Access
	// EtcdClient, if set, is the host's etcd client for all its storages
	// (its embedded etcd's in-process one); else each storage dials Etcd.
	EtcdClient *kstorage.EtcdClient
}

// NewEmbeddedConfig builds the configuration of a cache server that runs in
// another process: no listener of its own, the host's authenticator and
// loopback client. Mount Server.Handler below ServicePrefix, and call
// Server.GenericAPIServer.Destroy when the host stops serving.
func NewEmbeddedConfig(e Embedding) (*Config, error) {
	gc := genericapiserver.NewConfig(codecs)
	gc.LoopbackClientConfig = rest.CopyConfig(e.Loopback)
	gc.ExternalAddress = e.ExternalAddress
	return newConfig(gc, e.Authenticator, e.Etcd, e.EtcdClient, e.Access)
}

// newConfig makes a generic server configuration the cache server:
// authorization by access, the replicas' storage in etcd, and the handler
// chain that parses the shard and the cluster off every path.
func newConfig(gc *genericapiserver.Config, authn authenticator.Request, etcd *genericoptions.EtcdOptions, etcdClient *kstorage.EtcdClient, access Access) (*Config, error) {
	gc.EffectiveVersion = version.Project(compatibility.DefaultBuildEffectiveVersion())
	// Shards keep watches open on the cache server: end them as it shuts
	// down instead of the HTTP server waiting for them.
	gc.ShutdownWatchTerminationGracePeriod = 5 * time.Second
	gc.Authentication.Authenticator = authn
	gc.Authorization.Authorizer = access.Authorizer()
	genericapiserver.AuthorizeClientBearerToken(gc.LoopbackClientConfig, &gc.Authentication, &gc.Authorization)
	// Health and readiness checks of etcd.
	if err := etcd.ApplyTo(gc); err != nil {
		return nil, err
	}
	gc.BuildHandlerChainFunc = buildHandlerChain
	return &Config{
		Generic: gc,
		Access:  access,
		restOptions: restOptionsGetter{
			delegate:   unstructuredRESTOptions(*etcd, gc),
			watchCache: etcd.EnableWatchCache,
			etcd:       etcdClient,
		},
	}, nil
}

// buildHandlerChain is upstream's chain below the parsing of the shard and
// the cluster. Panics are recovered below the timeout filter, whose
// goroutine would turn them into new ones, and around everything.
func buildHandlerChain(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
	chain := genericapiserver.DefaultBuildHandlerChain(panics.WithRecovery(withWildcardVerbs(apiHandler, c.Serializer)), c)
	return panics.WithRecovery(withScope(chain, c.Serializer))
}

// adminAuthenticator accepts the admin token of the root directory as
// cache-admin in system:masters.
func adminAuthenticator(t rootdir.AdminTokens) authenticator.Request {
	tokens := tokenfile.New(map[string]*user.DefaultInfo{
		t.ShardAdmin: {Name: "cache-admin", Groups: []string{user.SystemPrivilegedGroup}},
	})
	return group.NewAuthenticatedGroupAdder(bearertoken.New(tokens))
}

// unstructuredRESTOptions stores replicas as unstructured JSON, as
// apiextensions-apiserver stores custom resources (without its CBOR
// option: replicas are never written in CBOR).
func unstructuredRESTOptions(etcd genericoptions.EtcdOptions, gc *genericapiserver.Config) generic.RESTOptionsGetter {
	etcd.StorageConfig.Codec = unstructured.UnstructuredJSONScheme
	etcd.StorageConfig.StorageObjectCountTracker = gc.StorageObjectCountTracker
	etcd.WatchCacheSizes = nil
	return etcd.CreateRESTOptionsGetter(&genericoptions.SimpleStorageFactory{StorageConfig: etcd.StorageConfig}, gc.ResourceTransformers)
}
