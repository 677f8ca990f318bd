package frontproxy

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kubeauthenticator "k8s.io/kubernetes/pkg/kubeapiserver/authenticator"
)

// Config is the front-proxy's configuration: its listener, how it
// authenticates clients, its routes and how it reaches the shards.
type Config struct {
	// Serving is the listener with the serving certificate and client CA.
	Serving *genericapiserver.SecureServingInfo
	// Authenticator authenticates clients; it accepts nobody when no
	// method is configured.
	Authenticator authenticator.Request
	// Root reaches the root shard, whose Shard objects list the shards;
	// Shards holds the credentials the index watches every shard with.
	Root, Shards *rest.Config

	options         CompletedOptions
	routes          []*route
	serviceAccounts *serviceAccountTokens
}

type completedConfig struct {
	Config
}

// CompletedConfig is a Config with every default filled in; only it builds
// a Server.
type CompletedConfig struct {
	*completedConfig
}

// Complete fills in the defaults. Call it once.
func (c *Config) Complete() CompletedConfig {
	return CompletedConfig{&completedConfig{Config: *c}}
}

// NewConfig builds the configuration of a front-proxy process from
// completed options: it reads the mapping file, the kubeconfigs and the
// service account keys, and starts what the authenticators run until ctx
// ends.
func NewConfig(ctx context.Context, o CompletedOptions) (*Config, error) {
	routes, err := LoadMappings(o.MappingFile)
	if err != nil {
		return nil, err
	}
	c := &Config{options: o, routes: routes}
	if c.Root, err = clientcmd.BuildConfigFromFlags("", o.RootKubeconfig); err != nil {
		return nil, fmt.Errorf("--root-kubeconfig: %w", err)
	}
	if c.Shards, err = clientcmd.BuildConfigFromFlags("", o.ShardsKubeconfig); err != nil {
		return nil, fmt.Errorf("--shards-kubeconfig: %w", err)
	}
	if err := o.SecureServing.ApplyTo(&c.Serving); err != nil {
		return nil, err
	}
	authConfig, err := o.Authentication.ToAuthenticationConfig()
	if err != nil {
		return nil, err
	}
	// The TLS handshake asks for client certificates of both CAs: users'
	// and those of an authenticating proxy in front (--requestheader-*).
	c.Serving.ClientCA = clientCAs(authConfig)
	if c.Authenticator, _, _, _, err = authConfig.New(ctx); err != nil {
		return nil, fmt.Errorf("authentication: %w", err)
	}
	if c.Authenticator == nil {
		c.Authenticator = authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) { return nil, false, nil })
	}
	if c.serviceAccounts, err = newServiceAccountTokens(o.ServiceAccountKeyFiles); err != nil {
		return nil, err
	}
	return c, nil
}

// clientCAs are the CAs whose client certificates the TLS handshake
// accepts: the users' (--client-ca-file) and the request-header CA
// (--requestheader-client-ca-file); nil when there are none.
func clientCAs(c kubeauthenticator.Config) dynamiccertificates.CAContentProvider {
	var cas []dynamiccertificates.CAContentProvider
	if c.ClientCAContentProvider != nil {
		cas = append(cas, c.ClientCAContentProvider)
	}
	if c.RequestHeaderConfig != nil && c.RequestHeaderConfig.CAContentProvider != nil {
		cas = append(cas, c.RequestHeaderConfig.CAContentProvider)
	}
	switch len(cas) {
	case 0:
		return nil
	case 1:
		return cas[0]
	}
	return dynamiccertificates.NewUnionCAContentProvider(cas...)
}
