// Command virtual-workspaces serves the virtual workspaces of one shard
// (the APIExport and APIResourceSchema views, initializing and terminating
// workspaces and, with --cache-kubeconfig, the replication view of
// ClusterCachedResources' copies) as its own process; a shard serves the same views in-process
// unless started with --run-virtual-workspaces=false.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/shardplane/shardplane/pkg/virtual/framework"
	"github.com/shardplane/shardplane/pkg/virtual/framework/builtin"
)

func main() {
	os.Exit(cli.Run(framework.NewCommand(func(c framework.ViewsConfig) (*framework.Mounted, error) {
		return builtin.New(builtin.Config{Shard: c.Shard, Authorizer: c.Authorizer, AuthorizationConfig: c.AuthorizationConfig, Cache: c.Cache})
	})))
}
