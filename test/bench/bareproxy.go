package main

// The floor of the front-proxy's added latency: a reverse proxy that does
// nothing but terminate TLS and HTTP/2 and forward to one shard (no
// authentication, no index, no identity headers), run as its own process
// like the front-proxy. --mode=system times it in the same interleaved run
// as the shard directly and the front-proxy, so the part of the proxy's
// added latency that any Go TLS/HTTP/2 hop costs on the machine is known.

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
)

// Environment of the bench re-executed as the bare proxy: the shard's URL
// and the file of the CA that signed its serving certificate.
const (
	bareProxyTargetEnv = "SHARDPLANE_BENCH_BARE_PROXY_TARGET"
	bareProxyCAEnv     = "SHARDPLANE_BENCH_BARE_PROXY_CA"
)

// bareProxyListening prefixes the line the bare proxy prints with its URL.
const bareProxyListening = "bare proxy listening on "

// runBareProxyFromEnv serves the bare proxy when the environment asks for
// it, until the process is ended; it returns false otherwise.
func runBareProxyFromEnv() bool {
	target := os.Getenv(bareProxyTargetEnv)
	if target == "" {
		return false
	}
	if err := serveBareProxy(target, os.Getenv(bareProxyCAEnv)); err != nil {
		fmt.Fprintln(os.Stderr, "bare proxy:", err)
		os.Exit(1)
	}
	return true
}

func serveBareProxy(target, caFile string) error {
	backend, err := url.Parse(target)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if caFile != "" {
		ca, err := os.ReadFile(caFile)
		if err != nil {
			return err
		}
		if !pool.AppendCertsFromPEM(ca) {
			return fmt.Errorf("no certificate in %s", caFile)
		}
	}
	// The front-proxy's transport to the shards, without a client
	// certificate: the client's own bearer token is passed through.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	transport.ForceAttemptHTTP2 = true
	transport.MaxIdleConnsPerHost = 100

	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		return err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler: &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(backend)
				pr.Out.Host = backend.Host
			},
			Transport: transport,
		},
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 30 * time.Second,
	}
	// The certificate goes with the URL, for the bench to trust.
	fmt.Printf("%shttps://%s %s\n", bareProxyListening, ln.Addr(), strings.ReplaceAll(string(certPEM), "\n", "|"))
	return srv.ServeTLS(ln, "", "")
}

// startBareProxy re-executes the bench as the bare proxy in front of the
// shard cfg points at and returns a copy of cfg that goes through it; the
// process ends with ctx.
func startBareProxy(ctx context.Context, cfg *rest.Config, dir string) (*rest.Config, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	caFile := cfg.TLSClientConfig.CAFile
	if len(cfg.TLSClientConfig.CAData) > 0 {
		caFile = dir + "/bare-proxy-shard-ca.crt"
		if err := os.WriteFile(caFile, cfg.TLSClientConfig.CAData, 0o600); err != nil {
			return nil, err
		}
	}
	shard, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), bareProxyTargetEnv+"="+shard.Scheme+"://"+shard.Host, bareProxyCAEnv+"="+caFile)
	cmd.Stderr = os.Stderr
	// It ends with the bench even when the bench exits before ctx's end
	// is seen.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("bare proxy: %w", err)
	}
	rest0, ok := strings.CutPrefix(strings.TrimSpace(line), bareProxyListening)
	if !ok {
		return nil, errors.New("bare proxy: unexpected output " + line)
	}
	proxyURL, certPEM, _ := strings.Cut(rest0, " ")
	bare := rest.CopyConfig(cfg)
	bare.Host = proxyURL + shard.Path
	bare.TLSClientConfig.CAFile = ""
	bare.TLSClientConfig.CAData = []byte(strings.ReplaceAll(certPEM, "|", "\n"))
	bare.TLSClientConfig.ServerName = ""
	return bare, nil
}
