// Command run-system starts the whole system locally in the foreground:
// the root shard, more shards and the front-proxy, on free loopback ports,
// with data under --dir. It writes <dir>/admin.kubeconfig (through the
// front-proxy) and <dir>/ready once every process is ready, and stops every
// process on SIGTERM or SIGINT. A process that exits is reported and the
// others keep running; SIGHUP starts the exited ones again.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/pflag"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/system"
)

func main() {
	self, _ := os.Executable()
	bin := filepath.Dir(self)
	o := system.Options{}
	pflag.StringVar(&o.Dir, "dir", ".shardplane-system", "directory for every process's data, logs and kubeconfigs")
	pflag.IntVar(&o.Shards, "shards", 2, "number of shards, root included")
	pflag.IntVar(&o.FrontProxies, "front-proxies", 1, "number of front-proxies (stateless, side by side; admin.kubeconfig names the first)")
	pflag.StringVar(&o.TokenAuthFile, "token-auth-file", "", "kube-apiserver token file given to the front-proxy and every shard")
	pflag.StringVar(&o.ShardBinary, "shard-binary", filepath.Join(bin, "shard"), "shard program")
	pflag.StringVar(&o.FrontProxyBinary, "front-proxy-binary", filepath.Join(bin, "front-proxy"), "front-proxy program")
	pflag.StringVar(&o.CacheServerBinary, "cache-server-binary", filepath.Join(bin, "cache-server"), "cache-server program (empty: no cache server)")
	pflag.StringVar(&o.VirtualWorkspacesBinary, "virtual-workspaces-binary", system.DefaultVirtualWorkspacesBinary(bin), "virtual-workspaces program, run once per shard (default: the one beside run-system, if any; empty: the shards serve the virtual workspaces in-process)")
	klog.InitFlags(nil)
	pflag.CommandLine.AddGoFlagSet(flag.CommandLine)
	// Parsing stops at the first argument that is not one of ours, or
	// after --: what follows is given to every shard.
	pflag.CommandLine.SetInterspersed(false)
	pflag.Parse()
	o.ShardArgs = pflag.Args()
	// verflag registers --version on pflag's command line when linked in.
	verflag.PrintAndExitIfRequested()

	ctx, stop := signal.NotifyContext(klog.NewContext(context.Background(), klog.Background()), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	s, err := system.Start(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "run-system:", err)
		os.Exit(1)
	}
	fmt.Printf("System ready: front-proxy %s\n  export KUBECONFIG=%s\n", s.URL(), filepath.Join(o.Dir, system.AdminKubeconfigFile))
	// SIGHUP starts again the processes that exited.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	restart := make(chan struct{})
	go func() {
		for range hup {
			restart <- struct{}{}
		}
	}()
	s.Wait(ctx, restart)
	s.Stop()
}
