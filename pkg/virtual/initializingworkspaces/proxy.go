package initializingworkspaces

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// contentProxy forwards requests into a workspace as the caller plus a
// lifecycle group, impersonated with the privileged credential.
type contentProxy struct {
	shard *url.URL
	base  http.RoundTripper
}

func newContentProxy(cfg *rest.Config) (*contentProxy, error) {
	shard, err := url.Parse(strings.TrimSuffix(cfg.Host, "/"))
	if err != nil {
		return nil, fmt.Errorf("shard URL %q: %w", cfg.Host, err)
	}
	privileged := rest.CopyConfig(cfg)
	privileged.Impersonate = rest.ImpersonationConfig{}
	base, err := rest.TransportFor(privileged)
	if err != nil {
		return nil, fmt.Errorf("transport to the shard %s: %w", cfg.Host, err)
	}
	return &contentProxy{shard: shard, base: base}, nil
}

// serve forwards req to path on the shard as u plus group.
func (p *contentProxy) serve(w http.ResponseWriter, req *http.Request, u user.Info, group, path string) {
	groups := append([]string(nil), u.GetGroups()...)
	groups = append(groups, group)
	rt := transport.NewImpersonatingRoundTripper(transport.ImpersonationConfig{
		UserName: u.GetName(), UID: u.GetUID(), Groups: groups, Extra: u.GetExtra(),
	}, p.base)
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			// Whatever identity the caller sent is not passed on: the
			// impersonation above is who the request is.
			r.Out.Header.Del("Authorization")
			for name := range r.Out.Header {
				if strings.HasPrefix(name, "Impersonate-") || strings.HasPrefix(name, "X-Remote-") {
					r.Out.Header.Del(name)
				}
			}
			r.Out.URL.Scheme, r.Out.URL.Host = p.shard.Scheme, p.shard.Host
			r.Out.URL.Path = p.shard.Path + path
			r.Out.URL.RawPath = ""
			r.Out.Host = p.shard.Host
		},
		Transport:     rt,
		FlushInterval: -1, // watches stream
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			writeError(w, fmt.Errorf("the shard is unreachable: %w", err))
		},
	}
	proxy.ServeHTTP(w, req)
}
