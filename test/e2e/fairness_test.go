package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/fairness"
	"github.com/shardplane/shardplane/test/framework"
)

// TestOneTenantCannotStarveAnother starts one shard with three seats, a
// default total object limit of 60 per workspace and a fast object count
// scan, and runs the checks of fairness and limits on it in turn.
func TestOneTenantCannotStarveAnother(t *testing.T) {
	t.Parallel()
	s := framework.StartShard(t,
		framework.WithTokenUsers(framework.TokenUser{Name: "tenant-a"}, framework.TokenUser{Name: "tenant-b"}),
		framework.WithArgs("--max-requests-inflight=2", "--max-mutating-requests-inflight=1",
			fmt.Sprintf("--logical-cluster-total-object-limit=%d", defaultObjectLimit), "--logical-cluster-object-count-scan-interval=1s"))
	t.Run("a flood is refused while another tenant is served", func(t *testing.T) { testTenantFloodIsRefused(t, s) })
	t.Run("total object count limit", func(t *testing.T) { testTotalObjectCountLimit(t, s) })
	t.Run("watches per user and request bodies", func(t *testing.T) { testWatchAndBodyLimits(t, s) })
	t.Run("share of request time", func(t *testing.T) { testRequestTimeShare(t, s) })
}

// defaultObjectLimit is the shard's --logical-cluster-total-object-limit.
const defaultObjectLimit = 60

// testTenantFloodIsRefused: API Priority and Fairness keys tenants' flows
// by workspace. A shard with three seats, whose operator tightened the
// tenants' priority level, answers a tenant flooding it with 429 and
// Retry-After, while another tenant's requests keep succeeding and the
// system's own work (a new workspace becoming Ready) goes on. The
// configuration is the shard's, in system:admin: tenants cannot see it.
func testTenantFloodIsRefused(t *testing.T, s *framework.Shard) {
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
	for _, path := range []string{b.path(), "root"} {
		resources, err := kubeClient(t, s, "base", path).Discovery().ServerPreferredResources()
		if err != nil {
			t.Fatalf("discovery of %s: %v", path, err)
		}
		for _, list := range resources {
			if strings.HasPrefix(list.GroupVersion, flowcontrolv1.GroupName+"/") && len(list.APIResources) > 0 {
				t.Errorf("the discovery of %s lists %v of %s", path, list.APIResources, list.GroupVersion)
			}
		}
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
	// The operator's view per workspace: APF's request dump names each
	// request's flow, <logical cluster>/<user>.
	raw := newKubeClient(t, s.ClientConfig(t, "shard-base")).CoreV1().RESTClient()
	framework.Eventually(t, func(ctx context.Context) error {
		dump, err := raw.Get().AbsPath("/debug/api_priority_and_fairness/dump_requests").DoRaw(ctx)
		if err != nil {
			return err
		}
		if !strings.Contains(string(dump), a.cluster()+"/tenant-a") {
			return fmt.Errorf("no request of flow %s/tenant-a in the dump", a.cluster())
		}
		return nil
	}, "APF's dump never showed the flooding workspace's flow")
	stopFlood()
	wg.Wait()
	// /metrics counts by priority level and flow schema, never by workspace.
	metrics, err := raw.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(metrics), `apiserver_flowcontrol_rejected_requests_total{flow_schema="workspaces",priority_level="workspaces"`) {
		t.Error("/metrics has no rejected requests of the workspaces priority level")
	}
	for _, cluster := range []string{a.cluster(), b.cluster()} {
		if strings.Contains(string(metrics), cluster) {
			t.Errorf("/metrics names the workspace %s: series would grow with workspaces", cluster)
		}
	}
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

// testTotalObjectCountLimit mirrors kcp's
// TestLogicalClusterTotalObjectCountLimit and
// TestLogicalClusterTotalObjectCountLimitShardDefault (test/e2e/quota) on
// one shard: kcp-admin limits a workspace by core.kcp.io/max-total-objects,
// creates are refused with kcp's message at the limit, a delete frees a
// slot, the value 0 opts out, another workspace keeps the shard's default,
// which root is spared, and the annotation overrides it. A workspace's own
// admin cannot raise its limit.
func testTotalObjectCountLimit(t *testing.T, s *framework.Shard) {
	ctx := testContext(t)
	admin := newKCPREST(t, s.ClientConfig(t, "base"))
	org := readyWorkspace(ctx, t, admin, "root", framework.UniqueClusterName("quota-org"), nil)
	ws := readyWorkspace(ctx, t, admin, org.path(), "limited", nil)
	configMaps := kubeClient(t, s, "base", ws.path()).CoreV1().ConfigMaps("default")
	const limit = 40
	setMaxTotalObjects(ctx, t, s, ws.path(), fmt.Sprint(limit))

	// Its own admin cannot raise it: the annotation is kcp-admin's.
	workspaceAdmin := kubeClient(t, s, "base", ws.path())
	grantAccessAndView(ctx, t, workspaceAdmin, "tenant-b")
	bindClusterRole(ctx, t, workspaceAdmin, "tenant-b-admin", "cluster-admin", userSubject("tenant-b"))
	tenantCfg := rest.AnonymousClientConfig(s.ClientConfig(t, "base"))
	tenantCfg.BearerToken = s.UserToken(t, "tenant-b")
	tenant := newKCPREST(t, tenantCfg)
	lc := &corev1alpha1.LogicalCluster{}
	eventuallyAllowed(ctx, t, "tenant-b reads its LogicalCluster", func(ctx context.Context) error {
		return tenant.get(ctx, ws.path(), logicalClustersGVR, corev1alpha1.LogicalClusterName, lc)
	})
	lc.Annotations[corev1alpha1.MaxTotalObjectsAnnotationKey] = "0"
	if err := tenant.update(ctx, ws.path(), logicalClustersGVR, lc.Name, lc, &corev1alpha1.LogicalCluster{}); !apierrors.IsForbidden(err) {
		t.Errorf("the workspace's admin lifts its limit: %v, want 403", err)
	}

	create := func(name string) error {
		_, err := configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		return err
	}
	// fillUp creates until a create is refused for the limit, and returns
	// the names created.
	fillUp := func(prefix string, max int) []string {
		t.Helper()
		var created []string
		framework.Eventually(t, func(context.Context) error {
			name := fmt.Sprintf("%s-%d", prefix, len(created))
			switch err := create(name); {
			case err == nil:
				created = append(created, name)
				if len(created) > max {
					t.Fatalf("created %d ConfigMaps without reaching the limit", len(created))
				}
				return fmt.Errorf("%d created, limit not reached yet", len(created))
			case apierrors.IsForbidden(err):
				if !strings.Contains(err.Error(), "total object count limit") {
					t.Fatalf("refused with another reason: %v", err)
				}
				return nil
			default:
				return err
			}
		}, "creates in %s were never refused for the limit", ws.path())
		return created
	}
	created := fillUp("quota-test", 2*limit)
	if len(created) == 0 {
		t.Fatal("the limit refused the first create")
	}
	if err := configMaps.Delete(ctx, created[0], metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deletes must always work: %v", err)
	}
	framework.Eventually(t, func(context.Context) error { return create("quota-test-refill") }, "the delete freed no slot")
	fillUp("quota-test-again", limit)

	setMaxTotalObjects(ctx, t, s, ws.path(), "0")
	framework.Eventually(t, func(context.Context) error { return create("quota-test-unlimited") }, "opting out with 0 did not lift the limit")

	// Another workspace has the shard's default; root is spared it.
	other := readyWorkspace(ctx, t, admin, org.path(), "other", nil)
	otherConfigMaps := kubeClient(t, s, "base", other.path()).CoreV1().ConfigMaps("default")
	if _, err := otherConfigMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "quota-test-other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a create in another workspace: %v", err)
	}
	configMaps = otherConfigMaps
	fillUp("quota-default-test", 2*defaultObjectLimit)
	if _, err := kubeClient(t, s, "base", "root").CoreV1().ConfigMaps("default").Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: framework.UniqueClusterName("quota-default-test-root")}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("root is spared the default: %v", err)
	}
	setMaxTotalObjects(ctx, t, s, other.path(), fmt.Sprint(2*defaultObjectLimit))
	framework.Eventually(t, func(context.Context) error { return create("quota-default-test-raised") }, "raising the limit by annotation did not lift the default")
}

// setMaxTotalObjects sets core.kcp.io/max-total-objects on a workspace's
// LogicalCluster as kcp-admin.
func setMaxTotalObjects(ctx context.Context, t *testing.T, s *framework.Shard, path, value string) {
	t.Helper()
	setLogicalClusterAnnotation(ctx, t, s, path, corev1alpha1.MaxTotalObjectsAnnotationKey, value)
}

// setLogicalClusterAnnotation sets an annotation on a workspace's
// LogicalCluster as kcp-admin.
func setLogicalClusterAnnotation(ctx context.Context, t *testing.T, s *framework.Shard, path, key, value string) {
	t.Helper()
	c := newKCPREST(t, s.ClientConfig(t, "base"))
	framework.Eventually(t, func(ctx context.Context) error {
		lc := &corev1alpha1.LogicalCluster{}
		if err := c.get(ctx, path, logicalClustersGVR, corev1alpha1.LogicalClusterName, lc); err != nil {
			return err
		}
		if lc.Annotations == nil {
			lc.Annotations = map[string]string{}
		}
		lc.Annotations[key] = value
		return c.update(ctx, path, logicalClustersGVR, lc.Name, lc, &corev1alpha1.LogicalCluster{})
	}, "setting %s=%s in %s", key, value, path)
}

// testWatchAndBodyLimits: beyond kcp, a workspace's LogicalCluster bounds
// the watches each of its users holds open on the shard (429 with
// Retry-After past it) and the body of a request (413, as kube-apiserver
// answers a body over --max-request-body-bytes); system identities are
// not bounded.
func testWatchAndBodyLimits(t *testing.T, s *framework.Shard) {
	ctx := testContext(t)
	admin := newKCPREST(t, s.ClientConfig(t, "base"))
	ws := readyWorkspace(ctx, t, admin, "root", framework.UniqueClusterName("limits"), nil)
	adminKube := kubeClient(t, s, "base", ws.path())
	grantAccessAndView(ctx, t, adminKube, "tenant-a")
	bindClusterRole(ctx, t, adminKube, "tenant-a-edit", "edit", userSubject("tenant-a"))
	setLogicalClusterAnnotation(ctx, t, s, ws.path(), corev1alpha1.MaxWatchesPerUserAnnotationKey, "2")
	setLogicalClusterAnnotation(ctx, t, s, ws.path(), corev1alpha1.MaxRequestBodyBytesAnnotationKey, "2000")

	// openWatch starts a watch of configmaps and returns its response.
	openWatch := func(cfg *rest.Config) *http.Response {
		t.Helper()
		resp := getConfigMaps(ctx, t, cfg, "?watch=1")
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	tenant := s.TokenUserConfig(t, "tenant-a", ws.path())
	// Until the shard sees the annotation no watch is refused; then, with
	// the earlier ones closed, two are held and the third is refused.
	var open []*http.Response
	framework.Eventually(t, func(context.Context) error {
		for _, resp := range open {
			resp.Body.Close()
		}
		open = nil
		var codes []int
		for range 3 {
			resp := openWatch(tenant)
			codes = append(codes, resp.StatusCode)
			if resp.StatusCode == http.StatusOK {
				open = append(open, resp)
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode == http.StatusTooManyRequests && (resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), corev1alpha1.MaxWatchesPerUserAnnotationKey)) {
				t.Fatalf("refused without Retry-After or the limit's name: %s", body)
			}
		}
		if !slices.Equal(codes, []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests}) {
			return fmt.Errorf("three watches answered %v, want 200, 200, 429", codes)
		}
		return nil
	}, "tenant-a's watches were never bounded to 2")
	if resp := openWatch(s.ClusterConfig(t, "base", ws.path())); resp.StatusCode != http.StatusOK {
		t.Errorf("kcp-admin's watch: %d, want 200 (system identities are not bounded)", resp.StatusCode)
	}

	tenantKube := newKubeClient(t, tenant).CoreV1().ConfigMaps("default")
	big := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Data: map[string]string{"x": strings.Repeat("x", 3000)}}
	if _, err := tenantKube.Create(ctx, big, metav1.CreateOptions{}); !apierrors.IsRequestEntityTooLargeError(err) || !strings.Contains(err.Error(), corev1alpha1.MaxRequestBodyBytesAnnotationKey) {
		t.Errorf("a 3000-byte body: %v, want 413 naming the limit", err)
	}
	small := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "small"}, Data: map[string]string{"x": "y"}}
	if _, err := tenantKube.Create(ctx, small, metav1.CreateOptions{}); err != nil {
		t.Errorf("a small body: %v", err)
	}
	if _, err := adminKube.CoreV1().ConfigMaps("default").Create(ctx, big, metav1.CreateOptions{}); err != nil {
		t.Errorf("kcp-admin's large body: %v (system identities are not bounded)", err)
	}

	// One request of the workspace runs at once: parallel ones wait their
	// turn and all succeed, the open watches aside.
	setLogicalClusterAnnotation(ctx, t, s, ws.path(), corev1alpha1.MaxRequestsInFlightAnnotationKey, "1")
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("turn-%d", i)}}
			if _, err := tenantKube.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				errs <- err
				return
			}
			_, err := tenantKube.List(ctx, metav1.ListOptions{})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a request waiting its turn under max-requests-in-flight 1: %v", err)
		}
	}
}

// getConfigMaps GETs the configmaps of namespace default with cfg and query,
// without client-go's retries of a 429.
func getConfigMaps(ctx context.Context, t *testing.T, cfg *rest.Config, query string) *http.Response {
	t.Helper()
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/api/v1/namespaces/default/configmaps"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// testRequestTimeShare: beyond kcp, a workspace's LogicalCluster bounds the
// seconds of request time per second its requests take on the shard, with
// one second in hand. Past it a tenant is answered 429 with Retry-After
// naming the limit once its debt lasts longer than a request waits, while
// the same tenant in another workspace, kcp-admin in this one and the
// tenant's own deletes go on.
func testRequestTimeShare(t *testing.T, s *framework.Shard) {
	ctx := testContext(t)
	admin := newKCPREST(t, s.ClientConfig(t, "base"))
	bounded := readyWorkspace(ctx, t, admin, "root", framework.UniqueClusterName("share"), nil)
	other := readyWorkspace(ctx, t, admin, "root", framework.UniqueClusterName("share-other"), nil)
	for _, w := range []ws{bounded, other} {
		kube := kubeClient(t, s, "base", w.path())
		grantAccessAndView(ctx, t, kube, "tenant-a")
		bindClusterRole(ctx, t, kube, "tenant-a-edit", "edit", userSubject("tenant-a"))
	}
	adminKube := kubeClient(t, s, "base", bounded.path()).CoreV1().ConfigMaps("default")
	if _, err := adminKube.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "to-delete"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A microsecond per second: once the second in hand is spent, a debt
	// of 15 µs, less than any request takes, lasts longer than the 15 s a
	// request waits.
	setLogicalClusterAnnotation(ctx, t, s, bounded.path(), corev1alpha1.MaxRequestTimeShareAnnotationKey, "0.000001")

	// list LISTs configmaps with cfg.
	list := func(cfg *rest.Config) (code int, retryAfter, body string) {
		t.Helper()
		resp := getConfigMaps(ctx, t, cfg, "")
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
	}
	tenant := s.TokenUserConfig(t, "tenant-a", bounded.path())
	refused := false
	for deadline := time.Now().Add(2 * time.Minute); !refused && time.Now().Before(deadline); {
		code, retryAfter, body := list(tenant)
		switch code {
		case http.StatusOK:
		case http.StatusTooManyRequests:
			refused = true
			if retryAfter == "" || retryAfter == "0" || !strings.Contains(body, corev1alpha1.MaxRequestTimeShareAnnotationKey) {
				t.Errorf("refused with Retry-After %q: %s; want a Retry-After and the limit's name", retryAfter, body)
			}
		default:
			t.Fatalf("a LIST of the tenant: %d %s", code, body)
		}
	}
	if !refused {
		t.Fatal("the tenant's requests were never refused under a share of 0.000001")
	}
	if code, _, body := list(tenant); code != http.StatusTooManyRequests {
		t.Errorf("the next request of the tenant in debt: %d %s, want 429", code, body)
	}
	if code, _, body := list(s.TokenUserConfig(t, "tenant-a", other.path())); code != http.StatusOK {
		t.Errorf("the same tenant in another workspace: %d %s, want 200", code, body)
	}
	if code, _, body := list(s.ClusterConfig(t, "base", bounded.path())); code != http.StatusOK {
		t.Errorf("kcp-admin in the workspace in debt: %d %s, want 200 (system identities are not bounded)", code, body)
	}
	// Deletes always work.
	tenantKube := newKubeClient(t, tenant).CoreV1().ConfigMaps("default")
	if err := tenantKube.Delete(ctx, "to-delete", metav1.DeleteOptions{}); err != nil {
		t.Errorf("the tenant's delete while in debt: %v", err)
	}
}
