package shard

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/client-go/kubernetes/scheme"
)

func TestRequestsIntoWorkspacesWaitForSyncedCaches(t *testing.T) {
	synced := false
	h := withSyncedCaches(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }),
		scheme.Codecs, func() bool { return synced }, "loopback")
	for _, tc := range []struct {
		name   string
		path   string
		token  string
		synced bool
		want   int
	}{
		{"workspace before sync", "/clusters/root:org/api/v1/namespaces/default/configmaps", "user", false, http.StatusServiceUnavailable},
		{"logical cluster name before sync", "/clusters/abc123/api/v1/configmaps", "", false, http.StatusServiceUnavailable},
		{"loopback before sync", "/clusters/root/api/v1/configmaps", "loopback", false, http.StatusTeapot},
		{"wildcard before sync", "/clusters/*/api/v1/configmaps", "user", false, http.StatusTeapot},
		{"system cluster before sync", "/clusters/system:admin/api/v1/configmaps", "user", false, http.StatusTeapot},
		{"no cluster before sync", "/readyz", "", false, http.StatusTeapot},
		{"workspace after sync", "/clusters/root:org/api/v1/configmaps", "user", true, http.StatusTeapot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synced = tc.synced
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("%s: %d, want %d: %s", tc.path, rec.Code, tc.want, rec.Body)
			}
			if tc.want == http.StatusServiceUnavailable && rec.Header().Get("Retry-After") == "" {
				t.Errorf("503 without Retry-After")
			}
		})
	}
}
