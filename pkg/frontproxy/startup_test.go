package frontproxy

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

// TestUnknownPathsBeforeTheIndexIsSyncedAreRetryable: a front-proxy that
// has just started and not yet listed every shard answers an unknown
// path 503 with Retry-After, not the 403 that would tell a permitted user
// they may not enter an existing workspace; once synced, 403.
func TestUnknownPathsBeforeTheIndexIsSyncedAreRetryable(t *testing.T) {
	x := testIndex(t)
	synced := false
	x.rootSynced = func() bool { return synced }
	r := &route{PathMapping: PathMapping{Path: ClustersPath, UserHeader: "X-Remote-User", GroupHeader: "X-Remote-Group", ExtraHeaderPrefix: "X-Remote-Extra-"}}
	alice := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil
	})
	p := newProxy([]*route{r}, x, alice, nil)
	get := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/clusters/root:org:missing/api/v1/configmaps", nil))
		return rec
	}
	if rec := get(); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("before the index is synced: %d (Retry-After %q): %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	synced = true
	if rec := get(); rec.Code != http.StatusForbidden {
		t.Fatalf("once synced: %d: %s", rec.Code, rec.Body)
	}
}
