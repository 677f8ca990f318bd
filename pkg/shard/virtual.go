package shard

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/pflag"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/authorization/clusterrbac"
	"github.com/shardplane/shardplane/pkg/authorization/othershards"
	"github.com/shardplane/shardplane/pkg/authorization/workspacecontent"
	"github.com/shardplane/shardplane/pkg/controllers/apiexportendpointslice"
	"github.com/shardplane/shardplane/pkg/features"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/virtual/framework"
	"github.com/shardplane/shardplane/pkg/virtual/framework/builtin"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// virtualWorkspacesOptions are the flags of the shard's virtual workspaces:
// served in-process, or by a virtual-workspaces server the shard forwards
// /services/ to.
type virtualWorkspacesOptions struct {
	// Run serves the virtual workspaces below /services/ on the shard's
	// own port (kcp's default); off when a virtual-workspaces process
	// serves them.
	Run bool
	// URL is kcp's --shard-virtual-workspace-url: where clients reach this
	// shard's views, published in its Shard's spec.virtualWorkspaceURL and
	// below it in every status that names a view (default: the base URL).
	URL string
	// ForwardURL is where the shard sends /services/ when it does not serve
	// the views (default: URL). Set apart from URL when URL goes through a
	// front-proxy, which does not pass on the shard's privileged identity.
	ForwardURL string
	// CAFile, ClientCertFile and ClientKeyFile are kcp's
	// --shard-virtual-workspace-ca-file and --shard-client-cert-file/-key-file:
	// the forwarded requests' trust and credential, which the server must
	// let impersonate.
	CAFile, ClientCertFile, ClientKeyFile string
}

func (v *virtualWorkspacesOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&v.Run, "run-virtual-workspaces", true, "Serve the virtual workspaces (/services/apiexport/..., /services/initializingworkspaces/..., /services/terminatingworkspaces/...) in-process on the shard's port. Turn off when a virtual-workspaces process serves this shard; the shard then forwards /services/ to it.")
	fs.StringVar(&v.URL, "shard-virtual-workspace-url", v.URL, "URL of this shard's virtual workspaces, published in its Shard's spec.virtualWorkspaceURL and in the view URLs of APIExportEndpointSlices and WorkspaceTypes (default: --shard-base-url).")
	fs.StringVar(&v.ForwardURL, "shard-virtual-workspace-forward-url", v.ForwardURL, "With --run-virtual-workspaces=false: the virtual-workspaces server the shard forwards /services/ to, impersonating the caller (default: --shard-virtual-workspace-url). Set it when that URL is a front-proxy's.")
	fs.StringVar(&v.CAFile, "shard-virtual-workspace-ca-file", v.CAFile, "PEM CA bundle to verify the virtual-workspaces server the shard forwards to (default: the system's roots).")
	fs.StringVar(&v.ClientCertFile, "shard-client-cert-file", v.ClientCertFile, "Client certificate the shard forwards /services/ with; the virtual-workspaces server must let it impersonate (system:masters).")
	fs.StringVar(&v.ClientKeyFile, "shard-client-key-file", v.ClientKeyFile, "Key of --shard-client-cert-file.")
}

// complete defaults the URLs to the shard's base URL.
func (v *virtualWorkspacesOptions) complete(baseURL string) {
	if v.URL = strings.TrimSuffix(v.URL, "/"); v.URL == "" {
		v.URL = baseURL
	}
	if v.ForwardURL = strings.TrimSuffix(v.ForwardURL, "/"); v.ForwardURL == "" {
		v.ForwardURL = v.URL
	}
}

// validate checks that a shard without in-process views can forward.
func (v *virtualWorkspacesOptions) validate(baseURL string) []error {
	if v.Run {
		return nil
	}
	var errs []error
	if v.ForwardURL == baseURL {
		errs = append(errs, fmt.Errorf("--run-virtual-workspaces=false needs --shard-virtual-workspace-url (or --shard-virtual-workspace-forward-url) naming the virtual-workspaces server, not the shard itself"))
	} else if u, err := url.Parse(v.ForwardURL); err != nil || u.Scheme != "https" || u.Host == "" {
		errs = append(errs, fmt.Errorf("virtual-workspaces server URL %q: want https://host[:port][/path]", v.ForwardURL))
	}
	if v.ClientCertFile == "" || v.ClientKeyFile == "" {
		errs = append(errs, fmt.Errorf("--run-virtual-workspaces=false needs --shard-client-cert-file and --shard-client-key-file to forward /services/ to the virtual-workspaces server"))
	}
	return errs
}

// newVirtualWorkspaces builds what serves /services/ on the shard: the
// in-process views, with the shard's authenticator, its authorizer (with
// the replicated RBAC of workspaces on other shards) and informers, and its
// loopback client as the views' privileged credential; or, with the views
// turned off, the forwarder to the virtual-workspaces server. asContextUser
// is the same without authentication, for the shard's own requests.
func newVirtualWorkspaces(o CompletedOptions, gc *genericapiserver.Config, informers wildcardInformers) (served, asContextUser http.Handler, err error) {
	if !o.virtual.Run {
		forward, err := o.virtual.forwarder()
		if err != nil {
			return nil, nil, err
		}
		return framework.WithAuthentication(forward, gc.Authentication.Authenticator), forward, nil
	}
	// The copies of ClusterCachedResources are viewed with kcp's
	// CacheAPIs gate only.
	var cache *rest.Config
	if features.Enabled(features.CacheAPIs) {
		if cache, err = cacheClientConfig(o, gc.LoopbackClientConfig); err != nil {
			return nil, nil, err
		}
	}
	// The views check permissions in other workspaces as kcp's deep reviews.
	authz := workspacecontent.Deep(othershards.New(gc.Authorization.Authorizer, clusterrbac.New(informers.rbac), informers.hosted))
	mounted, err := builtin.New(builtin.Config{
		Shard:       rest.CopyConfig(gc.LoopbackClientConfig),
		Authorizer:  authz,
		APIBindings: informers.kcp.apiBindings,
		// Bound schemas come from this shard's exports and others'.
		APIResourceSchemas: []*wildcardinformer.Informer{informers.kcp.apiResourceSchemas, informers.global.APIResourceSchemas},
		ResolvePath:        informers.resolveAnyPath,
		Cache:              cache,
	})
	if err != nil {
		return nil, nil, err
	}
	return framework.WithAuthentication(mounted.Views, gc.Authentication.Authenticator), mounted.Views, nil
}

// forwarder sends /services/ on to the virtual-workspaces server as the
// caller, as kcp's shards do with an external one.
func (v *virtualWorkspacesOptions) forwarder() (http.Handler, error) {
	target, err := url.Parse(v.ForwardURL)
	if err != nil {
		return nil, err
	}
	rt, err := rest.TransportFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{CAFile: v.CAFile, CertFile: v.ClientCertFile, KeyFile: v.ClientKeyFile}})
	if err != nil {
		return nil, fmt.Errorf("transport to the virtual-workspaces server %s: %w", v.ForwardURL, err)
	}
	f := &framework.Forwarder{Target: target, Transport: rt, Unreachable: "the virtual-workspaces server"}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		u, _ := apirequest.UserFrom(req.Context())
		f.Forward(w, req, u, req.URL.Path)
	}), nil
}

// withVirtualWorkspaces serves /services/<view>/... and
// /shards/<shard>/services/<view>/... by views, in-process or forwarded
// (the cache server's /services/cache/ excepted), everything else by
// handler.
func withVirtualWorkspaces(handler, views http.Handler) http.Handler {
	if views == nil {
		return handler
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if path, ok := viewurl.TrimShardPrefix(r.URL.Path); ok && viewurl.ViewName(path) != "cache" {
			views.ServeHTTP(w, r)
			return
		}
		handler.ServeHTTP(w, r)
	})
}

// newEndpointSliceController returns the controller of the
// APIExportEndpointSlices' endpoints, reading the Shards of root (its own
// on the root shard, the cache server's replicas elsewhere).
func (c *Server) newEndpointSliceController(loopback *rest.Config, client *kcpclient.Client) (*apiexportendpointslice.Controller, error) {
	wildcard := rest.CopyConfig(loopback)
	wildcard.Host = logicalcluster.Wildcard.Path().URL(wildcard.Host)
	shards := c.Informers.kcp.shards
	if !c.Informers.hostsRoot {
		shards = c.Informers.global.Shards
	}
	return apiexportendpointslice.New(apiexportendpointslice.Config{
		Wildcard: wildcard, Client: client, APIBindings: c.Informers.kcp.apiBindings, Shards: shards, Partitions: c.Informers.kcp.partitions,
		ResolvePath: c.Informers.resolveAnyPath, ShardName: c.Options.ShardName,
	})
}
