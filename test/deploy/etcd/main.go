// Command etcd is upstream etcd (go.etcd.io/etcd/server/v3/etcdmain, the
// version the project builds with), so that the chart check runs the etcd
// StatefulSet's command line unchanged, as the etcd image would.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
