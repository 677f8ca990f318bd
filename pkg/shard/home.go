package shard

import (
	"context"
	"net/http"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/home"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// homeWorkspacesOptions are kcp's flags of the home workspaces.
type homeWorkspacesOptions struct {
	Enabled       bool
	CreatorGroups []string
}

// addFlags registers the flags with kcp's names and defaults.
func (o *homeWorkspacesOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Enabled, "enable-home-workspaces", true,
		"Give every user a home workspace, created on first access (GET of the Workspace ~ in root, `kubectl ws`), in which the user is cluster-admin. As kcp's.")
	fs.StringSliceVar(&o.CreatorGroups, "home-workspaces-home-creator-groups", []string{user.AllAuthenticated},
		"Groups whose members get a home workspace created on first access. As kcp's.")
}

// withHomeWorkspaces serves the caller's home as the Workspace ~ of root
// (pkg/home), when home workspaces are enabled. Homes are created on this
// shard, as kcp does: the GET of ~ reaches the shard that hosts root. It
// wraps the handler after authorization.
func (c *Config) withHomeWorkspaces(handler http.Handler, gc *genericapiserver.Config) http.Handler {
	o := c.Options.home
	if !o.Enabled {
		return handler
	}
	loopback := rest.CopyConfig(gc.LoopbackClientConfig)
	loopback.QPS = -1
	client, err := kcpclient.New(loopback)
	if err != nil {
		klog.Background().Error(err, "Home workspaces are off: no loopback client")
		return handler
	}
	types := c.Informers.workspaceTypes()
	return home.WithHomeWorkspaces(handler, home.Config{
		CreatorGroups: o.CreatorGroups,
		Authorizer:    gc.Authorization.Authorizer,
		Serializer:    gc.Serializer,
		Cached:        c.Informers.kcp.logicalCluster,
		Get: func(ctx context.Context, cluster logicalcluster.Name) (*corev1alpha1.LogicalCluster, error) {
			lc := &corev1alpha1.LogicalCluster{}
			return lc, client.Get(ctx, cluster, kcpclient.LogicalClusters, corev1alpha1.LogicalClusterName, lc)
		},
		Create: func(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) (*corev1alpha1.LogicalCluster, error) {
			out := &corev1alpha1.LogicalCluster{}
			return out, client.Create(ctx, cluster, kcpclient.LogicalClusters, lc, out)
		},
		Lifecycle: func() ([]corev1alpha1.LogicalClusterInitializer, []corev1alpha1.LogicalClusterTerminator, error) {
			return home.Lifecycle(types)
		},
		ExternalURL: c.Options.ExternalURL,
	})
}
