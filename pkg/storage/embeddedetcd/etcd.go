// Package embeddedetcd runs an etcd member inside the shard process, for the
// zero-configuration single-shard setup.
package embeddedetcd

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// Options configure an embedded etcd.
type Options struct {
	// Directory holds etcd's data.
	Directory string
	// ClientPort and PeerPort are bound on 127.0.0.1.
	ClientPort int
	PeerPort   int
	// QuotaBackendBytes limits the database size (0: etcd's default).
	QuotaBackendBytes int64
}

// Server is a running embedded etcd.
type Server struct {
	etcd *embed.Etcd
	// ClientURL is where clients reach it.
	ClientURL string
}

// Start starts etcd and waits until it serves, or ctx ends.
func Start(ctx context.Context, o Options) (*Server, error) {
	if err := os.MkdirAll(o.Directory, 0o700); err != nil {
		return nil, fmt.Errorf("create etcd directory: %w", err)
	}
	cfg := embed.NewConfig()
	cfg.Name = "shard"
	cfg.Dir = o.Directory
	cfg.WalDir = filepath.Join(o.Directory, "wal")
	clientURL := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(o.ClientPort)}
	peerURL := url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(o.PeerPort)}
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.QuotaBackendBytes = o.QuotaBackendBytes
	// Keep history bounded: the apiserver compacts too, this is a backstop.
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = "5m"
	cfg.LogLevel = "warn"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(newKlogCore(klog.Background().WithName("etcd"), zapcore.WarnLevel)))

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd on 127.0.0.1:%d: %w", o.ClientPort, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("embedded etcd failed: %w", err)
	case <-time.After(60 * time.Second):
		e.Close()
		return nil, fmt.Errorf("embedded etcd did not become ready within 60s")
	case <-ctx.Done():
		e.Close()
		return nil, ctx.Err()
	}
	return &Server{etcd: e, ClientURL: clientURL.String()}, nil
}

// Close stops etcd.
func (s *Server) Close() { s.etcd.Close() }

// Err delivers the error that stopped etcd after it started serving.
func (s *Server) Err() <-chan error { return s.etcd.Err() }

// CancelOnFailure returns a context that ends with the error of s when the
// embedded etcd fails after start-up, so that the process stops with that
// error instead of serving without storage. Call stop when done.
func (s *Server) CancelOnFailure(ctx context.Context) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case err, ok := <-s.Err():
			if ok && err != nil {
				cancel(fmt.Errorf("embedded etcd stopped: %w", err))
			}
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
}
