// Package loopback serves a server's own clients (its controllers,
// informers and admission) in memory: the requests go through the same
// handler chain as those on the secure port, but over an in-process
// listener instead of TLS over a TCP socket whose both ends the process pays
// for. Nothing outside the process can reach the listener. Client calls
// the server's REST storages directly, with the one request context
// builder (WithRequest) every in-process call uses.
package loopback

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/streamrequest"
)

// The secure port's limits (k8s.io/apiserver's SecureServingInfo.Serve).
const (
	maxHeaderBytes    = 1 << 20
	idleTimeout       = 90 * time.Second
	readHeaderTimeout = 32 * time.Second
	// http2StreamBuffer is upstream's 99th percentile of object sizes.
	http2StreamBuffer = 256 << 10
	// http2MaxStreams is upstream's default streams per connection.
	http2MaxStreams = 250
)

// idleConnsPerHost keeps a connection per concurrent short request of the
// in-process controllers' workers, so that they are reused, not redialed.
const idleConnsPerHost = 128

// clientIdleTimeout closes a client's connection idle that long. Dialing
// in memory costs a pipe and two goroutines, no handshake: the connections
// a burst opened (55 more after creating and deleting 1,000 workspaces,
// each with three goroutines and four buffers) go soon after it, not after
// the secure port's 90 s.
const clientIdleTimeout = 10 * time.Second

// loopbackAddr is the address the in-memory connections report: that of
// the loopback clients' TCP connections before, so that what the handler
// chain logs and audits (the source IP) stays the same.
var loopbackAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}

// Server serves a handler to in-memory clients. Build the clients with
// ClientConfig, serve with Serve, stop with Shutdown.
type Server struct {
	listener *pipeListener
	server   *http.Server
	// streams is done when Shutdown starts: it ends the watches, which
	// would otherwise hold the shutdown until its deadline.
	streams     context.Context
	stopStreams context.CancelFunc
	// transport sends requests through the listener.
	transport *transport
}

// New returns a server with its listener; clients built from ClientConfig
// wait for Serve before their first request is answered.
func New() *Server {
	l := newPipeListener()
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) { return l.DialContext(ctx) }
	var h2 http.Protocols
	h2.SetUnencryptedHTTP2(true)
	var h1 http.Protocols
	h1.SetHTTP1(true)
	http2Config := &http.HTTP2Config{
		MaxConcurrentStreams:          http2MaxStreams,
		MaxReceiveBufferPerStream:     http2StreamBuffer,
		MaxReceiveBufferPerConnection: http2StreamBuffer * http2MaxStreams,
		MaxReadFrameSize:              http2StreamBuffer,
	}
	var serverProtocols http.Protocols
	serverProtocols.SetHTTP1(true)
	serverProtocols.SetUnencryptedHTTP2(true)
	streams, stopStreams := context.WithCancel(context.Background())
	return &Server{
		listener:    l,
		streams:     streams,
		stopStreams: stopStreams,
		server: &http.Server{
			MaxHeaderBytes:    maxHeaderBytes,
			IdleTimeout:       idleTimeout,
			ReadHeaderTimeout: readHeaderTimeout,
			Protocols:         &serverProtocols,
			HTTP2:             http2Config,
		},
		transport: &transport{
			// Nothing leaves the process: compressing would only cost CPU.
			short: &http.Transport{
				DialContext: dial, Protocols: &h1, DisableCompression: true,
				MaxIdleConnsPerHost: idleConnsPerHost, IdleConnTimeout: clientIdleTimeout,
			},
			stream: &http.Transport{
				DialContext: dial, Protocols: &h2, DisableCompression: true,
				HTTP2: http2Config, IdleConnTimeout: clientIdleTimeout,
			},
		},
	}
}

// ClientConfig returns a copy of base (a loopback configuration: host,
// bearer token, rate limits) whose requests go to this server in memory,
// over plain HTTP.
func (s *Server) ClientConfig(base *rest.Config) *rest.Config {
	c := rest.CopyConfig(base)
	c.Host = plainHTTP(c.Host)
	c.TLSClientConfig = rest.TLSClientConfig{}
	c.Transport = s.transport
	c.Dial = nil
	c.Proxy = nil
	return c
}

// plainHTTP returns host as an http:// URL with the same authority and path.
func plainHTTP(host string) string {
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		u = &url.URL{Host: strings.TrimPrefix(host, "//")}
	}
	u.Scheme = "http"
	return u.String()
}

// Serve serves handler to the in-memory clients until Shutdown.
func (s *Server) Serve(handler http.Handler) error {
	s.server.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if streamrequest.Is(r) {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(s.streams, cancel)()
			r = r.WithContext(ctx)
		}
		handler.ServeHTTP(w, r)
	})
	err := s.server.Serve(s.listener)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting connections, ends the watches, waits until the
// active requests end or ctx is done, then closes every connection.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopStreams()
	err := s.server.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.server.Close())
	}
	s.transport.CloseIdleConnections()
	// Dials before Serve (or after it failed) end too.
	return errors.Join(err, s.listener.Close())
}

// transport sends short requests over HTTP/1.1, one connection each and no
// stream multiplexing to pay for, and streams (watches) multiplexed over
// HTTP/2, so that each of the many long watches costs no connection of its
// own (and no buffers).
type transport struct {
	short, stream *http.Transport
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if streamrequest.Multiplexed(req) {
		return t.stream.RoundTrip(req)
	}
	return t.short.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of both transports.
func (t *transport) CloseIdleConnections() {
	t.short.CloseIdleConnections()
	t.stream.CloseIdleConnections()
}

// pipeListener accepts the server ends of in-memory connections (net.Pipe:
// no buffers of their own, and deadlines as net/http uses them, past ones
// to interrupt a read included, which grpc's bufconn gets wrong: a past
// deadline set just before a cleared one may still fire and fail the next
// read).
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	close sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// DialContext connects to the listener: it returns once Accept took the
// other end, ctx is done or the listener is closed.
func (l *pipeListener) DialContext(ctx context.Context) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- addressedConn{server}:
		return addressedConn{client}, nil
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	case <-l.done:
		client.Close()
		server.Close()
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.close.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return loopbackAddr }

// addressedConn is an in-memory connection with loopback addresses.
type addressedConn struct{ net.Conn }

func (addressedConn) LocalAddr() net.Addr  { return loopbackAddr }
func (addressedConn) RemoteAddr() net.Addr { return loopbackAddr }
