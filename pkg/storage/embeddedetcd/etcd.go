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

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
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
	// client calls the server in-process (Client).
	client *clientv3.Client
	// stop ends the goroutines of the server.
	stop context.CancelFunc
}

const (
	// defragmentCheckInterval is how often the database file is checked for
	// free pages worth giving back.
	defragmentCheckInterval = 15 * time.Second
	// defragmentMinFree is the least free space worth rewriting the file for.
	defragmentMinFree = 16 << 20
)

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
	// The raft log kept in memory holds every recent write in full, 5,000
	// of them by default for slow followers to catch up from. This member
	// has no followers: keep a hundred.
	cfg.SnapshotCatchUpEntries = 100
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
	// Owned by the server, not by ctx, which may only cover the start.
	runCtx, stop := context.WithCancel(context.Background())
	s := &Server{etcd: e, ClientURL: clientURL.String(), client: v3client.New(e.Server), stop: stop}
	go s.releaseFreePages(runCtx)
	return s, nil
}

// Close closes the in-process client and stops etcd.
func (s *Server) Close() {
	s.stop()
	_ = s.client.Close()
	s.etcd.Close()
}

// Client returns a client that calls the server in-process: requests are
// function calls and watches channel streams, without gRPC, HTTP/2 or a
// socket in between. It has no endpoints. Callers share it and must not
// close it; Close does.
func (s *Server) Client() *clientv3.Client { return s.client }

// releaseFreePages rewrites the database file when most of it is free:
// bbolt reuses the pages that compaction frees but never gives them back,
// and the whole file is mapped into the shard's memory, so after deleting
// many objects the file would hold their space for good.
func (s *Server) releaseFreePages(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("etcd")
	t := time.NewTicker(defragmentCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.etcd.Server.StoppingNotify():
			return
		case <-t.C:
		}
		b := s.etcd.Server.Backend()
		size, inUse := b.Size(), b.SizeInUse()
		if !worthDefragmenting(size, inUse) {
			continue
		}
		start := time.Now()
		if err := s.etcd.Server.Defragment(); err != nil {
			logger.Error(err, "Defragmenting the database failed", "size", size, "inUse", inUse)
			continue
		}
		logger.V(2).Info("Defragmented the database", "size", size, "inUse", inUse, "newSize", b.Size(), "duration", time.Since(start))
	}
}

// worthDefragmenting tells whether a database file of size bytes, of which
// inUse hold data, is worth rewriting: when its free pages are many and more
// than its data (rewriting copies the data and blocks writes meanwhile).
func worthDefragmenting(size, inUse int64) bool {
	free := size - inUse
	return free >= defragmentMinFree && free > inUse
}

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
