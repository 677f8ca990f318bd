package framework

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/exepages"
	"github.com/shardplane/shardplane/pkg/servercmd"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Server is a standalone virtual workspace server: the generic server
// (serving, authentication, /healthz /livez /readyz /metrics) with the
// views below /services/ and /shards/<shard>/services/.
type Server struct {
	GenericAPIServer *genericapiserver.GenericAPIServer
	mounted          *Mounted
}

// New builds the server.
func (c CompletedConfig) New() (*Server, error) {
	gs, err := c.Generic.New("virtual-workspaces", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	gs.Handler.NonGoRestfulMux.HandlePrefix(viewurl.ServicesPrefix, c.Mounted.Views)
	gs.Handler.NonGoRestfulMux.HandlePrefix(viewurl.ShardsPrefix, c.Mounted.Views)
	if err := gs.AddReadyzChecks(wildcardinformer.SyncedCheck("virtual-workspaces-informers", c.Mounted.Informers...)); err != nil {
		return nil, err
	}
	s := &Server{GenericAPIServer: gs, mounted: c.Mounted}
	if err := gs.AddPostStartHook("virtual-workspaces-informers", func(hc genericapiserver.PostStartHookContext) error {
		s.mounted.Run(klog.NewContext(hc, klog.Background().WithName("virtual-workspaces")))
		return nil
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// Run runs the informers of the views in the background until ctx ends.
func (m *Mounted) Run(ctx context.Context) {
	for _, i := range m.Informers {
		go i.Run(ctx)
	}
}

// Run serves until ctx is done; with releaseStartupPages, it gives back
// the executable's start-up pages once ready (package exepages).
func (s *Server) Run(ctx context.Context, releaseStartupPages bool) error {
	prepared := s.GenericAPIServer.PrepareRun()
	if releaseStartupPages {
		go exepages.ReleaseWhenReady(ctx, prepared.Handler.NonGoRestfulMux)
	}
	return prepared.RunWithContext(ctx)
}

// Run starts a server with the options and the views build returns, and
// serves until ctx is done.
func Run(ctx context.Context, o *Options, build BuildViews) error {
	servercmd.LogWarnings(klog.FromContext(ctx), o.Warnings())
	config, err := NewConfig(ctx, o, build)
	if err != nil {
		return err
	}
	server, err := config.Complete().New()
	if err != nil {
		return err
	}
	if err := server.Run(ctx, o.ReleaseStartupPages); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// NewCommand returns the virtual-workspaces command serving the views
// build returns.
func NewCommand(build BuildViews) *cobra.Command {
	o := NewOptions()
	cmd, fss := servercmd.New(servercmd.Server{
		Use:      "virtual-workspaces",
		Short:    "Serve the virtual workspaces of one shard: views of the export owners, initializers and terminators",
		AddFlags: o.AddFlags,
		Logs:     o.Logs,
		Run:      func(ctx context.Context) error { return Run(ctx, o, build) },
	})
	// `virtual-workspaces workspaces [flags]` as kcp's command line has it.
	servercmd.Alias(cmd, fss, "workspaces", "Serve the virtual workspaces (the same as running virtual-workspaces without a subcommand, as kcp's `virtual-workspaces workspaces`)")
	return cmd
}
