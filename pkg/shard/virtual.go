package shard

import (
	"net/http"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/authorization/clusterrbac"
	"github.com/shardplane/shardplane/pkg/authorization/othershards"
	"github.com/shardplane/shardplane/pkg/authorization/workspacecontent"
	"github.com/shardplane/shardplane/pkg/controllers/apiexportendpointslice"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/virtual/framework"
	"github.com/shardplane/shardplane/pkg/virtual/framework/builtin"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
)

// virtualWorkspacesOptions are the flags of the virtual workspaces the
// shard serves in-process.
type virtualWorkspacesOptions struct {
	// Run serves the virtual workspaces below /services/ on the shard's
	// own port (kcp's default); off when a virtual-workspaces process
	// serves them.
	Run bool
}

func (v *virtualWorkspacesOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&v.Run, "run-virtual-workspaces", true, "Serve the virtual workspaces (/services/apiexport/..., /services/initializingworkspaces/..., /services/terminatingworkspaces/...) in-process on the shard's port. Turn off when a virtual-workspaces process serves this shard.")
}

// newVirtualWorkspaces builds the in-process virtual workspaces: the
// shard's authenticator, its authorizer (with the replicated RBAC of
// workspaces on other shards) and informers, and its loopback client as
// the views' privileged credential. Nil when they are turned off.
func newVirtualWorkspaces(o CompletedOptions, gc *genericapiserver.Config, informers wildcardInformers) (http.Handler, error) {
	if !o.virtual.Run {
		return nil, nil
	}
	// The views check permissions in other workspaces as kcp's deep reviews.
	authz := workspacecontent.Deep(othershards.New(gc.Authorization.Authorizer, clusterrbac.New(informers.rbac), informers.hosted))
	mounted, err := builtin.New(builtin.Config{
		Shard:       rest.CopyConfig(gc.LoopbackClientConfig),
		Authorizer:  authz,
		APIBindings: informers.kcp.apiBindings,
		ResolvePath: informers.resolveAnyPath,
	})
	if err != nil {
		return nil, err
	}
	return framework.WithAuthentication(mounted.Views, gc.Authentication.Authenticator), nil
}

// withVirtualWorkspaces serves /services/<view>/... and
// /shards/<shard>/services/<view>/... by the in-process virtual workspaces
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
		Wildcard: wildcard, Client: client, APIBindings: c.Informers.kcp.apiBindings, Shards: shards,
		ResolvePath: c.Informers.resolveAnyPath, ShardName: c.Options.ShardName,
	})
}
