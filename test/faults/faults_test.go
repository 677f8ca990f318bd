package faults

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardplane/shardplane/pkg/rootdir"
)

// readyURL is where a restarted process of the system is ready.
func readyURL(t *testing.T, process string) string {
	switch process {
	case "cache":
		return sys.CacheURL(t) + "/readyz"
	case "front-proxy":
		return sys.URL(t) + "/readyz"
	}
	return sys.ShardURL(t, process) + "/readyz"
}

// crash kills a process with SIGKILL, lets the writers run into the
// outage for a moment and starts it again.
func crash(t *testing.T, process string) {
	t.Helper()
	sys.KillProcess(t, process)
	time.Sleep(time.Second)
	sys.RestartExited(t, process, readyURL(t, process))
}

// TestAcknowledgedWritesSurviveCrashes: writers acknowledge writes through
// the front-proxy while processes are killed with SIGKILL and restarted
// in turn (lean: shard-1, the cache server and the front-proxy; long:
// also the root shard, then all again); afterwards every acknowledged write is there, no
// process needed repair, and no answer on the way was a 403 or 404.
func TestAcknowledgedWritesSurviveCrashes(t *testing.T) {
	ctx := testContext(t)
	onShard1, _ := tenantWorkspace(ctx, t, "shard-1", "user-1")
	onRoot, _ := tenantWorkspace(ctx, t, "root", "user-1")
	w1, stop1 := startWriter(ctx, t, "shard1-writer", sys.UserConfig(t, "user-1", onShard1.String()))
	w2, stop2 := startWriter(ctx, t, "root-writer", sys.UserConfig(t, "user-1", onRoot.String()))
	w1.waitAcked(ctx, t, 20)

	faults := []string{"shard-1", "cache", "front-proxy"}
	if long {
		faults = append(faults, "root", "front-proxy", "shard-1", "cache", "root")
	}
	for _, process := range faults {
		crash(t, process)
		w1.waitAcked(ctx, t, 20)
		w2.waitAcked(ctx, t, 20)
	}
	stop1()
	stop2()
	lost := checkAcked(ctx, t, w1, sys.AdminConfig(t, onShard1.String())) + checkAcked(ctx, t, w2, sys.AdminConfig(t, onRoot.String()))
	t.Logf("%s", w1.summary())
	t.Logf("%s", w2.summary())
	t.Logf("%d acknowledged writes, %d lost, %d faults survived", len(w1.ackedNames())+len(w2.ackedNames()), lost, len(faults))
}

// TestOtherShardsServeWithRootAndCacheDown: with the root shard and the
// cache server down, shard-1's workspaces are read and written through
// the front-proxy as before.
func TestOtherShardsServeWithRootAndCacheDown(t *testing.T) {
	ctx := testContext(t)
	path, _ := tenantWorkspace(ctx, t, "shard-1", "user-2")
	client := kube(t, sys.UserConfig(t, "user-2", path.String()))

	sys.KillProcess(t, "cache")
	sys.KillProcess(t, "root")
	restarted := false
	defer func() {
		if !restarted {
			sys.RestartExited(t, "root", readyURL(t, "root"))
		}
	}()
	for i := 0; i < 10; i++ {
		name := fmt.Sprintf("while-root-down-%d", i)
		if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s with root and cache down: %v", name, err)
		}
		if _, err := client.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Fatalf("get %s with root and cache down: %v", name, err)
		}
	}
	if _, err := client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list with root and cache down: %v", err)
	}
	sys.RestartExited(t, "root", readyURL(t, "root"))
	sys.RestartExited(t, "cache", readyURL(t, "cache"))
	restarted = true
}

// TestRequestsDuringRestartAreNeverMisjudged: requests that reach a shard
// while it starts (listening, caches not synced yet) are answered 503 or
// 429, never 403 or 404: the workspace exists and the user may write it.
func TestRequestsDuringRestartAreNeverMisjudged(t *testing.T) {
	ctx := testContext(t)
	path, cluster := tenantWorkspace(ctx, t, "shard-1", "user-3")
	through := map[string]*requestLog{
		"front-proxy": {},
		"shard":       {},
	}
	direct := sys.UserConfig(t, "user-3", "")
	direct.Host = cluster.Path().URL(sys.ShardURL(t, "shard-1"))
	direct.TLSClientConfig.CAData, direct.TLSClientConfig.CAFile = nil, filepath.Join(sys.ShardDir("shard-1"), rootdir.ServingCertPairName+".crt")
	hammerCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for via, log := range through {
		cfg := sys.UserConfig(t, "user-3", path.String())
		if via == "shard" {
			cfg = direct
		}
		c := kube(t, cfg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; hammerCtx.Err() == nil; i++ {
				reqCtx, cancel := context.WithTimeout(hammerCtx, 10*time.Second)
				_, err := c.CoreV1().ConfigMaps("default").Create(reqCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("restart-%s-%d", via, i)}}, metav1.CreateOptions{})
				cancel()
				log.record(err)
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	for _, kill := range []bool{true, false} {
		if kill {
			sys.KillProcess(t, "shard-1")
		} else {
			sys.StopProcess(t, "shard-1")
		}
		sys.RestartExited(t, "shard-1", readyURL(t, "shard-1"))
		// A little longer: the front-proxy's index relists the shard.
		time.Sleep(2 * time.Second)
	}
	stop()
	wg.Wait()
	for via, log := range through {
		t.Logf("through %s: %s", via, log.summary())
		if log.ok == 0 {
			t.Errorf("through %s: no write succeeded", via)
		}
		for _, m := range log.misjudged {
			t.Errorf("through %s: a starting shard answered %s", via, m)
		}
	}
}

// requestLog counts the answers of a stream of requests.
type requestLog struct {
	mu        sync.Mutex
	ok        int
	codes     map[int]int
	misjudged []string
}

func (l *requestLog) record(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.codes == nil {
		l.codes = map[int]int{}
	}
	if err == nil {
		l.ok++
		return
	}
	var status apierrors.APIStatus
	code := 0
	if errors.As(err, &status) {
		code = int(status.Status().Code)
	}
	l.codes[code]++
	if code == http.StatusForbidden || code == http.StatusNotFound || code == http.StatusUnauthorized {
		l.misjudged = append(l.misjudged, err.Error())
	}
}

func (l *requestLog) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprintf("%d ok, failures by code %v", l.ok, l.codes)
}
