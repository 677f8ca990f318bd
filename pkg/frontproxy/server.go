package frontproxy

import (
	"context"
	"errors"
	"net/http"
	"net/http/pprof"
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/authentication/serviceaccount"
	"github.com/shardplane/shardplane/pkg/exepages"
	"github.com/shardplane/shardplane/pkg/panics"
	"github.com/shardplane/shardplane/pkg/servercmd"
)

// Run starts a front-proxy with the given options and serves until ctx is
// done.
func Run(ctx context.Context, o *Options) error {
	servercmd.LogWarnings(klog.FromContext(ctx), o.warnings)
	if err := o.validateOwn(); err != nil {
		return err
	}
	if err := o.PrepareRootDirectory(); err != nil {
		return err
	}
	completed, err := o.Complete()
	if err != nil {
		return err
	}
	if err := completed.Validate(); err != nil {
		return err
	}
	config, err := NewConfig(ctx, completed)
	if err != nil {
		return err
	}
	server, err := config.Complete().New()
	if err != nil {
		return err
	}
	return server.Run(ctx)
}

// Server is a configured front-proxy.
type Server struct {
	serving *genericapiserver.SecureServingInfo
	index   *Index
	root    *rest.Config
	handler http.Handler
	// releaseStartupPages: see Options.
	releaseStartupPages bool
}

// New builds the front-proxy: the index of workspace paths, the health and
// metrics endpoints and the proxy behind them.
func (c CompletedConfig) New() (*Server, error) {
	o := c.options
	shards := c.Shards
	s := &Server{serving: c.Serving, root: c.Root, releaseStartupPages: o.ReleaseStartupPages}
	s.index = NewIndex(func(baseURL string) (*rest.Config, error) {
		cfg := rest.CopyConfig(shards)
		cfg.Host = baseURL
		cfg.QPS, cfg.Burst = -1, 0
		return cfg, nil
	})
	mux := http.NewServeMux()
	healthz.InstallHandler(mux)
	healthz.InstallLivezHandler(mux)
	healthz.InstallReadyzHandler(mux, healthz.NamedCheck("index-synced", func(*http.Request) error {
		if !s.index.HasSynced() {
			return errors.New("the index has not listed every shard's workspaces yet")
		}
		return nil
	}))
	mux.Handle("/metrics", legacyregistry.Handler())
	if o.Profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	px := newProxy(c.routes, s.index, c.Authenticator, c.serviceAccounts)
	px.watches = newWatchLimiter(o.MaxWatchesPerUser)
	px.holds.timeout, px.holds.maxBody = o.CutOverHoldTimeout, o.CutOverHoldMaxBody
	// In-cluster clients of a workspace's service account send no /clusters/.
	mux.Handle("/", serviceaccount.WithInClusterRewrite(withRequestMetrics(px)))
	// No timeout filter moves handlers to a goroutine of their own: one
	// recovery around everything sees every panic.
	s.handler = panics.WithRecovery(mux)
	return s, nil
}

// Run serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	go func() {
		if err := s.index.Run(ctx, s.root); err != nil {
			klog.FromContext(ctx).Error(err, "Index stopped")
		}
	}()
	if s.releaseStartupPages {
		go exepages.ReleaseWhenReady(ctx, s.handler)
	}
	stopped, _, err := s.serving.Serve(s.handler, 30*time.Second, ctx.Done())
	if err != nil {
		return err
	}
	<-stopped
	return nil
}
