package framework

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/transport"
)

// Forwarder sends requests on to another server as a given user: the
// privileged transport authenticates, impersonation says who the request is.
type Forwarder struct {
	// Target is the server, its path the prefix of every forwarded path.
	Target *url.URL
	// Transport carries a credential the target lets impersonate.
	Transport http.RoundTripper
	// Unreachable names the target in the 503 answered when it cannot be
	// reached.
	Unreachable string
}

// Forward serves req by the target at Target's path plus path, as u.
func (f *Forwarder) Forward(w http.ResponseWriter, req *http.Request, u user.Info, path string) {
	rt := transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{
		UserName: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra(),
	}, f.Transport)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			// Whatever identity the caller sent is not passed on (the
			// impersonating transport would keep a caller's own
			// Impersonate-User): the impersonation above is who the request is.
			r.Out.Header.Del("Authorization")
			for name := range r.Out.Header {
				if strings.HasPrefix(name, "Impersonate-") || strings.HasPrefix(name, "X-Remote-") {
					r.Out.Header.Del(name)
				}
			}
			r.Out.URL.Scheme, r.Out.URL.Host = f.Target.Scheme, f.Target.Host
			r.Out.URL.Path = strings.TrimSuffix(f.Target.Path, "/") + path
			r.Out.URL.RawPath = ""
			r.Out.Host = f.Target.Host
		},
		Transport:     rt,
		FlushInterval: -1, // watches stream
		ErrorHandler: func(w http.ResponseWriter, req *http.Request, err error) {
			Error(w, req, apierrors.NewServiceUnavailable(fmt.Sprintf("%s is unreachable: %v", f.Unreachable, err)))
		},
	}
	proxy.ServeHTTP(w, req)
}
