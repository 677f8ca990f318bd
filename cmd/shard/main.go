// Command shard serves many logical clusters (workspaces) from one etcd.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/shardplane/shardplane/pkg/shard"
)

func main() {
	os.Exit(cli.Run(shard.NewCommand()))
}
