// Package responsecompression gzips large GET and LIST responses on a
// goroutine of their own, so that compressing overlaps with encoding.
//
// Upstream's response writer (APIResponseCompression) compresses on the
// encoding goroutine: for a LIST of 10,000 objects the encoder waits for
// gzip after every item, and gzip is a large part of the server's time.
// Here the encoder hands full buffers to a compressor and goes on; on a
// machine with a second core the two run side by side. The wire is
// upstream's: the same threshold, level, Content-Encoding and Vary; the
// compressor is klauspost/compress's gzip, faster than the standard
// library's at that level, which matters once encoding runs on every core
// (listencoder) and the compressor is what the response waits for.
package responsecompression

import (
	"github.com/klauspost/compress/gzip"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/endpoints/responsewriter"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

const (
	// threshold is upstream's: smaller responses are sent as they are.
	threshold = 128 * 1024
	// chunkSize is how much the encoder writes before handing it over.
	chunkSize = 64 * 1024
	// pending is how many chunks may wait for the compressor: the encoder
	// is ahead by at most this much.
	pending = 4
	// level is upstream's (BestSpeed): CPU matters more than bytes.
	level = gzip.BestSpeed
)

var (
	gzipWriters = sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(nil, level)
		return w
	}}
	chunks = sync.Pool{New: func() any {
		b := make([]byte, 0, chunkSize)
		return &b
	}}
)

// WithGzip compresses the responses of GETs and LISTs of resources whose
// client accepts gzip, when APIResponseCompression is on. The request
// handed on no longer says it accepts gzip, so that upstream's writer
// leaves the compression to this one.
func WithGzip(handler http.Handler) http.Handler {
	if !utilfeature.DefaultFeatureGate.Enabled(features.APIResponseCompression) {
		return handler
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !compressible(req) {
			handler.ServeHTTP(w, req)
			return
		}
		plain := *req
		plain.Header = req.Header.Clone()
		plain.Header.Del("Accept-Encoding")
		cw := &compressingWriter{inner: w, status: http.StatusOK}
		defer func() {
			if p := recover(); p != nil {
				cw.abort()
				panic(p)
			}
			cw.close()
		}()
		handler.ServeHTTP(responsewriter.WrapForHTTP1Or2(cw), &plain)
	})
}

// compressible tells whether req is a GET or LIST of a resource (not a
// watch, not a subresource, which may stream) whose client accepts gzip.
func compressible(req *http.Request) bool {
	if req.Method != http.MethodGet {
		return false
	}
	info, ok := request.RequestInfoFrom(req.Context())
	if !ok || !info.IsResourceRequest || info.Subresource != "" || (info.Verb != "get" && info.Verb != "list") {
		return false
	}
	for enc := range strings.SplitSeq(req.Header.Get("Accept-Encoding"), ",") {
		if name, _, _ := strings.Cut(strings.TrimSpace(enc), ";"); name == "gzip" {
			return true
		}
	}
	return false
}

// compressingWriter buffers the first threshold bytes of a response; below
// that it writes them as they are, above it hands chunks to a compressor
// goroutine that gzips them into the inner writer.
type compressingWriter struct {
	inner     http.ResponseWriter
	status    int
	statusSet bool
	// buf holds what was written and not yet handed over.
	buf *[]byte
	// decided is set once the status line is written; compressing then
	// tells whether chunks go to the compressor.
	decided, compressing bool
	work                 chan *[]byte
	done                 chan struct{}
	// failed is closed by the compressor when writing to inner failed;
	// err is that failure, read after failed is closed.
	failed chan struct{}
	err    error
	// aborted tells the compressor to stop writing (the handler panicked).
	aborted atomic.Bool
}

var _ responsewriter.UserProvidedDecorator = &compressingWriter{}

func (w *compressingWriter) Unwrap() http.ResponseWriter { return w.inner }

func (w *compressingWriter) Header() http.Header { return w.inner.Header() }

// WriteHeader keeps the first status, as net/http does, until the body
// decides how it is sent.
func (w *compressingWriter) WriteHeader(status int) {
	if !w.decided && !w.statusSet {
		w.status, w.statusSet = status, true
	}
}

func (w *compressingWriter) Write(p []byte) (int, error) {
	if w.decided && !w.compressing {
		return w.inner.Write(p)
	}
	if w.buf == nil {
		w.buf = chunks.Get().(*[]byte)
	}
	written := 0
	for len(p) > 0 {
		if w.compressing {
			select {
			case <-w.failed:
				return written, w.err
			default:
			}
		}
		b := *w.buf
		n := min(len(p), cap(b)-len(b))
		if n == 0 {
			if err := w.handOver(); err != nil {
				return written, err
			}
			continue
		}
		*w.buf = append(b, p[:n]...)
		p, written = p[n:], written+n
	}
	return written, nil
}

// handOver passes the full buffer on: to the compressor, or, before the
// decision, into a larger buffer until threshold is reached.
func (w *compressingWriter) handOver() error {
	if !w.decided {
		if cap(*w.buf) < threshold {
			grown := make([]byte, len(*w.buf), 2*cap(*w.buf))
			copy(grown, *w.buf)
			w.buf = &grown
			return nil
		}
		w.startCompressing()
	}
	select {
	case w.work <- w.buf:
	case <-w.failed:
		return w.err
	}
	w.buf = chunks.Get().(*[]byte)
	*w.buf = (*w.buf)[:0]
	return nil
}

// startCompressing writes the status line with gzip's headers and starts
// the compressor.
func (w *compressingWriter) startCompressing() {
	w.decided, w.compressing = true, true
	header := w.inner.Header()
	header.Set("Content-Encoding", "gzip")
	header.Add("Vary", "Accept-Encoding")
	header.Del("Content-Length")
	w.inner.WriteHeader(w.status)
	w.work, w.done, w.failed = make(chan *[]byte, pending), make(chan struct{}), make(chan struct{})
	go w.compress()
}

// compress gzips each chunk into inner; a nil chunk asks for a flush. After
// a failed write it drains the chunks without writing.
func (w *compressingWriter) compress() {
	defer close(w.done)
	gz := gzipWriters.Get().(*gzip.Writer)
	gz.Reset(w.inner)
	defer func() {
		gz.Reset(nil)
		gzipWriters.Put(gz)
	}()
	fail := func(err error) {
		if err != nil && w.err == nil {
			w.err = err
			close(w.failed)
		}
	}
	for chunk := range w.work {
		switch {
		case w.err != nil || w.aborted.Load():
		case chunk == nil:
			err := gz.Flush()
			if f, ok := w.inner.(http.Flusher); ok && err == nil {
				f.Flush()
			}
			fail(err)
		default:
			_, err := gz.Write(*chunk)
			fail(err)
		}
		if chunk != nil {
			*chunk = (*chunk)[:0]
			chunks.Put(chunk)
		}
	}
	if w.err == nil && !w.aborted.Load() {
		fail(gz.Close())
	}
}

// Flush sends what was written so far.
func (w *compressingWriter) Flush() {
	if !w.decided {
		w.writePlain()
	}
	if !w.compressing {
		if f, ok := w.inner.(http.Flusher); ok {
			f.Flush()
		}
		return
	}
	if err := w.handOver(); err != nil {
		return
	}
	select {
	case w.work <- nil:
	case <-w.failed:
	}
}

// writePlain writes the status line and what is buffered, uncompressed.
func (w *compressingWriter) writePlain() {
	w.decided = true
	w.inner.WriteHeader(w.status)
	if w.buf != nil {
		_, _ = w.inner.Write(*w.buf)
		w.release()
	}
}

func (w *compressingWriter) release() {
	if w.buf != nil {
		*w.buf = (*w.buf)[:0]
		chunks.Put(w.buf)
	}
	w.buf = nil
}

// close ends the response once the handler returned: what is buffered goes
// out, and the compressor finishes the stream.
func (w *compressingWriter) close() {
	switch {
	case !w.decided:
		if w.buf == nil {
			// Nothing written: the status line alone, if the handler
			// wrote one (the server writes 200 otherwise).
			w.decided = true
			if w.statusSet {
				w.inner.WriteHeader(w.status)
			}
			return
		}
		w.writePlain()
	case w.compressing:
		if len(*w.buf) > 0 {
			select {
			case w.work <- w.buf:
				w.buf = nil
			case <-w.failed:
			}
		}
		w.release()
		close(w.work)
		<-w.done
	}
}

// abort stops the compressor without finishing the stream (the handler
// panicked).
func (w *compressingWriter) abort() {
	if w.compressing {
		w.aborted.Store(true)
		close(w.work)
		<-w.done
	}
}
