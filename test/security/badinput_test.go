package security

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shardplane/shardplane/pkg/frontproxy"
)

// TestBadInputGetsAClearRefusal: oversize and deeply nested bodies,
// invalid YAML, a YAML bomb, unknown fields under strict validation and
// huge selectors get a 4xx naming the problem, through the front-proxy
// and directly at the shard, and the processes keep serving.
func TestBadInputGetsAClearRefusal(t *testing.T) {
	ctx := testContext(t)
	a, b := twoTenants(t)
	token := sys.UserToken(a.user)
	configMap := func(data string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad-input"},"data":{"v":"` + data + `"}}`)
	}
	deep := 20000
	if long {
		deep = 200000
	}
	bomb := "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	for i := 'b'; i <= 'i'; i++ {
		prev := string(i - 1)
		bomb += fmt.Sprintf("%c: &%c [*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s,*%s]\n", i, i, prev, prev, prev, prev, prev, prev, prev, prev, prev)
	}
	selector := strings.Repeat("k=v,", 20000)
	cases := []struct {
		what        string
		method      string
		query       string
		contentType string
		body        []byte
		// codes are the acceptable answers; want is a piece of the message.
		codes []int
		want  string
	}{
		{"4 MiB body", http.MethodPost, "", "", configMap(strings.Repeat("x", 4<<20)), []int{413, 422}, ""},
		{"16 MiB body", http.MethodPost, "", "", configMap(strings.Repeat("x", 16<<20)), []int{413}, ""},
		{"deeply nested JSON", http.MethodPost, "", "", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":` + strings.Repeat("[", deep) + strings.Repeat("]", deep) + `}`), []int{400, 422}, ""},
		{"invalid JSON", http.MethodPost, "", "", []byte(`{"apiVersion":"v1","kind":"ConfigMap",`), []int{400}, ""},
		{"invalid YAML", http.MethodPost, "", "application/yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: [\n  name: x\n"), []int{400}, ""},
		{"YAML bomb", http.MethodPost, "", "application/yaml", []byte(bomb), []int{400, 413, 422}, ""},
		{"unknown field, strict", http.MethodPost, "fieldValidation=Strict", "", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"strict"},"bogus":1}`), []int{400}, "unknown field"},
		{"duplicate field, strict", http.MethodPost, "fieldValidation=Strict", "", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"strict","name":"twice"}}`), []int{400}, "duplicate field"},
		{"wrong kind", http.MethodPost, "", "", []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"wrong"}}`), []int{400}, ""},
		{"unknown content type", http.MethodPost, "", "application/x-evil", configMap("x"), []int{415}, ""},
		{"huge label selector", http.MethodGet, "labelSelector=" + selector, "", nil, []int{200, 400, 414, 431}, ""},
		{"invalid label selector", http.MethodGet, "labelSelector=" + strings.Repeat("(", 10000), "", nil, []int{400}, ""},
		{"huge field selector", http.MethodGet, "fieldSelector=" + strings.Repeat("metadata.name=x,", 20000), "", nil, []int{200, 400, 414, 431}, ""},
		{"unsupported field selector", http.MethodGet, "fieldSelector=data.v%3Dx", "", nil, []int{400}, "not a known field selector"},
		{"2 MiB query", http.MethodGet, "labelSelector=" + strings.Repeat("a", 2<<20), "", nil, []int{400, 414, 431}, ""},
		{"negative limit", http.MethodGet, "limit=-5", "", nil, []int{200, 400}, ""},
		{"garbage resourceVersion", http.MethodGet, "resourceVersion=%FF%FE", "", nil, []int{400}, ""},
		{"garbage timeoutSeconds", http.MethodGet, "watch=1&timeoutSeconds=-1", "", nil, []int{200, 400}, ""},
	}
	before := rssOf(t, "front-proxy") + rssOf(t, "root")
	for _, in := range []struct{ base, cluster string }{{sys.URL(t), a.path.String()}, {sys.ShardURL(t, a.shard), a.cluster.String()}} {
		for _, c := range cases {
			h := bearer(token)
			if c.contentType != "" {
				h.Set("Content-Type", c.contentType)
			}
			ans := check(ctx, t, probe{what: c.what, method: c.method, base: in.base, path: "/clusters/" + in.cluster + "/api/v1/namespaces/default/configmaps",
				query: c.query, header: h, body: c.body, victim: b, expect: anyAnswer})
			ok := false
			for _, code := range c.codes {
				ok = ok || ans.code == code
			}
			if !ok {
				t.Errorf("%s at %s: %d, want one of %v: %s", c.what, in.base, ans.code, c.codes, truncate(ans.body, 300))
			}
			if c.want != "" && !strings.Contains(ans.body, c.want) {
				t.Errorf("%s at %s: the message does not say %q: %s", c.what, in.base, c.want, truncate(ans.body, 300))
			}
		}
	}
	stillServing(ctx, t, a)
	t.Logf("RSS of front-proxy + root shard: %d MiB before, %d MiB after", before>>20, (rssOf(t, "front-proxy")+rssOf(t, "root"))>>20)
}

// TestThousandsOfWatchesFromOneClient: one user opens more watches at
// once through the front-proxy than it allows one user: the first are
// served (200), the rest refused with 429, the processes keep serving
// everyone, and their memory stays bounded. (Before the bound, 5000
// watches made the front-proxy's connections to the shard time out and
// other users got 503.)
func TestThousandsOfWatchesFromOneClient(t *testing.T) {
	ctx := testContext(t)
	a, _ := twoTenants(t)
	n := frontproxy.DefaultMaxWatchesPerUser + 200
	if long {
		n = 5000
	}
	processes := []string{"front-proxy", a.shard}
	before := map[string]int64{}
	for _, p := range processes {
		before[p] = rssOf(t, p)
	}
	// One HTTP/2 client, as a single kubectl or controller would be.
	clients.Lock()
	pool := clients.pool
	clients.Unlock()
	if pool == nil {
		clientFor(t, nil)
		pool = clients.pool
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true}}
	watchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	watchURL := sys.URL(t) + "/clusters/" + a.path.String() + "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=300"
	token := sys.UserToken(a.user)
	codes := map[int]int{}
	var mu sync.Mutex
	var opened, done sync.WaitGroup
	for i := 0; i < n; i++ {
		opened.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			first := true
			answered := func(code int) {
				mu.Lock()
				codes[code]++
				mu.Unlock()
				if first {
					first = false
					opened.Done()
				}
			}
			req, _ := http.NewRequestWithContext(watchCtx, http.MethodGet, watchURL, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := client.Do(req)
			if err != nil {
				answered(0)
				return
			}
			answered(resp.StatusCode)
			if resp.StatusCode == http.StatusOK {
				// Hold the watch open and drain it until the test ends.
				r := bufio.NewReader(resp.Body)
				for {
					if _, err := r.ReadBytes('\n'); err != nil {
						break
					}
				}
			}
			resp.Body.Close()
		}()
	}
	opened.Wait()
	during := map[string]int64{}
	for _, p := range processes {
		during[p] = rssOf(t, p)
	}
	stillServing(ctx, t, a)
	cancel()
	done.Wait()
	client.CloseIdleConnections()
	for code, count := range codes {
		if code != http.StatusOK && code != http.StatusTooManyRequests {
			t.Errorf("%d of %d watches answered %d", count, n, code)
		}
	}
	if codes[http.StatusOK] > frontproxy.DefaultMaxWatchesPerUser || codes[http.StatusTooManyRequests] < n-frontproxy.DefaultMaxWatchesPerUser {
		t.Errorf("%d watches: %d served, %d refused with 429; want at most %d served", n, codes[http.StatusOK], codes[http.StatusTooManyRequests], frontproxy.DefaultMaxWatchesPerUser)
	}
	time.Sleep(2 * time.Second)
	stillServing(ctx, t, a)
	for _, p := range processes {
		after := rssOf(t, p)
		t.Logf("%s RSS: %d MiB before, %d MiB with %d watches, %d MiB after", p, before[p]>>20, during[p]>>20, n, after>>20)
		// Bounded: well under 1 MiB per watch.
		if grown := during[p] - before[p]; grown > int64(n)<<20 {
			t.Errorf("%s grew by %d MiB for %d watches", p, grown>>20, n)
		}
	}
	t.Logf("%d watches from one client: answers %v", n, codes)
}

// stillServing checks that the tenant's workspace answers through the
// front-proxy and at its shard.
func stillServing(ctx context.Context, t *testing.T, tn *tenant) {
	t.Helper()
	for _, in := range []struct{ base, cluster string }{{sys.URL(t), tn.path.String()}, {sys.ShardURL(t, tn.shard), tn.cluster.String()}} {
		check(ctx, t, probe{what: "still serving", method: http.MethodGet, base: in.base, path: "/clusters/" + in.cluster + "/api/v1/namespaces/default/configmaps/" + tn.configMap(),
			header: bearer(sys.UserToken(tn.user)), expect: served})
	}
}

// rssOf is the resident set size of one process of the system, in bytes.
func rssOf(t *testing.T, process string) int64 {
	t.Helper()
	pid, err := os.ReadFile(filepath.Join(sys.Dir, process+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	status, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "status"))
	if err != nil {
		t.Fatalf("%s is not running: %v", process, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS for %s", process)
	return 0
}
