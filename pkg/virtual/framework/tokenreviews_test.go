package framework

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/rest"
)

// jwtOf returns an unsigned JWT with claims: the reviewing server, not
// this authenticator, verifies signatures.
func jwtOf(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256"}`)) + "." + enc([]byte(claims)) + ".sig"
}

func TestServiceAccountTokensAreReviewedInTheirOwnCluster(t *testing.T) {
	good := jwtOf(`{"kcp.io/cluster":"home","sub":"system:serviceaccount:default:op"}`)
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		in := &authenticationv1.TokenReview{}
		_ = json.NewDecoder(r.Body).Decode(in)
		out := &authenticationv1.TokenReview{}
		out.APIVersion, out.Kind = "authentication.k8s.io/v1", "TokenReview"
		if in.Spec.Token == good {
			out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{
				Username: "system:serviceaccount:default:op", Groups: []string{"system:authenticated"},
				Extra: map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/cluster-name": {"home"}},
			}}
		} else {
			out.Status.Error = "invalid token"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	defer srv.Close()
	authn, err := newServiceAccountTokenReviews(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	resp, ok, err := authn.AuthenticateToken(context.Background(), good)
	if err != nil || !ok || resp.User.GetName() != "system:serviceaccount:default:op" || resp.User.GetExtra()["authentication.kubernetes.io/cluster-name"][0] != "home" {
		t.Fatalf("good token: %+v, %v, %v", resp, ok, err)
	}
	if len(paths) != 1 || paths[0] != "/clusters/home/apis/authentication.k8s.io/v1/tokenreviews" {
		t.Errorf("reviews posted to %v, want the token's cluster", paths)
	}
	if _, ok, err := authn.AuthenticateToken(context.Background(), jwtOf(`{"kcp.io/cluster":"home"}`)); ok || err == nil {
		t.Errorf("refused token: ok %v, err %v; want an error", ok, err)
	}
	// Not ours: no review at all.
	for _, token := range []string{"static-token", jwtOf(`{"iss":"oidc"}`)} {
		before := len(paths)
		if _, ok, err := authn.AuthenticateToken(context.Background(), token); ok || err != nil || len(paths) != before {
			t.Errorf("token %q: ok %v, err %v, reviewed %v", token, ok, err, len(paths) != before)
		}
	}
	if _, ok, err := authn.AuthenticateToken(context.Background(), jwtOf(`{"kcp.io/cluster":"*"}`)); ok || err == nil {
		t.Errorf("token of the * cluster: ok %v, err %v", ok, err)
	}
}
