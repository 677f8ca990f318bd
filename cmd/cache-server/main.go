// Command cache-server keeps the replicas through which shards share what a
// workspace on one shard needs from a workspace on another.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/shardplane/shardplane/pkg/cacheserver"
)

func main() {
	os.Exit(cli.Run(cacheserver.NewCommand()))
}
