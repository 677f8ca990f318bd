// Package stackreserve grows a request's goroutine stack once, to the size
// the rest of the handler chain needs, before the request is authenticated.
//
// The apiserver serves a request that is not long-running in a goroutine of
// its own (the timeout filter's), which starts with a small stack. The
// chain below it (authentication, authorization, the REST handler, the
// registry, the etcd client) is deep: the stack then grows two or three
// times, each time copying every frame of an ever deeper stack, which CPU
// profiles of parallel GETs show in runtime.newstack.
// Authentication is the first step in that goroutine that the shard can
// hook: growing the stack there, while it is still shallow, costs one small
// copy, and the deeper frames then fit.
package stackreserve

import (
	"net/http"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// reserveBytes is the stack reserved: enough that the deepest path of a
// GET (the etcd client's, or an in-process etcd server's range) no longer
// grows the stack; a larger reserve left no less of parallel GETs' CPU in
// newstack.
const reserveBytes = 24 << 10

// WithStackReserve returns an authenticator that reserves the stack of
// every request but a watch before it calls a (nil stays nil: no
// authentication). A watch is served for a long time in the goroutine it
// came in on, and would keep the larger stack.
func WithStackReserve(a authenticator.Request) authenticator.Request {
	if a == nil {
		return nil
	}
	if _, ok := a.(reserving); ok {
		return a
	}
	return reserving{a}
}

type reserving struct {
	authenticator.Request
}

func (r reserving) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if info, ok := genericapirequest.RequestInfoFrom(req.Context()); !ok || info.Verb != "watch" {
		reserve()
	}
	return r.Request.AuthenticateRequest(req)
}

// reserve has a frame of reserveBytes, so calling it grows the stack to hold
// that much more than is in use; the stack keeps that size until a garbage
// collection finds it mostly unused.
//
//go:noinline
func reserve() byte {
	var frame [reserveBytes]byte
	return touch(frame[:])
}

// touch keeps the compiler from dropping reserve's frame.
//
//go:noinline
func touch(b []byte) byte { return b[len(b)-1] }
