package framework

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestViewsRouteByNameBelowAShardPrefix(t *testing.T) {
	var got string
	views := Views{"apiexport": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.URL.Path + " " + r.RequestURI })}
	for _, tc := range []struct {
		path     string
		code     int
		wantSeen string
	}{
		{"/shards/shard-1/services/apiexport/a/e/clusters/*/api", http.StatusOK, "/services/apiexport/a/e/clusters/*/api /services/apiexport/a/e/clusters/*/api"},
		{"/services/apiexport/a/e/clusters/*/api", http.StatusOK, "/services/apiexport/a/e/clusters/*/api /services/apiexport/a/e/clusters/*/api"},
		{"/services/unknown/x", http.StatusNotFound, ""},
	} {
		got = ""
		rec := httptest.NewRecorder()
		views.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if rec.Code != tc.code || got != tc.wantSeen {
			t.Errorf("%s: status %d, view saw %q; want %d, %q", tc.path, rec.Code, got, tc.code, tc.wantSeen)
		}
	}
}

type tokenAuthenticator map[string]string

func (a tokenAuthenticator) AuthenticateRequest(r *http.Request) (*authenticator.Response, bool, error) {
	name, ok := a[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
	if !ok {
		return nil, false, errors.New("invalid bearer token")
	}
	return &authenticator.Response{User: &user.DefaultInfo{Name: name}}, true, nil
}

func TestWithAuthenticationPutsTheUserInTheContextAndKeepsTheCredentials(t *testing.T) {
	var seen, header string
	h := WithAuthentication(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := apirequest.UserFrom(r.Context())
		seen, header = u.GetName(), r.Header.Get("Authorization")
	}), tokenAuthenticator{"t1": "alice"})
	req := httptest.NewRequest(http.MethodGet, "/services/apiexport/x", nil)
	req.Header.Set("Authorization", "Bearer t1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || seen != "alice" || header != "" {
		t.Errorf("status %d, user %q, Authorization %q: want 200, alice, none", rec.Code, seen, header)
	}
	req.Header.Set("Authorization", "Bearer wrong")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("bad token: status %d, want 401", rec.Code)
	}
}

func TestSubjectAccessReviewsAskInTheClusterAndRememberAllowedDecisions(t *testing.T) {
	var calls atomic.Int32
	var path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		path = r.URL.Path
		review := &authorizationv1.SubjectAccessReview{}
		_ = json.NewDecoder(r.Body).Decode(review)
		review.Status.Allowed = review.Spec.User == "alice" && review.Spec.ResourceAttributes.Subresource == "content"
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))
	defer srv.Close()
	sar, err := NewSubjectAccessReviews(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	sar.now = func() time.Time { return now }
	ctx := logicalcluster.WithCluster(context.Background(), "provider")
	attrs := func(name string) authorizer.Attributes {
		return authorizer.AttributesRecord{User: &user.DefaultInfo{Name: name}, Verb: "list", APIGroup: "apis.kcp.io", Resource: "apiexports", Subresource: "content", Name: "e", ResourceRequest: true}
	}
	for i := 0; i < 3; i++ {
		if d, _, err := sar.Authorize(ctx, attrs("alice")); err != nil || d != authorizer.DecisionAllow {
			t.Fatalf("alice: %v, %v", d, err)
		}
	}
	if calls.Load() != 1 || path != "/clusters/provider/apis/authorization.k8s.io/v1/subjectaccessreviews" {
		t.Errorf("%d reviews at %s: want 1 in /clusters/provider", calls.Load(), path)
	}
	if d, _, _ := sar.Authorize(ctx, attrs("bob")); d == authorizer.DecisionAllow {
		t.Errorf("bob allowed")
	}
	now = now.Add(allowedTTL + time.Second)
	_, _, _ = sar.Authorize(ctx, attrs("alice"))
	if calls.Load() != 3 {
		t.Errorf("%d reviews after the decision expired, want 3", calls.Load())
	}
	if d, _, _ := sar.Authorize(context.Background(), attrs("alice")); d == authorizer.DecisionAllow {
		t.Errorf("allowed without a cluster")
	}
}

func TestPathAuthorizerOpensViewsAndHealthOnly(t *testing.T) {
	for path, want := range map[string]authorizer.Decision{
		"/services/apiexport/a/b/clusters/*/api": authorizer.DecisionAllow,
		"/shards/root/services/apiexport/a":      authorizer.DecisionAllow,
		"/readyz":                                authorizer.DecisionAllow,
		"/metrics":                               authorizer.DecisionNoOpinion,
	} {
		d, _, _ := pathAuthorizer{}.Authorize(context.Background(), authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "x"}, Path: path, Verb: "get"})
		if d != want {
			t.Errorf("%s: %v, want %v", path, d, want)
		}
	}
	d, _, _ := pathAuthorizer{}.Authorize(context.Background(), authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "x", Groups: []string{user.SystemPrivilegedGroup}}, Path: "/metrics", Verb: "get"})
	if d != authorizer.DecisionAllow {
		t.Errorf("system:masters /metrics: %v", d)
	}
}

func TestWatchesThroughViewsAreLongRunning(t *testing.T) {
	req := httptest.NewRequest(http.MethodGet, "/services/apiexport/a/b/clusters/*/apis/g/v/r?watch=true", nil)
	if !longRunning(req, &apirequest.RequestInfo{IsResourceRequest: false, Path: req.URL.Path, Verb: "get"}) {
		t.Errorf("watch through a view is not long-running")
	}
	req = httptest.NewRequest(http.MethodGet, "/services/apiexport/a/b/clusters/*/apis/g/v/r", nil)
	if longRunning(req, &apirequest.RequestInfo{IsResourceRequest: false, Path: req.URL.Path, Verb: "get"}) {
		t.Errorf("list through a view is long-running")
	}
}
