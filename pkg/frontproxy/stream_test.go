package frontproxy

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

// streamingBackend serves /services/test/stream, which sends one line,
// then a second once release is closed, with no Content-Length; and
// /services/test/fixed, a body of known length.
func streamingBackend(t *testing.T, release <-chan struct{}) *httptest.Server {
	t.Helper()
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/services/test/stream":
			_, _ = io.WriteString(w, "event-1\n")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			_, _ = io.WriteString(w, "event-2\n")
		case "/services/test/fixed":
			w.Header().Set("Content-Length", "5")
			_, _ = io.WriteString(w, "fixed")
		}
	}))
	backend.EnableHTTP2 = true
	backend.StartTLS()
	t.Cleanup(backend.Close)
	return backend
}

func proxyTo(t *testing.T, backend *httptest.Server) *httptest.Server {
	t.Helper()
	u, err := url.Parse(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	r := &route{
		PathMapping: PathMapping{Path: "/services/test/", UserHeader: "X-Remote-User", GroupHeader: "X-Remote-Group", ExtraHeaderPrefix: "X-Remote-Extra-"},
		backend:     u,
		transport:   backend.Client().Transport,
	}
	alice := authenticator.RequestFunc(func(*http.Request) (*authenticator.Response, bool, error) {
		return &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}, true, nil
	})
	front := httptest.NewServer(newProxy([]*route{r}, NewIndex(nil), alice, nil))
	t.Cleanup(front.Close)
	return front
}

// TestProxyStreamsResponsesOfUnknownLength: a response without
// Content-Length (a watch) reaches the client write by write, while the
// backend is still sending.
func TestProxyStreamsResponsesOfUnknownLength(t *testing.T) {
	release := make(chan struct{})
	front := proxyTo(t, streamingBackend(t, release))
	resp, err := http.Get(front.URL + "/services/test/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := bufio.NewReader(resp.Body)
	// The backend sends the second line only after the client has the
	// first: a proxy that buffered the response would never deliver it.
	first, err := body.ReadString('\n')
	if err != nil || first != "event-1\n" {
		t.Fatalf("first line %q, %v", first, err)
	}
	close(release)
	rest, err := io.ReadAll(body)
	if err != nil || string(rest) != "event-2\n" {
		t.Fatalf("rest %q, %v", rest, err)
	}
}

// TestProxyPassesResponsesOfKnownLengthWhole: a response of known length
// arrives with its Content-Length and whole body.
func TestProxyPassesResponsesOfKnownLengthWhole(t *testing.T) {
	front := proxyTo(t, streamingBackend(t, nil))
	resp, err := http.Get(front.URL + "/services/test/fixed")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "fixed" {
		t.Fatalf("body %q, %v", body, err)
	}
	if got := resp.Header.Get("Content-Length"); got != strconv.Itoa(len("fixed")) {
		t.Errorf("Content-Length %q, want 5", got)
	}
}
