// Command front-proxy is the single URL of the system: it authenticates
// clients and routes /clusters/<workspace path> to the shard that serves it.
package main

import (
	"os"

	"k8s.io/component-base/cli"

	"github.com/shardplane/shardplane/pkg/frontproxy"
)

func main() {
	os.Exit(cli.Run(frontproxy.NewCommand()))
}
