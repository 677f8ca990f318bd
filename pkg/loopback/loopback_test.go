package loopback

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// base is a loopback configuration as the generic API server makes it: TLS
// to the secure port with its own CA, and a bearer token.
func base() *rest.Config {
	return &rest.Config{
		Host:            "https://127.0.0.1:6443",
		BearerToken:     "loopback-token",
		UserAgent:       "loopback-test",
		TLSClientConfig: rest.TLSClientConfig{ServerName: "apiserver-loopback-client", CAData: []byte("not a CA")},
	}
}

// serve starts s with handler and returns an HTTP client of config; the
// cleanup shuts the server down and checks that no goroutine is left.
func serve(t *testing.T, s *Server, handler http.Handler, config *rest.Config) *http.Client {
	t.Helper()
	before := runtime.NumGoroutine()
	served := make(chan error, 1)
	go func() { served <- s.Serve(handler) }()
	client, err := rest.HTTPClientFor(config)
	if err != nil {
		t.Fatalf("client of the in-memory config: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		verifyNoGoroutineLeft(t, before)
	})
	return client
}

func TestRequestReachesHandlerWithHeadersAndPathIntact(t *testing.T) {
	s := New()
	config := s.ClientConfig(rest.CopyConfig(base()))
	config.Host += "/clusters/root"
	type seen struct {
		auth, agent, custom, path, query, remote, proto string
		tls                                             bool
		body                                            string
	}
	got := make(chan seen, 1)
	client := serve(t, s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{
			auth: r.Header.Get("Authorization"), agent: r.Header.Get("User-Agent"), custom: r.Header.Get("X-Custom"),
			path: r.URL.Path, query: r.URL.RawQuery, remote: r.RemoteAddr, proto: r.Proto, tls: r.TLS != nil, body: string(body),
		}
		w.Header().Set("X-Answer", "42")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, "created")
	}), config)

	req, err := http.NewRequest(http.MethodPost, config.Host+"/api/v1/namespaces/default/configmaps?fieldManager=x", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Custom", "kept")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("request: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || resp.Header.Get("X-Answer") != "42" || string(body) != "created" {
		t.Errorf("response %d %q %q, want 201 42 created", resp.StatusCode, resp.Header.Get("X-Answer"), body)
	}
	want := seen{
		auth: "Bearer loopback-token", agent: "loopback-test", custom: "kept",
		path: "/clusters/root/api/v1/namespaces/default/configmaps", query: "fieldManager=x",
		remote: "127.0.0.1:0", proto: "HTTP/1.1", tls: false, body: "{}",
	}
	if g := <-got; g != want {
		t.Errorf("handler saw %+v, want %+v", g, want)
	}
}

func TestClientConfigDropsTLSKeepsCredentials(t *testing.T) {
	b := base()
	c := New().ClientConfig(b)
	if c.Host != "http://127.0.0.1:6443" {
		t.Errorf("host %q, want http://127.0.0.1:6443", c.Host)
	}
	if c.BearerToken != b.BearerToken || c.UserAgent != b.UserAgent {
		t.Errorf("credentials not kept: %q %q", c.BearerToken, c.UserAgent)
	}
	if len(c.CAData) != 0 || c.ServerName != "" {
		t.Errorf("TLS configuration kept: %+v", c.TLSClientConfig)
	}
	if b.Host != "https://127.0.0.1:6443" || len(b.CAData) == 0 {
		t.Errorf("base changed: %+v", b)
	}
}

// watchHandler streams one line per value sent on events until the request
// ends, and reports the protocol and the end of the request.
type watchHandler struct {
	events chan string
	proto  chan string
	ended  chan struct{}
}

func newWatchHandler() *watchHandler {
	return &watchHandler{events: make(chan string), proto: make(chan string, 1), ended: make(chan struct{})}
}

func (h *watchHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer close(h.ended)
	h.proto <- r.Proto
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case e := <-h.events:
			fmt.Fprintln(w, e)
			w.(http.Flusher).Flush()
		}
	}
}

func TestWatchStreamsEventsIncrementallyAndEndsOnCancel(t *testing.T) {
	s := New()
	config := s.ClientConfig(base())
	h := newWatchHandler()
	client := serve(t, s, h, config)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, config.Host+"/api/v1/configmaps?watch=true", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer resp.Body.Close()
	if p := <-h.proto; p != "HTTP/2.0" {
		t.Errorf("watch served over %s, want HTTP/2.0 (multiplexed)", p)
	}
	lines := bufio.NewScanner(resp.Body)
	// Each event arrives before the next one is written.
	for _, e := range []string{"ADDED a", "MODIFIED a", "DELETED a"} {
		h.events <- e
		if !lines.Scan() || lines.Text() != e {
			t.Fatalf("read %q (%v), want %q", lines.Text(), lines.Err(), e)
		}
	}
	cancel()
	<-h.ended
	if lines.Scan() {
		t.Errorf("read %q after cancel", lines.Text())
	}
}

func TestShutdownEndsOpenWatches(t *testing.T) {
	before := runtime.NumGoroutine()
	s := New()
	config := s.ClientConfig(base())
	h := newWatchHandler()
	served := make(chan error, 1)
	go func() { served <- s.Serve(h) }()
	client, err := rest.HTTPClientFor(config)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, config.Host+"/api/v1/configmaps?watch=true", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer resp.Body.Close()
	<-h.proto
	h.events <- "ADDED a"
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() {
		t.Fatalf("no first event: %v", lines.Err())
	}

	// The watch does not end by itself: shutdown ends it, without waiting
	// for a deadline.
	if err := s.Shutdown(context.Background()); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	<-h.ended
	if lines.Scan() {
		t.Errorf("read %q after shutdown", lines.Text())
	}
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
	resp.Body.Close()
	client.CloseIdleConnections()
	verifyNoGoroutineLeft(t, before)
}

func TestNoRequestIsServedAfterShutdown(t *testing.T) {
	s := New()
	config := s.ClientConfig(base())
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := s.Serve(http.NotFoundHandler()); err != nil {
		t.Errorf("serve after shutdown: %v", err)
	}
	client, err := rest.HTTPClientFor(config)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := client.Get(config.Host + "/healthz"); err == nil {
		resp.Body.Close()
		t.Errorf("request after shutdown answered %d", resp.StatusCode)
	}
}

func TestUpgradeRequestsUseHTTP1(t *testing.T) {
	s := New()
	config := s.ClientConfig(base())
	protos := make(chan string, 1)
	client := serve(t, s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protos <- r.Proto
		w.WriteHeader(http.StatusBadRequest)
	}), config)
	req, _ := http.NewRequest(http.MethodGet, config.Host+"/api/v1/namespaces/default/pods/p/exec?follow=true", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "SPDY/3.1")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("upgrade request: %v", err)
	}
	resp.Body.Close()
	if p := <-protos; p != "HTTP/1.1" {
		t.Errorf("upgrade request served over %s, want HTTP/1.1", p)
	}
}

// verifyNoGoroutineLeft waits until the goroutines the test started have
// exited (they exit asynchronously after their connection closes).
func verifyNoGoroutineLeft(t *testing.T, before int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines left, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
	}
}

// Requests follow each other on kept-alive connections; none may find its
// connection broken or its context canceled by the one before.
func TestManyRequestsOnReusedConnectionsAllSucceed(t *testing.T) {
	s := New()
	config := s.ClientConfig(base())
	var canceled atomic.Int32
	client := serve(t, s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Context().Err() != nil {
			canceled.Add(1)
		}
		w.Write(body)
	}), config)
	const clients, requests = 8, 300
	errs := make(chan error, clients)
	for c := range clients {
		go func() {
			for i := range requests {
				want := fmt.Sprintf("client %d request %d", c, i)
				resp, err := client.Post(config.Host+"/api/v1/namespaces/default/configmaps", "application/json", strings.NewReader(want))
				if err != nil {
					errs <- err
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(got) != want {
					errs <- fmt.Errorf("read %q (%v), want %q", got, err, want)
					return
				}
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := canceled.Load(); n > 0 {
		t.Errorf("%d requests canceled while served", n)
	}
}
