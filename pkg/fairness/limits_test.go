package fairness

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes/scheme"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestWorkspaceLimitsBoundWatchesPerUserAndBodies(t *testing.T) {
	annotations := map[logicalcluster.Name]map[string]string{
		"tight": {corev1alpha1.MaxWatchesPerUserAnnotationKey: "1", corev1alpha1.MaxRequestBodyBytesAnnotationKey: "10"},
		"open":  {corev1alpha1.MaxWatchesPerUserAnnotationKey: "0"},
	}
	l := &Limits{MaxWatchesPerUser: 2, Codecs: scheme.Codecs, Annotations: func(c logicalcluster.Name) map[string]string { return annotations[c] }}
	held := make(chan struct{})
	entered := make(chan struct{}, 10)
	h := l.WithLimits(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if info, _ := request.RequestInfoFrom(req.Context()); info.Verb == "watch" {
			entered <- struct{}{}
			<-held
		}
	}))
	do := func(cluster logicalcluster.Name, u user.Info, verb, method, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "/api/v1/configmaps", strings.NewReader(body))
		ctx := logicalcluster.WithCluster(req.Context(), cluster)
		ctx = request.WithUser(ctx, u)
		ctx = request.WithRequestInfo(ctx, &request.RequestInfo{IsResourceRequest: true, Verb: verb, APIVersion: "v1", Resource: "configmaps"})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(ctx))
		return rec
	}
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}
	watch := func(cluster logicalcluster.Name, u user.Info) chan *httptest.ResponseRecorder {
		done := make(chan *httptest.ResponseRecorder, 1)
		go func() { done <- do(cluster, u, "watch", http.MethodGet, "") }()
		return done
	}
	// One watch in "tight", the second refused; alice elsewhere, another
	// user, system identities and a workspace opted out are not.
	first := watch("tight", alice)
	<-entered
	if rec := do("tight", alice, "watch", http.MethodGet, ""); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" ||
		!strings.Contains(rec.Body.String(), corev1alpha1.MaxWatchesPerUserAnnotationKey) {
		t.Errorf("second watch in tight: %d %q, want 429 with Retry-After naming the limit", rec.Code, rec.Body.String())
	}
	others := []chan *httptest.ResponseRecorder{
		watch("default", alice), watch("default", alice), watch("tight", &user.DefaultInfo{Name: "bob"}),
		watch("tight", &user.DefaultInfo{Name: "kcp-admin", Groups: []string{"system:kcp:admin"}}),
		watch("open", alice), watch("open", alice), watch("open", alice),
	}
	for range others {
		<-entered
	}
	if rec := do("default", alice, "watch", http.MethodGet, ""); rec.Code != http.StatusTooManyRequests {
		t.Errorf("third watch under the shard's default of 2: %d, want 429", rec.Code)
	}
	close(held)
	for _, done := range append(others, first) {
		if rec := <-done; rec.Code != http.StatusOK {
			t.Errorf("a watch within its limit: %d", rec.Code)
		}
	}
	// Released: a new watch fits again.
	held = make(chan struct{})
	close(held)
	if rec := do("tight", alice, "watch", http.MethodGet, ""); rec.Code != http.StatusOK {
		t.Errorf("a watch after the first ended: %d, want 200", rec.Code)
	}

	if rec := do("tight", alice, "create", http.MethodPost, strings.Repeat("x", 11)); rec.Code != http.StatusRequestEntityTooLarge ||
		!strings.Contains(rec.Body.String(), corev1alpha1.MaxRequestBodyBytesAnnotationKey) {
		t.Errorf("an 11-byte body in tight: %d %q, want 413 naming the limit", rec.Code, rec.Body.String())
	}
	if rec := do("tight", alice, "create", http.MethodPost, strings.Repeat("x", 10)); rec.Code != http.StatusOK {
		t.Errorf("a 10-byte body in tight: %d, want 200", rec.Code)
	}
	if rec := do("default", alice, "create", http.MethodPost, strings.Repeat("x", 1000)); rec.Code != http.StatusOK {
		t.Errorf("a body where no limit applies: %d, want 200", rec.Code)
	}
}
