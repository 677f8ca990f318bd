package frontproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestUpgradeRequestsReachAnHTTP2Backend: an upgrade request (exec,
// port-forward, websocket) is proxied over HTTP/1.1 even though the
// backend speaks HTTP/2, and the upgraded connection carries data both
// ways; before, the proxy answered 503 "invalid Upgrade request header".
func TestUpgradeRequestsReachAnHTTP2Backend(t *testing.T) {
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "SPDY/3.1" {
			http.Error(w, "not an upgrade", http.StatusBadRequest)
			return
		}
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
		_ = rw.Flush()
		line, _ := rw.ReadString('\n')
		_, _ = rw.WriteString("echo " + line)
		_ = rw.Flush()
	}))
	backend.EnableHTTP2 = true
	backend.StartTLS()
	t.Cleanup(backend.Close)
	front := proxyTo(t, backend)

	conn, err := net.Dial("tcp", strings.TrimPrefix(front.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /services/test/exec HTTP/1.1\r\nHost: front\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade through the proxy: %s", resp.Status)
	}
	fmt.Fprintf(conn, "hello\n")
	if got, _ := r.ReadString('\n'); got != "echo hello\n" {
		t.Fatalf("upgraded connection answered %q", got)
	}
}

// TestShortRequestsUseHTTP1AndStreamsHTTP2: a backend that speaks HTTP/2
// gets short requests over kept-alive HTTP/1.1 connections and watches and
// followed logs over HTTP/2, where they share connections.
func TestShortRequestsUseHTTP1AndStreamsHTTP2(t *testing.T) {
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Proto)
	}))
	backend.EnableHTTP2 = true
	backend.StartTLS()
	t.Cleanup(backend.Close)
	front := proxyTo(t, backend)

	for _, tc := range []struct {
		method, path, proto string
	}{
		{http.MethodGet, "/services/test/api/v1/namespaces/default/configmaps/a", "HTTP/1.1"},
		{http.MethodPost, "/services/test/api/v1/namespaces/default/configmaps", "HTTP/1.1"},
		{http.MethodGet, "/services/test/api/v1/configmaps?resourceVersion=0", "HTTP/1.1"},
		{http.MethodGet, "/services/test/api/v1/configmaps?watch=true", "HTTP/2.0"},
		{http.MethodGet, "/services/test/api/v1/watch/configmaps", "HTTP/2.0"},
		{http.MethodGet, "/services/test/api/v1/namespaces/default/pods/p/log?follow=true", "HTTP/2.0"},
	} {
		req, err := http.NewRequest(tc.method, front.URL+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != tc.proto {
			t.Errorf("%s %s reached the backend over %q, want %s", tc.method, tc.path, body, tc.proto)
		}
	}
}
