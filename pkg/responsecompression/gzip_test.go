package responsecompression

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/endpoints/request"
)

// body is n bytes that compress, but not to nothing.
func body(n int) []byte {
	r := rand.New(rand.NewSource(int64(n)))
	words := []string{"configmap", "kube-root-ca.crt", "default", "metadata", "-----BEGIN CERTIFICATE-----"}
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[r.Intn(len(words))])
		b.WriteByte(byte('a' + r.Intn(26)))
	}
	return b.Bytes()[:n]
}

// serve runs WithGzip around handler in a TLS server speaking HTTP/2, with
// the request info the handler chain would have set, and returns the raw
// response (not decompressed by the client).
func serve(t *testing.T, info *request.RequestInfo, acceptEncoding string, handler http.HandlerFunc) (*http.Response, []byte) {
	t.Helper()
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		WithGzip(handler).ServeHTTP(w, req.WithContext(request.WithRequestInfo(req.Context(), info)))
	}))
	server.EnableHTTP2 = true
	server.StartTLS()
	t.Cleanup(server.Close)
	client := server.Client()
	client.Transport.(*http.Transport).DisableCompression = true
	req, err := http.NewRequest(http.MethodGet, server.URL+"/api/v1/configmaps", nil)
	if err != nil {
		t.Fatal(err)
	}
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("served over %s, want HTTP/2", resp.Proto)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, raw
}

var list = &request.RequestInfo{IsResourceRequest: true, Verb: "list", APIVersion: "v1", Resource: "configmaps"}

// writeInPieces writes data as an encoder would: a header, then items of
// varying sizes.
func writeInPieces(w http.ResponseWriter, data []byte) {
	w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
	w.WriteHeader(http.StatusOK)
	for i, n := 0, 4; len(data) > 0; i, n = i+1, 1+(i*7919)%3000 {
		n = min(n, len(data))
		if _, err := w.Write(data[:n]); err != nil {
			return
		}
		data = data[n:]
	}
}

func gunzip(t *testing.T, raw []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLargeListIsGzippedWithUpstreamsHeaders(t *testing.T) {
	for _, size := range []int{threshold + 1, 3*chunkSize + 17, 5 << 20} {
		want := body(size)
		var sawAcceptEncoding string
		resp, raw := serve(t, list, "gzip, deflate", func(w http.ResponseWriter, req *http.Request) {
			sawAcceptEncoding = req.Header.Get("Accept-Encoding")
			writeInPieces(w, want)
		})
		if got := resp.Header.Get("Content-Encoding"); got != "gzip" {
			t.Fatalf("%d bytes: Content-Encoding %q, want gzip", size, got)
		}
		if got := resp.Header.Get("Vary"); got != "Accept-Encoding" {
			t.Errorf("%d bytes: Vary %q, want Accept-Encoding", size, got)
		}
		if got := resp.Header.Get("Content-Type"); got != "application/vnd.kubernetes.protobuf" {
			t.Errorf("%d bytes: Content-Type %q", size, got)
		}
		if sawAcceptEncoding != "" {
			t.Errorf("%d bytes: the handler saw Accept-Encoding %q, so upstream's writer would compress too", size, sawAcceptEncoding)
		}
		if len(raw) >= size {
			t.Errorf("%d bytes sent as %d: not smaller", size, len(raw))
		}
		if got := gunzip(t, raw); !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: decompressed body differs (%d bytes)", size, len(got))
		}
	}
}

func TestOneLargeWriteAndStatusAreKept(t *testing.T) {
	want := body(threshold * 3)
	resp, raw := serve(t, list, "gzip", func(w http.ResponseWriter, req *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(want)
	})
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("status %d, want 201", resp.StatusCode)
	}
	if got := gunzip(t, raw); !bytes.Equal(got, want) {
		t.Fatal("decompressed body differs")
	}
}

func TestSmallResponseIsSentAsItIs(t *testing.T) {
	for _, size := range []int{0, 10, threshold} {
		want := body(size)
		resp, raw := serve(t, list, "gzip", func(w http.ResponseWriter, req *http.Request) {
			w.WriteHeader(http.StatusAccepted)
			writeInPieces(w, want)
		})
		if got := resp.Header.Get("Content-Encoding"); got != "" {
			t.Errorf("%d bytes: Content-Encoding %q, want none", size, got)
		}
		if resp.StatusCode != http.StatusAccepted && size > 0 {
			t.Errorf("%d bytes: status %d", size, resp.StatusCode)
		}
		if !bytes.Equal(raw, want) {
			t.Errorf("%d bytes: body differs (%d bytes)", size, len(raw))
		}
	}
	resp, _ := serve(t, list, "gzip", func(w http.ResponseWriter, req *http.Request) {
		w.WriteHeader(http.StatusNotFound)
	})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status %d, want 404 with no body", resp.StatusCode)
	}
}

func TestOtherRequestsAreLeftToUpstream(t *testing.T) {
	cases := map[string]struct {
		info           *request.RequestInfo
		acceptEncoding string
	}{
		"watch":               {&request.RequestInfo{IsResourceRequest: true, Verb: "watch", Resource: "configmaps"}, "gzip"},
		"subresource":         {&request.RequestInfo{IsResourceRequest: true, Verb: "get", Resource: "pods", Subresource: "log"}, "gzip"},
		"non-resource":        {&request.RequestInfo{Verb: "get", Path: "/openapi/v2"}, "gzip"},
		"client without gzip": {list, "deflate, br"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			want := body(threshold * 2)
			var sawAcceptEncoding string
			resp, raw := serve(t, c.info, c.acceptEncoding, func(w http.ResponseWriter, req *http.Request) {
				sawAcceptEncoding = req.Header.Get("Accept-Encoding")
				writeInPieces(w, want)
			})
			if sawAcceptEncoding != c.acceptEncoding {
				t.Errorf("handler saw Accept-Encoding %q, want %q", sawAcceptEncoding, c.acceptEncoding)
			}
			if got := resp.Header.Get("Content-Encoding"); got != "" {
				t.Errorf("Content-Encoding %q, want none", got)
			}
			if !bytes.Equal(raw, want) {
				t.Errorf("body differs")
			}
		})
	}
}

func TestFlushSendsWhatWasWritten(t *testing.T) {
	first := body(threshold + 100)
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		WithGzip(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			_, _ = w.Write(first)
			w.(http.Flusher).Flush()
			<-req.Context().Done() // until the client read the flushed part
		})).ServeHTTP(w, req.WithContext(request.WithRequestInfo(req.Context(), list)))
	}))
	server.EnableHTTP2 = true
	server.StartTLS()
	defer server.Close()
	req, _ := http.NewRequest(http.MethodGet, server.URL, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := server.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(first))
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatalf("reading the flushed part: %v", err)
	}
	if !bytes.Equal(got, first) {
		t.Fatal("flushed part differs")
	}
	resp.Body.Close()
}

// failingWriter fails every write after the first n bytes, as a
// connection whose client went away.
type failingWriter struct {
	header  http.Header
	n       int
	written int
}

var errGone = errors.New("client went away")

func (f *failingWriter) Header() http.Header { return f.header }
func (f *failingWriter) WriteHeader(int)     {}
func (f *failingWriter) Write(p []byte) (int, error) {
	if f.written+len(p) > f.n {
		return 0, errGone
	}
	f.written += len(p)
	return len(p), nil
}

func TestWriteErrorReachesTheEncoder(t *testing.T) {
	req := httptest.NewRequest(http.MethodGet, "/api/v1/configmaps", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	req = req.WithContext(request.WithRequestInfo(req.Context(), list))
	data := body(20 << 20)
	var writeErr error
	WithGzip(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		for len(data) > 0 {
			n := min(1000, len(data))
			if _, writeErr = w.Write(data[:n]); writeErr != nil {
				return
			}
			data = data[n:]
		}
	})).ServeHTTP(&failingWriter{header: http.Header{}, n: 10_000}, req)
	if !errors.Is(writeErr, errGone) {
		t.Fatalf("the handler's write returned %v, want the connection's error", writeErr)
	}
}

func TestPanicIsPassedOn(t *testing.T) {
	req := httptest.NewRequest(http.MethodGet, "/api/v1/configmaps", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	req = req.WithContext(request.WithRequestInfo(req.Context(), list))
	rec := httptest.NewRecorder()
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Fatalf("recovered %v, want http.ErrAbortHandler", p)
		}
		r, err := gzip.NewReader(rec.Body)
		if err == nil {
			_, err = io.ReadAll(r)
		}
		if err == nil {
			t.Errorf("an aborted response was finished as a whole gzip stream")
		}
	}()
	WithGzip(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = w.Write(body(threshold * 2))
		panic(http.ErrAbortHandler)
	})).ServeHTTP(rec, req)
}
