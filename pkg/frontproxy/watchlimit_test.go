package frontproxy

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

// TestWatchesPerUserAreBounded: a user's watches beyond the bound are
// answered 429 with Retry-After; other users and other requests are not
// affected, and a closed watch frees its place.
func TestWatchesPerUserAreBounded(t *testing.T) {
	release := make(chan struct{})
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		if r.URL.Query().Get("watch") != "" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	backend.EnableHTTP2 = true
	backend.StartTLS()
	t.Cleanup(backend.Close)
	t.Cleanup(func() { close(release) })
	front := proxyTo(t, backend)
	px := front.Config.Handler.(*proxy)
	px.watches = newWatchLimiter(2)
	px.authenticator = authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: r.Header.Get("Test-User")}}, true, nil
	})
	get := func(u, query string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, front.URL+"/services/test/clusters/root/api/v1/configmaps?"+query, nil)
		req.Header.Set("Test-User", u)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first, second := get("alice", "watch=1"), get("alice", "watch=true")
	defer second.Body.Close()
	for _, r := range []*http.Response{first, second} {
		if r.StatusCode != http.StatusOK {
			t.Fatalf("watch within the bound: %s", r.Status)
		}
	}
	third := get("alice", "watch=1")
	third.Body.Close()
	if third.StatusCode != http.StatusTooManyRequests || third.Header.Get("Retry-After") == "" {
		t.Fatalf("watch beyond the bound: %s, Retry-After %q", third.Status, third.Header.Get("Retry-After"))
	}
	if r := get("alice", ""); r.StatusCode != http.StatusOK {
		t.Errorf("a list beyond the watch bound: %s", r.Status)
	} else {
		r.Body.Close()
	}
	bob := get("bob", "watch=1")
	if bob.StatusCode != http.StatusOK {
		t.Errorf("another user's watch: %s", bob.Status)
	}
	bob.Body.Close()
	// Closing a watch frees its place.
	first.Body.Close()
	var again *http.Response
	for i := 0; i < 100; i++ {
		if again = get("alice", "watch=1"); again.StatusCode == http.StatusOK {
			break
		}
		again.Body.Close()
		time.Sleep(10 * time.Millisecond)
	}
	defer again.Body.Close()
	if again.StatusCode != http.StatusOK {
		t.Errorf("a watch after one closed: %s", again.Status)
	}
}
