package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// metricsReaderRole is the bootstrap ClusterRole that grants get /metrics.
const metricsReaderRole = "system:kcp:metrics-reader"

// rawRequest requests path (absolute on the shard) with a bearer token and
// returns the status code.
func rawRequest(ctx context.Context, t *testing.T, e *wsEnv, method, path, token string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, e.s.BaseURL(t)+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := e.s.HTTPClient(t).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestShardMetricsAreNotServedThroughWorkspaces is a workspace admin (and
// everyone else, system:masters included) reading, resetting or profiling
// the shard's shard-wide data under its workspace prefix: 501.
func TestShardMetricsAreNotServedThroughWorkspaces(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaces(t)
	ctx := testContext(t)
	org := workspaceAdmin(ctx, t, e, "metrics", "user-1")

	tokens := map[string]string{
		"user-1":   e.s.UserToken(t, "user-1"),
		kcpAdmin:   e.s.KubeconfigToken(t, kcpAdmin),
		shardAdmin: e.s.KubeconfigToken(t, shardAdmin),
	}
	for who, token := range tokens {
		for _, cluster := range []string{org.path(), org.cluster(), "root", "system:admin"} {
			for _, req := range []struct{ method, path string }{
				{http.MethodGet, "/metrics"},
				{http.MethodDelete, "/metrics"},
				{http.MethodGet, "/metrics/slis"},
				{http.MethodGet, "/debug/pprof/"},
				{http.MethodPut, "/debug/flags/v"},
			} {
				path := "/clusters/" + cluster + req.path
				if got := rawRequest(ctx, t, e, req.method, path, token); got != http.StatusNotImplemented {
					t.Errorf("%s: %s %s: HTTP %d, want 501", who, req.method, path, got)
				}
			}
		}
	}
}

// TestShardMetricsNeedTheMetricsReaderRoleInRoot: /metrics is for
// system:masters and for subjects bound in root to system:kcp:metrics-reader;
// a workspace admin binding the role in its own workspace gains nothing.
func TestShardMetricsNeedTheMetricsReaderRoleInRoot(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaces(t)
	ctx := testContext(t)
	if got := rawRequest(ctx, t, e, http.MethodGet, "/metrics", e.s.KubeconfigToken(t, shardAdmin)); got != http.StatusOK {
		t.Errorf("shard-admin: GET /metrics: HTTP %d, want 200", got)
	}

	org := workspaceAdmin(ctx, t, e, "scraper", "user-4")
	token := e.s.UserToken(t, "user-4")
	if got := rawRequest(ctx, t, e, http.MethodGet, "/metrics", token); got != http.StatusForbidden {
		t.Errorf("user-4: GET /metrics: HTTP %d, want 403", got)
	}
	bindClusterRole(ctx, t, e.kube(t, "user-4", org.path()), "self-metrics", metricsReaderRole, userSubject("user-4"))
	// Once the binding could have taken effect in the workspace, /metrics
	// is still refused: only root's bindings count.
	eventuallyAllowed(ctx, t, "user-4: SubjectAccessReview sees its binding in "+org.path(), func(ctx context.Context) error {
		return requireSelfAllowed(ctx, e, t, "user-4", org.path(), "/metrics")
	})
	if got := rawRequest(ctx, t, e, http.MethodGet, "/metrics", token); got != http.StatusForbidden {
		t.Errorf("user-4 bound in its own workspace: GET /metrics: HTTP %d, want 403", got)
	}

	name := uniqueName("scraper")
	bindClusterRole(ctx, t, e.kube(t, kcpAdmin, "root"), name, metricsReaderRole, userSubject("user-4"))
	t.Cleanup(func() {
		_ = e.kube(t, kcpAdmin, "root").RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	var last int
	err := wait.PollUntilContextTimeout(ctx, wsPoll, wsTimeout, true, func(ctx context.Context) (bool, error) {
		last = rawRequest(ctx, t, e, http.MethodGet, "/metrics", token)
		return last == http.StatusOK, nil
	})
	if err != nil {
		t.Errorf("user-4 bound in root to %s: GET /metrics: HTTP %d, want 200", metricsReaderRole, last)
	}
}

// requireSelfAllowed asks, as who in cluster, whether who may get the
// non-resource path, and returns a 403-shaped error until it may.
func requireSelfAllowed(ctx context.Context, e *wsEnv, t *testing.T, who, cluster, path string) error {
	t.Helper()
	r, err := e.kube(t, who, cluster).AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Verb: "get", Path: path}},
	}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if !r.Status.Allowed {
		return apierrors.NewForbidden(schema.GroupResource{}, path, fmt.Errorf("%s may not get %s in %s yet", who, path, cluster))
	}
	return nil
}

// TestShardMetricsCountRecoveredPanics: the shard's /metrics has the
// counter of recovered panics from the start, at 0 when nothing panicked.
// No request is known to panic; the chains' recovery itself is unit-tested
// in pkg/panics, pkg/cacheserver and pkg/virtual/framework.
func TestShardMetricsCountRecoveredPanics(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	m := s.Metrics(ctx, t)
	if v, ok := m.Value("shardplane_recovered_panics_total", map[string]string{"site": "other"}); !ok || v != 0 {
		t.Errorf(`GET /metrics: no shardplane_recovered_panics_total{site="other"} 0 (value %v, present %v)`, v, ok)
	}
}
