package security

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardplane/shardplane/pkg/rootdir"
)

// expect is what a probe's answer must be besides free of the victim's
// markers.
type expect int

const (
	// anyAnswer: any status but 5xx (a trick that may land in the
	// attacker's own workspace).
	anyAnswer expect = iota
	// refused: not 2xx, not 5xx, not 101.
	refused
	// served: 2xx (the attacker's own workspace, a positive control).
	served
)

// probe is one request and what its answer must be.
type probe struct {
	what   string
	method string
	// base is scheme and host of the process addressed.
	base string
	// path is sent as is, tricks included; query is the raw query.
	path, query string
	// header is sent as is; a body without a Content-Type key goes as
	// JSON, and a Content-Type key without values sends none.
	header http.Header
	body   []byte
	cert   *tls.Certificate
	// victim's markers must not appear in the answer.
	victim *tenant
	expect expect
	// verify, when set, says what else is wrong with the answer ("" for
	// nothing), such as a status code other than the one kube-apiserver
	// gives.
	verify func(answer) string
}

// answer is a probe's response.
type answer struct {
	code   int
	header http.Header
	body   string
}

// tally counts probes, leaks, 5xx answers and the panics the servers
// logged, for the package's summary line.
type tally struct {
	mu       sync.Mutex
	requests int
	leaks    int
	errors5x int
	panics   int
	codes    map[int]int
}

var results = &tally{codes: map[int]int{}}

func (r *tally) add(code int, leak, server bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	r.codes[code]++
	if leak {
		r.leaks++
	}
	if server {
		r.errors5x++
	}
}

func (r *tally) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	codes := make([]int, 0, len(r.codes))
	for c := range r.codes {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d:%d", c, r.codes[c]))
	}
	return fmt.Sprintf("%d requests, %d leaks, %d 5xx, %d panics in server logs (answers by status %s)", r.requests, r.leaks, r.errors5x, r.panics, strings.Join(parts, " "))
}

// failed tells whether the package must fail whatever its tests said: a
// 5xx answer or a panic in a server's log.
func (r *tally) failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.errors5x > 0 || r.panics > 0
}

// clients are HTTP/1.1 clients that trust the front-proxy and every
// shard, by client certificate (nil: none).
var clients struct {
	sync.Mutex
	pool   *x509.CertPool
	byCert map[*tls.Certificate]*http.Client
}

func clientFor(t testing.TB, cert *tls.Certificate) *http.Client {
	t.Helper()
	clients.Lock()
	defer clients.Unlock()
	if clients.pool == nil {
		clients.pool = x509.NewCertPool()
		// shards-ca.crt holds the shards' and their views' certificates.
		for _, file := range []string{filepath.Join(sys.Dir, "front-proxy", rootdir.ServingCertPairName+".crt"), filepath.Join(sys.Dir, "shards-ca.crt"),
			filepath.Join(sys.CacheDir(), rootdir.ServingCertPairName+".crt")} {
			pem, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			clients.pool.AppendCertsFromPEM(pem)
		}
		clients.byCert = map[*tls.Certificate]*http.Client{}
	}
	if c, ok := clients.byCert[cert]; ok {
		return c
	}
	cfg := &tls.Config{RootCAs: clients.pool, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	c := &http.Client{
		Timeout: 30 * time.Second,
		// HTTP/1.1 sends the path exactly as given; redirects are answers.
		Transport:     &http.Transport{TLSClientConfig: cfg, TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}, MaxIdleConnsPerHost: 16},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	clients.byCert[cert] = c
	return c
}

// send sends a probe and returns its answer (code 0: no answer).
func send(ctx context.Context, t testing.TB, p probe) answer {
	t.Helper()
	u, err := url.Parse(p.base)
	if err != nil {
		t.Fatal(err)
	}
	u.Opaque, u.RawQuery = p.path, p.query
	req, err := http.NewRequestWithContext(ctx, p.method, p.base, bytes.NewReader(p.body))
	if err != nil {
		t.Fatal(err)
	}
	req.URL = u
	for k, v := range p.header {
		req.Header[k] = v
	}
	if _, set := req.Header["Content-Type"]; p.body != nil && !set {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := clientFor(t, p.cert).Do(req)
	if err != nil {
		return answer{body: err.Error()}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return answer{code: resp.StatusCode, header: resp.Header, body: string(body)}
}

// check sends a probe and fails the test on a leak or a 5xx.
func check(ctx context.Context, t testing.TB, p probe) answer {
	t.Helper()
	a := send(ctx, t, p)
	var problems []string
	request := p.path + "?" + p.query + string(p.body) + fmt.Sprint(p.header)
	if p.victim != nil {
		for _, m := range p.victim.markers() {
			if strings.Contains(a.body, m) && !strings.Contains(request, m) {
				problems = append(problems, fmt.Sprintf("LEAK: the answer holds %q of tenant %s", m, p.victim.user))
			}
		}
	}
	leak := len(problems) > 0
	ok2xx := a.code >= 200 && a.code < 300
	switch {
	case a.code == 0:
		problems = append(problems, "no answer: "+a.body)
	case a.code == http.StatusNotImplemented && strings.Contains(a.body, "is a shard-level endpoint"):
		// Documented: /metrics and /debug answer 501 inside a workspace.
		if p.expect == served {
			problems = append(problems, "refused (501), want served")
		}
	case a.code == http.StatusGatewayTimeout && strings.Contains(a.body, "ResourceVersionTooLarge"):
		// As kube-apiserver: a resourceVersion (or continue token) from
		// another shard can be ahead of this shard's; the list waits for it
		// a few seconds, then answers 504 ResourceVersionTooLarge.
	case a.code >= 500:
		problems = append(problems, fmt.Sprintf("server error %d", a.code))
	case p.expect == refused && (ok2xx || a.code == http.StatusSwitchingProtocols):
		leak = true
		problems = append(problems, fmt.Sprintf("LEAK: served (%d) instead of refused", a.code))
	case p.expect == served && !ok2xx:
		problems = append(problems, fmt.Sprintf("refused (%d), want served", a.code))
	}
	if p.verify != nil && a.code != 0 && a.code < 500 {
		if problem := p.verify(a); problem != "" {
			problems = append(problems, problem)
		}
	}
	results.add(a.code, leak, len(problems) > 0 && a.code >= 500)
	if len(problems) > 0 {
		t.Errorf("%s: %s %s%s?%s: %s\n  answer: %s", p.what, p.method, p.base, p.path, p.query, strings.Join(problems, "; "), truncate(a.body, 600))
	}
	return a
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// bearer is the Authorization header of a token.
func bearer(token string, more ...string) http.Header {
	h := http.Header{"Authorization": {"Bearer " + token}}
	for i := 0; i+1 < len(more); i += 2 {
		h.Add(more[i], more[i+1])
	}
	return h
}

// runAll sends probes with a few workers.
func runAll(ctx context.Context, t *testing.T, probes []probe) {
	t.Helper()
	work := make(chan probe)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				check(ctx, t, p)
			}
		}()
	}
	for _, p := range probes {
		work <- p
	}
	close(work)
	wg.Wait()
}
