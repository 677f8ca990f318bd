package frontproxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/exepages"
	"github.com/shardplane/shardplane/pkg/panics"
)

// Server is a configured front-proxy.
type Server struct {
	serving *genericapiserver.SecureServingInfo
	index   *Index
	root    *rest.Config
	handler http.Handler
	// releaseStartupPages: see Options.
	releaseStartupPages bool
}

// New builds the front-proxy from completed options.
func New(ctx context.Context, o *Options) (*Server, error) {
	routes, err := LoadMappings(o.MappingFile)
	if err != nil {
		return nil, err
	}
	root, err := clientcmd.BuildConfigFromFlags("", o.RootKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--root-kubeconfig: %w", err)
	}
	shards, err := clientcmd.BuildConfigFromFlags("", o.ShardsKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--shards-kubeconfig: %w", err)
	}
	s := &Server{root: root, releaseStartupPages: o.ReleaseStartupPages}
	if err := o.SecureServing.ApplyTo(&s.serving); err != nil {
		return nil, err
	}
	authConfig, err := o.Authentication.ToAuthenticationConfig()
	if err != nil {
		return nil, err
	}
	s.serving.ClientCA = authConfig.ClientCAContentProvider
	authn, _, _, _, err := authConfig.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("authentication: %w", err)
	}
	if authn == nil {
		authn = authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) { return nil, false, nil })
	}
	sa, err := newServiceAccountTokens(o.ServiceAccountKeyFiles)
	if err != nil {
		return nil, err
	}
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
	px := newProxy(routes, s.index, authn, sa)
	px.watches = newWatchLimiter(o.MaxWatchesPerUser)
	mux.Handle("/", withRequestMetrics(px))
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
