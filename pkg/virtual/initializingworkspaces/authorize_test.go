package initializingworkspaces

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"
)

func TestAccessReviewsAreReusedBrieflyAndRefusalsBriefer(t *testing.T) {
	f := newFake()
	shard := httptest.NewServer(f)
	defer shard.Close()
	a, err := newAccessReviewer(&rest.Config{Host: shard.URL})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	a.now = func() time.Time { return now }
	ask := func(u *user.DefaultInfo) bool {
		t.Helper()
		ok, _, err := a.authorize(context.Background(), u, "initialize", "root", "mine")
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	mallory := &user.DefaultInfo{Name: "mallory"}
	if !ask(alice) || ask(mallory) || len(f.reviews) != 2 {
		t.Fatalf("first answers wrong or %d reviews, want 2", len(f.reviews))
	}
	now = now.Add(2 * time.Second)
	f.allowed["mallory"] = true
	if !ask(alice) || !ask(mallory) || len(f.reviews) != 3 {
		t.Fatalf("after 2s: %d reviews, want alice's answer reused and mallory asked again (3)", len(f.reviews))
	}
	// Another group is another question.
	if !ask(&user.DefaultInfo{Name: "alice", Groups: []string{"other"}}) || len(f.reviews) != 4 {
		t.Errorf("%d reviews, want alice with other groups reviewed anew", len(f.reviews))
	}
	now = now.Add(allowedTTL)
	f.allowed["alice"] = false
	if ask(alice) {
		t.Errorf("alice still allowed after the answer expired")
	}
}
