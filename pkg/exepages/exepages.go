// Package exepages gives the kernel back the memory that holds the running
// executable's code and read-only data once a server has started.
//
// A server's start-up runs code it never runs again: the init of every
// linked package, scheme, storage and OpenAPI registration, the bootstrap
// of its objects. The kernel keeps every page of the executable it read
// for that mapped into the process (and, with read-ahead and fault-around,
// the pages next to them): for the shard, most of its binary, of which an
// idle shard uses only a part again. Release drops them all
// from the process and from the page cache; those the server uses later
// are read again from the file, one page at a time.
//
// ReleaseFile does the same for another file the process maps, such as the
// embedded etcd's database.
package exepages

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// ErrUnsupported is returned where the kernel cannot page out a process's
// own mappings (not Linux, or Linux before 5.4). It is an
// errors.ErrUnsupported, so that callers handed PageOut as a plain func
// can tell without importing this package.
var ErrUnsupported error = unsupportedError{}

type unsupportedError struct{}

func (unsupportedError) Error() string {
	return "paging out the executable's pages is not supported here"
}

func (unsupportedError) Unwrap() error { return errors.ErrUnsupported }

// Released tells what Release did.
type Released struct {
	// Mapped is the size of the read-only mappings of the executable.
	Mapped int64
	// ResidentBefore and ResidentAfter are the process's resident
	// file-backed memory (RssFile) before and right after.
	ResidentBefore, ResidentAfter int64
}

// Release pages out the executable's read-only mappings (code, read-only
// data and the tables the runtime reads for stack walks), drops the
// file's cached pages that no process maps, and turns off read-ahead on
// the mappings, so that a page the server touches later brings back that
// page only, not the 64–128 KiB around it.
func Release() (Released, error) { return release() }

// ReleaseFile pages out the read-only mappings of the file at path and
// drops its cached pages that no process maps, as Release does for the
// executable (without turning off read-ahead: the mapper decides). A
// database that reads its file through a mapping, such as etcd's bbolt,
// keeps every page it ever touched resident; those it needs again come
// back one fault at a time. Mapped is 0 when the file is not mapped.
func ReleaseFile(path string) (Released, error) { return releaseFile(path) }

// PageOut is ReleaseFile for hooks that take only an error, such as
// embeddedetcd.Options.PageOut: it logs what went back and returns the
// error, ErrUnsupported included, for the caller to act on.
func PageOut(path string) error {
	r, err := ReleaseFile(path)
	if err == nil {
		klog.Background().V(4).Info("Released the pages of a file", "file", path, "mapped", r.Mapped, "residentBefore", r.ResidentBefore, "residentAfter", r.ResidentAfter)
	}
	return err
}

// AddFlag registers --release-startup-pages, which each server has, into
// release (true by default: set it before).
func AddFlag(fs *pflag.FlagSet, release *bool) {
	fs.BoolVar(release, "release-startup-pages", *release,
		"Once ready, give the kernel back the pages of the executable (code and read-only data) that start-up read, and read those it needs later again one page at a time (Linux 5.4 or later; the shard's idle RSS is about 50 MiB lower).")
}

// released tells whether ReleaseWhenReady released the pages in this
// process, which ReleaseAgain requires.
var released atomic.Bool

// ReleaseAgain releases the pages again if ReleaseWhenReady did once in
// this process: after a burst of work that ran code the idle server does
// not (a mass deletion), as after start-up. It tells whether it released
// them.
func ReleaseAgain(ctx context.Context) bool {
	return released.Load() && logRelease(ctx, "after a burst")
}

// readyPollInterval is how often ReleaseWhenReady asks /readyz.
const readyPollInterval = 100 * time.Millisecond

// ReleaseWhenReady calls Release once the server's /readyz, served by
// readyz in-process, first answers 200: start-up is over then (post-start
// hooks done, informers synced). It returns when it released or ctx ended.
func ReleaseWhenReady(ctx context.Context, readyz http.Handler) {
	ready := func() bool {
		rec := httptest.NewRecorder()
		readyz.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/readyz", nil))
		return rec.Code == http.StatusOK
	}
	releaseWhenReady(ctx, ready, readyPollInterval, func() {
		if logRelease(ctx, "start-up") {
			released.Store(true)
		}
	})
}

// logRelease releases the pages and logs the outcome; it tells whether it
// released them.
func logRelease(ctx context.Context, after string) bool {
	logger := klog.FromContext(ctx)
	r, err := Release()
	switch {
	case errors.Is(err, ErrUnsupported):
		logger.V(2).Info("The executable's pages stay mapped", "reason", err)
	case err != nil:
		logger.Error(err, "Releasing the executable's pages failed", "after", after)
	default:
		logger.V(1).Info("Released the executable's pages", "after", after, "mapped", r.Mapped, "residentBefore", r.ResidentBefore, "residentAfter", r.ResidentAfter)
		return true
	}
	return false
}

// releaseWhenReady calls release once ready, asked every interval, is true.
func releaseWhenReady(ctx context.Context, ready func() bool, interval time.Duration, release func()) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for !ready() {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	release()
}
