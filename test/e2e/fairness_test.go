package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/fairness"
	"github.com/shardplane/shardplane/test/framework"
)

// TestTenantFloodIsRefusedWhileAnotherTenantIsServed: API Priority and
// Fairness keys tenants' flows by workspace. A shard with three seats, whose
// operator tightened the tenants' priority level, answers a tenant flooding
// it with 429 and Retry-After, while another tenant's requests keep
// succeeding and the system's own work (a new workspace becoming Ready)
// goes on. The configuration is the shard's, in system:admin: tenants get
// 404 for it.
func TestTenantFloodIsRefusedWhileAnotherTenantIsServed(t *testing.T) {
	t.Parallel()
	s := framework.StartShard(t,
		framework.WithTokenUsers(framework.TokenUser{Name: "tenant-a"}, framework.TokenUser{Name: "tenant-b"}),
		framework.WithArgs("--max-requests-inflight=2", "--max-mutating-requests-inflight=1"))
	ctx := testContext(t)
	admin := newKCPREST(t, s.ClientConfig(t, "base"))
	a := readyWorkspace(ctx, t, admin, "root", framework.UniqueClusterName("flood"), nil)
	b := readyWorkspace(ctx, t, admin, "root", framework.UniqueClusterName("victim"), nil)
	for _, tenant := range []struct {
		ws   ws
		user string
	}{{a, "tenant-a"}, {b, "tenant-b"}} {
		grantAccessAndView(ctx, t, kubeClient(t, s, "base", tenant.ws.path()), tenant.user)
	}

	// The operator's tuning: the shard keeps its configuration unless an
	// object says autoupdate-spec "false". One queue slot per flow here, so
	// a flood overflows at once.
	config := newKubeClient(t, s.ClusterConfig(t, "shard-base", string(fairness.ConfigCluster))).FlowcontrolV1()
	framework.Eventually(t, func(ctx context.Context) error {
		pl, err := config.PriorityLevelConfigurations().Get(ctx, fairness.WorkspacesPriorityLevel, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pl.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = "false"
		pl.Spec.Limited.LimitResponse.Queuing = &flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: 2, QueueLengthLimit: 1}
		_, err = config.PriorityLevelConfigurations().Update(ctx, pl, metav1.UpdateOptions{})
		return err
	}, "the shard never wrote its priority level %s", fairness.WorkspacesPriorityLevel)
	if _, err := config.FlowSchemas().Get(ctx, fairness.WorkspacesFlowSchema, metav1.GetOptions{}); err != nil {
		t.Fatalf("the shard's flow schema %s: %v", fairness.WorkspacesFlowSchema, err)
	}

	// Tenants cannot see it: as for any resource a server lacks, 403 for
	// one without permission, 404 for a workspace admin.
	if _, err := tokenUserClient(t, s, "tenant-b", b.path()).FlowcontrolV1().FlowSchemas().List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a tenant lists flow schemas: %v, want 403", err)
	}
	if _, err := kubeClient(t, s, "base", b.path()).FlowcontrolV1().PriorityLevelConfigurations().List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("priority levels in a workspace: %v, want 404", err)
	}

	// Raw requests: client-go would retry the 429s by itself.
	get := func(user, path string) (int, string) {
		cfg := s.TokenUserConfig(t, user, path)
		rt, err := rest.TransportFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/api/v1/namespaces/default/configmaps", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if err != nil {
			return 0, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Retry-After")
	}
	for _, tenant := range []struct {
		user, path string
	}{{"tenant-a", a.path()}, {"tenant-b", b.path()}} {
		framework.Eventually(t, func(context.Context) error {
			if code, _ := get(tenant.user, tenant.path); code != http.StatusOK {
				return fmt.Errorf("status %d", code)
			}
			return nil
		}, "%s never listed configmaps in its workspace", tenant.user)
	}

	floodCtx, stopFlood := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var refused, refusedWithoutRetryAfter atomic.Int64
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for floodCtx.Err() == nil {
				if code, retryAfter := get("tenant-a", a.path()); code == http.StatusTooManyRequests {
					refused.Add(1)
					if retryAfter == "" {
						refusedWithoutRetryAfter.Add(1)
					}
				}
			}
		}()
	}
	// Under the flood: the other tenant is served, every time, and the
	// system's controllers still make a workspace Ready.
	victimFailures := 0
	deadline := time.Now().Add(5 * time.Second)
	for i := 0; time.Now().Before(deadline) || refused.Load() == 0; i++ {
		if code, _ := get("tenant-b", b.path()); code != http.StatusOK {
			victimFailures++
			t.Logf("tenant-b's request %d under the flood: status %d", i, code)
		}
		if time.Now().After(deadline.Add(time.Minute)) {
			break
		}
	}
	readyWorkspace(ctx, t, admin, "root", framework.UniqueClusterName("during-flood"), nil)
	stopFlood()
	wg.Wait()
	if refused.Load() == 0 {
		t.Error("the flooding tenant was never answered 429")
	}
	if n := refusedWithoutRetryAfter.Load(); n > 0 {
		t.Errorf("%d refusals without Retry-After", n)
	}
	if victimFailures > 0 {
		t.Errorf("the other tenant failed %d times under the flood", victimFailures)
	}
	t.Logf("flood: %d requests of tenant-a refused", refused.Load())
}
