// Package embeddedetcd runs an etcd member inside the shard process, for the
// zero-configuration single-shard setup.
package embeddedetcd

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.etcd.io/etcd/server/v3/storage/wal"
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
	// WALSegmentSizeBytes is the size of each write-ahead log file (0:
	// etcd's default). etcd keeps it in a package variable, so it applies to
	// every etcd of the process.
	WALSegmentSizeBytes int64
	// ListenMetricsURLs serve etcd's /metrics besides the client port.
	ListenMetricsURLs []url.URL
	// ForceNewCluster starts a one-member cluster from data restored from
	// another cluster.
	ForceNewCluster bool
	// PageOut gives the kernel back the resident pages of the mapped file
	// at path once writes pause (nil: they stay); an error that is
	// errors.ErrUnsupported stops further tries. The binary provides it, as
	// process paging is not storage's business.
	PageOut func(path string) error
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
	// database is the path of the database file.
	database string
	// pageOut is Options.PageOut.
	pageOut func(path string) error
	// releaseAsked is set by ReleasePagesWhenQuiet.
	releaseAsked atomic.Bool
}

const (
	// defragmentCheckInterval is how often the database file is checked for
	// free pages worth giving back.
	defragmentCheckInterval = 15 * time.Second
	// defragmentMinFree is the least free space worth rewriting the file for.
	defragmentMinFree = 16 << 20
	// pagesCheckInterval is how often the applied writes are counted to
	// tell whether the database's pages may be given back.
	pagesCheckInterval = time.Second
	// pagesQuietEntries is the most raft entries applied in one check
	// interval that still count as quiet.
	pagesQuietEntries = 10
	// pagesMinEntries is the least raft entries applied since the last
	// release that are worth another: under a trickle of writes, the pages
	// go back every hundred writes, not after each.
	pagesMinEntries = 100
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
	cfg.ListenMetricsUrls = o.ListenMetricsURLs
	cfg.ForceNewCluster = o.ForceNewCluster
	if o.WALSegmentSizeBytes > 0 {
		wal.SegmentSizeBytes = o.WALSegmentSizeBytes
	}
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
	s := &Server{etcd: e, ClientURL: clientURL.String(), client: v3client.New(e.Server), stop: stop,
		database: filepath.Join(cfg.Dir, "member", "snap", "db"), pageOut: o.PageOut}
	go s.tendDatabase(runCtx)
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

// tendDatabase gives back the memory of the database file: its free pages
// (defragmentFile) and its resident ones once writes pause (idlePages).
// One goroutine does both, so that a release never pages out a mapping a
// defragmentation is replacing.
func (s *Server) tendDatabase(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("etcd")
	t := time.NewTicker(pagesCheckInterval)
	defer t.Stop()
	lastDefragmentCheck := time.Now()
	idle := idlePages{never: true, unsupported: s.pageOut == nil}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.etcd.Server.StoppingNotify():
			return
		case now := <-t.C:
			if now.Sub(lastDefragmentCheck) >= defragmentCheckInterval {
				lastDefragmentCheck = now
				if s.defragmentFile(logger) {
					// bbolt maps the new file with MAP_POPULATE: every
					// page of it.
					idle.never = true
				}
			}
		}
		applied := s.etcd.Server.AppliedIndex()
		if s.releaseAsked.Swap(false) {
			idle.asked = true
		}
		if idle.worthReleasing(applied) {
			idle.released(applied, s.releasePages(logger))
		}
		idle.last = applied
	}
}

// defragmentFile rewrites the database file when most of it is free:
// bbolt reuses the pages that compaction frees but never gives them back,
// and the whole file is mapped into the shard's memory, so after deleting
// many objects the file would hold their space for good. It tells whether
// it rewrote the file.
func (s *Server) defragmentFile(logger klog.Logger) bool {
	b := s.etcd.Server.Backend()
	size, inUse := b.Size(), b.SizeInUse()
	if !worthDefragmenting(size, inUse) {
		return false
	}
	start := time.Now()
	if err := s.etcd.Server.Defragment(); err != nil {
		logger.Error(err, "Defragmenting the database failed", "size", size, "inUse", inUse)
		return false
	}
	logger.V(2).Info("Defragmented the database", "size", size, "inUse", inUse, "newSize", b.Size(), "duration", time.Since(start))
	return true
}

// idlePages decides when the database file's resident pages go back to the
// kernel. bbolt reads the file through a mapping, and every page a write's
// B+tree walk or a read touched stays resident, in the end the whole file,
// while the watch caches serve the reads. They
// go back once writes pause; a write touches a few, which come back from
// the disk one fault at a time (bbolt turns off read-ahead on the mapping).
type idlePages struct {
	// last is the applied raft index one check interval ago, and
	// releasedAt the one at the last release.
	last, releasedAt uint64
	// never is true until the first release, and again after the file was
	// mapped anew.
	never bool
	// unsupported is true where the kernel cannot page out a mapping, or
	// the server was given no PageOut.
	unsupported bool
	// asked is true when a release was asked for since the last one
	// (ReleasePagesWhenQuiet).
	asked bool
}

// worthReleasing tells whether to release the pages now that the applied
// raft index is applied: writes paused (at most pagesQuietEntries since
// the last check) after at least pagesMinEntries since the last release.
func (p *idlePages) worthReleasing(applied uint64) bool {
	quiet := applied-p.last <= pagesQuietEntries
	return !p.unsupported && quiet && (p.never || p.asked || applied-p.releasedAt >= pagesMinEntries)
}

// released records the outcome of a release at the applied raft index.
func (p *idlePages) released(applied uint64, err error) {
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		p.unsupported = true
	case err == nil:
		p.never, p.asked, p.releasedAt = false, false, applied
	}
}

// ReleasePagesWhenQuiet asks for the database file's pages to go back at
// the next check at which writes pause, however few there were since the
// last release: after a compaction, which walks the whole file in a few
// raft entries.
func (s *Server) ReleasePagesWhenQuiet() { s.releaseAsked.Store(true) }

// releasePages pages out the database file's mapping.
func (s *Server) releasePages(logger klog.Logger) error {
	err := s.pageOut(s.database)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		logger.V(2).Info("The database's pages stay mapped", "reason", err)
	case err != nil:
		logger.Error(err, "Releasing the database's pages failed")
	}
	return err
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

// StartForServer starts etcd as the storage of a server process. The
// returned context ends with etcd's error when etcd fails after start-up
// (see CancelOnFailure); call stop once the server has stopped: it closes
// etcd.
func StartForServer(ctx context.Context, o Options) (_ context.Context, _ *Server, stop func(), _ error) {
	s, err := Start(ctx, o)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, stopWatching := s.CancelOnFailure(ctx)
	return ctx, s, func() {
		stopWatching()
		s.Close()
	}, nil
}
