package frontproxy

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/testutil"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestRequestsAreCountedByShardAndCode(t *testing.T) {
	h := withRequestMetrics(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		setShardLabel(req.Context(), "metrics-test-shard")
		w.WriteHeader(http.StatusTeapot)
	}))
	counter := requestsTotal.WithLabelValues("metrics-test-shard", "418")
	before, err := testutil.GetCounterMetricValue(counter)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/clusters/root/api", nil))
	}
	after, _ := testutil.GetCounterMetricValue(counter)
	if after-before != 3 {
		t.Errorf("requests_total{shard=metrics-test-shard,code=418} grew by %v, want 3", after-before)
	}
	count, err := testutil.GetHistogramMetricCount(requestDuration.WithLabelValues("metrics-test-shard"))
	if err != nil || count != 3 {
		t.Errorf("request_duration_seconds count %d (%v), want 3", count, err)
	}
}

func TestRoutingLagIsObservedWhenAWorkspaceBecomesRoutable(t *testing.T) {
	x := NewIndex(nil)
	h := workspaceHandler{x: x, shard: "root"}
	ws := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{
		Name: "lag", CreationTimestamp: metav1.NewTime(time.Now().Add(-2 * time.Second)),
		Annotations: map[string]string{logicalcluster.AnnotationKey: "root"},
	}}
	ws.Status.Phase = corev1alpha1.LogicalClusterPhaseScheduling
	created := indexLag.WithLabelValues("create")
	before, _ := testutil.GetHistogramMetricCount(created)
	h.OnAdd(ws)
	if n, _ := testutil.GetHistogramMetricCount(created); n != before {
		t.Errorf("lag observed for a workspace still scheduling")
	}
	ready := ws.DeepCopy()
	ready.Spec.Cluster, ready.Status.Phase = "lagcluster", corev1alpha1.LogicalClusterPhaseReady
	h.OnUpdate(ws, ready)
	h.OnUpdate(ready, ready)
	if n, _ := testutil.GetHistogramMetricCount(created); n != before+1 {
		t.Errorf("create lag observed %d times, want once", n-before)
	}
}
