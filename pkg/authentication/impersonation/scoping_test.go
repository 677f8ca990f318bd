package impersonation

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
)

// serve runs a request with headers through the marker, a stand-in for
// authentication and impersonation that sets u, and the scoping filter, and
// returns the user the handler saw.
func serve(t *testing.T, headers http.Header, u user.Info) (user.Info, int) {
	t.Helper()
	var seen user.Info
	handler := WithScoping(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		seen, _ = request.UserFrom(req.Context())
	}))
	impersonate := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// upstream impersonation removes the headers
		req.Header = http.Header{}
		handler.ServeHTTP(w, req.WithContext(request.WithUser(req.Context(), u)))
	})
	req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces", nil)
	req.Header = headers
	req = req.WithContext(logicalcluster.WithCluster(req.Context(), "team-a"))
	rec := httptest.NewRecorder()
	WithRequestMarker(impersonate).ServeHTTP(rec, req)
	return seen, rec.Code
}

func TestImpersonatedUsersAreScopedToTheRequestCluster(t *testing.T) {
	bob := &user.DefaultInfo{Name: "bob", Groups: []string{"system:kcp:admin", user.AllAuthenticated}}
	for _, tc := range []struct {
		name       string
		headers    http.Header
		user       user.Info
		wantScopes []string
	}{
		{"not impersonated", http.Header{}, bob, nil},
		{"impersonated user", http.Header{"Impersonate-User": {"bob"}}, bob, []string{"cluster:team-a"}},
		{"impersonated with only an extra header", http.Header{"Impersonate-Extra-Foo": {"x"}}, bob, []string{"cluster:team-a"}},
		{"impersonated member of system:masters stays unscoped", http.Header{"Impersonate-User": {"x"}},
			&user.DefaultInfo{Name: "x", Groups: []string{user.SystemPrivilegedGroup}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen, code := serve(t, tc.headers, tc.user)
			if code != http.StatusOK {
				t.Fatalf("HTTP %d", code)
			}
			if seen.GetName() != tc.user.GetName() || !reflect.DeepEqual(seen.GetGroups(), tc.user.GetGroups()) {
				t.Errorf("identity changed: %+v", seen)
			}
			if got := seen.GetExtra()[scope.ScopeExtraKey]; !reflect.DeepEqual(got, tc.wantScopes) {
				t.Errorf("scopes %v, want %v", got, tc.wantScopes)
			}
		})
	}
}

func TestScopingWithoutMarkerFailsClosed(t *testing.T) {
	handler := WithScoping(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("handler reached") }))
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("HTTP %d, want 500", rec.Code)
	}
}
