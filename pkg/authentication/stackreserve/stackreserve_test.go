package stackreserve

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

type recording struct {
	calls int
	resp  *authenticator.Response
	ok    bool
	err   error
}

func (r *recording) AuthenticateRequest(*http.Request) (*authenticator.Response, bool, error) {
	r.calls++
	return r.resp, r.ok, r.err
}

func TestWithStackReserveReturnsWhatTheAuthenticatorDecides(t *testing.T) {
	alice := &authenticator.Response{User: &user.DefaultInfo{Name: "alice"}}
	failed := errors.New("invalid token")
	for _, tc := range []struct {
		name  string
		verb  string // "" for a request without request info
		inner recording
	}{
		{name: "authenticated get", verb: "get", inner: recording{resp: alice, ok: true}},
		{name: "authenticated watch", verb: "watch", inner: recording{resp: alice, ok: true}},
		{name: "no credentials", verb: "list", inner: recording{}},
		{name: "error", verb: "create", inner: recording{err: failed}},
		{name: "no request info", inner: recording{resp: alice, ok: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inner := tc.inner
			req := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/configmaps", nil)
			if tc.verb != "" {
				req = req.WithContext(genericapirequest.WithRequestInfo(req.Context(), &genericapirequest.RequestInfo{Verb: tc.verb}))
			}
			resp, ok, err := WithStackReserve(&inner).AuthenticateRequest(req)
			if inner.calls != 1 {
				t.Fatalf("authenticator called %d times, want 1", inner.calls)
			}
			if resp != inner.resp || ok != inner.ok || !errors.Is(err, inner.err) {
				t.Fatalf("got (%v, %v, %v), want (%v, %v, %v)", resp, ok, err, inner.resp, inner.ok, inner.err)
			}
		})
	}
}

func TestWithStackReserveWrapsOnce(t *testing.T) {
	if WithStackReserve(nil) != nil {
		t.Fatal("a nil authenticator (authentication off) must stay nil")
	}
	inner := &recording{}
	once := WithStackReserve(inner)
	if twice := WithStackReserve(once); twice != once {
		t.Fatal("wrapping twice must return the same authenticator")
	}
}
