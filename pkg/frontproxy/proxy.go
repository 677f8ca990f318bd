package frontproxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/authorization/workspacecontent"
	"github.com/shardplane/shardplane/pkg/features"
	"github.com/shardplane/shardplane/pkg/home"
	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/scope"
	"github.com/shardplane/shardplane/pkg/streamrequest"
)

// droppedGroups never reach a backend from outside: they are the shard's
// own, privileged identities.
var droppedGroups = sets.New(user.SystemPrivilegedGroup, identities.LogicalClusterAdminGroup, identities.ExternalLogicalClusterAdminGroup)

// droppedGroupPrefixes are groups the shard grants to the initializing and
// terminating views alone (access to a workspace waiting for them): an
// outside identity (an OIDC claim, a client certificate) carrying one would
// enter such workspaces.
var droppedGroupPrefixes = []string{identities.InitializerGroupPrefix, identities.TerminatorGroupPrefix}

// dropped tells whether a group of an authenticated user is kept from the
// backend.
func dropped(group string) bool {
	if droppedGroups.Has(group) {
		return true
	}
	for _, p := range droppedGroupPrefixes {
		if strings.HasPrefix(group, p) {
			return true
		}
	}
	return false
}

var requestInfos = &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// proxy authenticates a request, finds its backend and forwards it with the
// user as X-Remote-* headers.
type proxy struct {
	routes        []*route
	index         *Index
	authenticator authenticator.Request
	// serviceAccounts verifies shard service account tokens, which are
	// passed on for the shard to authenticate.
	serviceAccounts *serviceAccountTokens
	// homeReviews authenticates such a token at its own shard when it is
	// sent to a workspace on another shard.
	homeReviews *homeReviews
	// workspaceReviews authenticates, at the workspace's shard, tokens of
	// the JWT issuers of the workspace's type.
	workspaceReviews *workspaceReviews
	// requests holds one reverse proxy per route that speaks HTTP/1.1 to
	// the backend over a pool of kept-alive connections, for every request
	// but the streams: one request, one connection at a time, has fewer
	// goroutine hand-offs in the proxy than HTTP/2's multiplexing, which is
	// most of what the proxy adds to a short request (docs/performance.md).
	// It serves upgrade requests (exec, port-forward, websockets) too, which
	// HTTP/2 cannot carry.
	// streams holds one that speaks HTTP/2, for watches and followed logs:
	// they share a few connections instead of holding one each.
	requests, streams map[*route]*httputil.ReverseProxy
	// watches bounds the watches of one user; nil: no bound.
	watches *watchLimiter
	// holds keeps requests a shard holds for a cut-over.
	holds cutOverHolds
}

func newProxy(routes []*route, index *Index, authn authenticator.Request, sa *serviceAccountTokens) *proxy {
	p := &proxy{routes: routes, index: index, authenticator: authn, serviceAccounts: sa, requests: map[*route]*httputil.ReverseProxy{}, streams: map[*route]*httputil.ReverseProxy{},
		holds: cutOverHolds{timeout: DefaultCutOverHoldTimeout, maxBody: DefaultCutOverHoldMaxBody, poll: holdPoll}}
	if index != nil {
		clients := &reviewClients{index: index}
		if features.Enabled(features.WorkspaceAuthentication) {
			p.workspaceReviews = newWorkspaceReviews(clients)
		}
		if sa != nil {
			p.homeReviews = newHomeReviews(index, clients)
		}
	}
	for _, r := range routes {
		// Streams (watches, chunked lists, logs: no Content-Length) are
		// flushed on every write by ReverseProxy itself; a response of
		// known length is written without flushing, so that its headers,
		// body and end of stream leave in one write instead of three (see
		// docs/performance.md).
		p.requests[r] = &httputil.ReverseProxy{
			Rewrite:        func(*httputil.ProxyRequest) {}, // the target is set on the request before
			Transport:      http1Only(r.transport),
			ModifyResponse: interceptHold,
			ErrorHandler:   p.backendError,
			BufferPool:     copyBuffers,
		}
		p.streams[r] = &httputil.ReverseProxy{
			Rewrite:        func(*httputil.ProxyRequest) {},
			Transport:      r.transport,
			ModifyResponse: interceptHold,
			ErrorHandler:   p.backendError,
			BufferPool:     copyBuffers,
		}
	}
	return p
}

// copyBuffers lends the reverse proxies the buffers they copy response
// bodies through, which ReverseProxy otherwise allocates for every
// response (32 KiB each).
var copyBuffers = &bufferPool{}

type bufferPool struct{ pool sync.Pool }

func (b *bufferPool) Get() []byte {
	if buf, ok := b.pool.Get().(*[]byte); ok {
		return *buf
	}
	return make([]byte, 32<<10)
}

func (b *bufferPool) Put(buf []byte) { b.pool.Put(&buf) }

// forwarded is what ServeHTTP learned about a request before proxying it.
type forwarded struct {
	target  *url.URL
	shard   string
	cluster logicalcluster.Name
}

type forwardedKey struct{}

func (p *proxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	u, passToken, err := p.authenticate(req)
	authFailed := err != nil
	if authFailed {
		// A token the proxy's authenticators refuse may be one of the
		// issuers of the workspace's type, asked once the workspace is
		// resolved below.
		if _, hasToken := bearerToken(req); !hasToken || p.workspaceReviews == nil {
			klog.FromContext(req.Context()).V(4).Info("Authentication failed", "err", err)
			unauthorized(w, req)
			return
		}
		u, passToken = nil, false
	}
	// /clusters/~ is the caller's home.
	if tilde, ok := home.TildePath(req.URL.Path, u); ok {
		req = home.WithPath(req, tilde)
	}
	r := p.match(req.URL.Path)
	if r == nil {
		if authFailed {
			unauthorized(w, req)
			return
		}
		responsewriters.ErrorNegotiated(apierrors.NewNotFound(schema.GroupResource{}, req.URL.Path), scheme.Codecs, schema.GroupVersion{}, w, req)
		return
	}
	fwd := forwarded{}
	innerPath := req.URL.Path
	// hold is set for a request to a logical cluster on a shard, which the
	// proxy keeps while the shard holds it for a cut-over.
	var hold *clusterRequest
	if r.Path == ClustersPath {
		// Unauthenticated requests learn nothing about workspaces, not
		// even whether a path exists; a token may still be one of the
		// issuers of the workspace's type, asked once it is found.
		token, hasToken := bearerToken(req)
		if u == nil && (!hasToken || p.workspaceReviews == nil) {
			unauthorized(w, req)
			return
		}
		path, rest, ok := logicalcluster.SplitRequestPath(req.URL.Path)
		if u == nil && (!ok || path == string(logicalcluster.Wildcard)) {
			unauthorized(w, req)
			return
		}
		switch {
		case ok && path == string(logicalcluster.Wildcard):
			responsewriters.ErrorNegotiated(apierrors.NewForbidden(schema.GroupResource{}, "", errors.New("requests across all logical clusters (/clusters/*) are not served by the front-proxy")),
				scheme.Codecs, schema.GroupVersion{}, w, req)
			return
		case !ok:
			p.denyAccess(w, req, u, rest)
			return
		}
		parsed, err := logicalcluster.ParsePath(path)
		if err != nil {
			if u == nil {
				unauthorized(w, req)
				return
			}
			p.denyAccess(w, req, u, rest)
			return
		}
		target, result := p.index.Resolve(parsed)
		if u == nil {
			// A mount has no shard to review a workspace issuer's token.
			if result == Found && target.MountURL == nil {
				if u, err = p.workspaceReviews.authenticate(req.Context(), target, token); err != nil {
					klog.FromContext(req.Context()).V(4).Info("Workspace token review failed", "err", err)
				}
			}
			if u == nil {
				unauthorized(w, req)
				return
			}
		}
		switch result {
		case NotFound:
			if !p.index.HasSynced() {
				// Just started: the path may be on a shard not listed yet.
				err := apierrors.NewServiceUnavailable("the front-proxy is starting: it does not know every workspace yet, retry")
				err.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: 1}
				responsewriters.ErrorNegotiated(err, scheme.Codecs, schema.GroupVersion{}, w, req)
				return
			}
			p.denyAccess(w, req, u, rest)
			return
		case Unavailable:
			err := apierrors.NewTooManyRequests(fmt.Sprintf("workspace %s is not ready yet, retry", path), 1)
			responsewriters.ErrorNegotiated(err, scheme.Codecs, schema.GroupVersion{}, w, req)
			return
		case NotServing:
			// kcp's front-proxy answer for an Unavailable workspace, word for word.
			http.Error(w, "Not available.", http.StatusServiceUnavailable)
			return
		}
		if target.MountURL == nil {
			// A mount's server is not ours: only a shard's hold is kept.
			hold = &clusterRequest{route: r, path: parsed, rest: rest, rawQuery: req.URL.RawQuery, user: u, passToken: passToken}
		}
		if passToken {
			if u, passToken, err = p.serviceAccountAt(req, u, target.Shard); err != nil || u == nil {
				if err != nil {
					klog.FromContext(req.Context()).V(4).Info("Service account token review failed", "err", err)
				}
				unauthorized(w, req)
				return
			}
		}
		fwd.shard, fwd.cluster = target.Shard, target.Cluster
		setShardLabel(req.Context(), target.Shard)
		if target.MountURL != nil {
			// The mount's URL stands for the workspace: the rest follows it.
			fwd.target = withPath(target.MountURL, rest)
		} else {
			fwd.target = withPath(target.BaseURL, target.Cluster.RequestPath()+rest)
		}
		innerPath = rest
	} else {
		if authFailed {
			if u = p.viewUser(req, r); u == nil {
				unauthorized(w, req)
				return
			}
		}
		fwd.target = withPath(r.backend, req.URL.Path)
	}
	fwd.target.RawQuery = req.URL.RawQuery
	if p.watches != nil && isWatch(req.Method, innerPath, req.URL.RawQuery) {
		name := ""
		if u != nil {
			name = u.GetName()
		}
		release, err := p.watches.acquire(name)
		if err != nil {
			responsewriters.ErrorNegotiated(err, scheme.Codecs, schema.GroupVersion{}, w, req)
			return
		}
		defer release()
	}

	if hold != nil && p.holds.timeout > 0 && !streamrequest.Is(req) && !httpstream.IsUpgradeRequest(req) {
		p.forwardHolding(w, req, *hold, fwd, u, passToken)
		return
	}
	out := p.outgoing(req, r, fwd, u, passToken)
	if streamrequest.Multiplexed(req) {
		p.streams[r].ServeHTTP(w, out)
		return
	}
	p.requests[r].ServeHTTP(w, out)
}

// outgoing is the request to send to fwd's target as u.
func (p *proxy) outgoing(req *http.Request, r *route, fwd forwarded, u user.Info, passToken bool) *http.Request {
	out := req.Clone(context.WithValue(req.Context(), forwardedKey{}, fwd))
	out.URL = fwd.target
	out.Host = fwd.target.Host
	out.RequestURI = ""
	setIdentity(out.Header, r, u, passToken)
	return out
}

// viewUser authenticates the bearer token of a request to a view (a route
// other than /clusters/) with the issuers of the workspace the view's path
// names, as kcp's front-proxy does: the first /clusters/<workspace> after
// the route's prefix (/services/apiexport/<export cluster>/<export>/
// clusters/<consumer>/...). The view gets the identity, scoped to that
// workspace, in request headers; nil when the token is not one of the
// workspace's issuers, or the path names no known workspace.
func (p *proxy) viewUser(req *http.Request, r *route) user.Info {
	path, ok := viewWorkspace(r.Path, req.URL.Path)
	if !ok {
		return nil
	}
	target, result := p.index.Resolve(path)
	if result != Found {
		return nil
	}
	token, _ := bearerToken(req)
	u, err := p.workspaceReviews.authenticate(req.Context(), target, token)
	if err != nil {
		klog.FromContext(req.Context()).V(4).Info("Workspace token review for a view failed", "err", err)
	}
	return u
}

// viewWorkspace returns the workspace that a path below a route names in
// its first /clusters/<workspace> segment; false for none or the wildcard.
func viewWorkspace(routePath, path string) (logicalcluster.Path, bool) {
	rest := strings.TrimPrefix(path, strings.TrimSuffix(routePath, "/"))
	i := strings.Index(rest, logicalcluster.ClustersPrefix)
	if i < 0 {
		return "", false
	}
	cluster, _, ok := logicalcluster.SplitRequestPath(rest[i:])
	if !ok || cluster == string(logicalcluster.Wildcard) {
		return "", false
	}
	parsed, err := logicalcluster.ParsePath(cluster)
	return parsed, err == nil
}

// unauthorized answers 401.
func unauthorized(w http.ResponseWriter, req *http.Request) {
	responsewriters.ErrorNegotiated(apierrors.NewUnauthorized("Unauthorized"), scheme.Codecs, schema.GroupVersion{}, w, req)
}

// http1Only returns a copy of rt that never negotiates HTTP/2: Go's
// HTTP/2 client refuses requests with an Upgrade header.
func http1Only(rt http.RoundTripper) http.RoundTripper {
	t, ok := rt.(*http.Transport)
	if !ok {
		return rt
	}
	t = t.Clone()
	t.ForceAttemptHTTP2 = false
	t.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	if t.TLSClientConfig != nil {
		t.TLSClientConfig = t.TLSClientConfig.Clone()
		t.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	return t
}

// authenticate returns the request's user (nil when it sent no
// credentials) and whether its bearer token, a shard service account
// token, is passed on for the shard to authenticate.
func (p *proxy) authenticate(req *http.Request) (user.Info, bool, error) {
	if p.serviceAccounts != nil {
		if token, ok := bearerToken(req); ok {
			if u, ok, err := p.serviceAccounts.authenticate(token); ok || err != nil {
				return u, ok, err
			}
		}
	}
	resp, ok, err := p.authenticator.AuthenticateRequest(req)
	if err != nil {
		return nil, false, err
	}
	if !ok {
		return nil, false, nil
	}
	return resp.User, false, nil
}

// serviceAccountAt returns who a service account token is for a request
// to a workspace on shard, and whether the token is passed on: to its own
// shard it is (that shard looks the account up); to another, the token's
// shard reviews it and its answer goes on as the identity, so that it
// authenticates there too. Nil: not authenticated.
func (p *proxy) serviceAccountAt(req *http.Request, u user.Info, shard string) (user.Info, bool, error) {
	home, ok := scope.ServiceAccountCluster(u)
	if !ok || p.homeReviews == nil {
		return u, true, nil
	}
	if t, result := p.index.Resolve(home.Path()); result == Found && t.Shard == shard {
		return u, true, nil
	}
	token, _ := bearerToken(req)
	reviewed, ok, err := p.homeReviews.authenticate(req.Context(), token)
	if err != nil || !ok {
		return nil, false, err
	}
	return reviewed, false, nil
}

func bearerToken(req *http.Request) (string, bool) {
	auth := strings.TrimSpace(req.Header.Get("Authorization"))
	scheme, token, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// setIdentity replaces whatever identity headers a client sent with the
// authenticated user. Privileged groups are dropped.
func setIdentity(h http.Header, r *route, u user.Info, passToken bool) {
	for name := range h {
		if strings.HasPrefix(strings.ToLower(name), "x-remote-") {
			delete(h, name)
		}
	}
	if !passToken {
		h.Del("Authorization")
	}
	if u == nil || passToken {
		return
	}
	h.Set(r.UserHeader, u.GetName())
	for _, g := range u.GetGroups() {
		if !dropped(g) {
			h.Add(r.GroupHeader, g)
		}
	}
	for k, values := range u.GetExtra() {
		name := r.ExtraHeaderPrefix + url.PathEscape(k)
		for _, v := range values {
			h.Add(name, v)
		}
	}
}

// match returns the route of the longest mapping path that serves path.
func (p *proxy) match(path string) *route {
	for _, r := range p.routes {
		if r.Path == ClustersPath {
			if strings.HasPrefix(path, logicalcluster.ClustersPrefix) {
				return r
			}
			continue
		}
		if r.matches(path) {
			return r
		}
	}
	return nil
}

// withPath returns base with path appended to its own.
func withPath(base *url.URL, path string) *url.URL {
	u := *base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	return &u
}

// denyAccess answers a path that is unknown, or that the user may not
// know of, exactly as a shard answers a workspace the user has no access
// to: existence does not leak.
func (p *proxy) denyAccess(w http.ResponseWriter, req *http.Request, u user.Info, rest string) {
	inner := req.Clone(req.Context())
	inner.URL = &url.URL{Path: rest, RawQuery: req.URL.RawQuery}
	info, err := requestInfos.NewRequestInfo(inner)
	if err != nil {
		info = &apirequest.RequestInfo{Path: rest, Verb: strings.ToLower(req.Method)}
	}
	ctx := apirequest.WithRequestInfo(apirequest.WithUser(req.Context(), u), info)
	attrs, err := genericapifilters.GetAuthorizerAttributes(ctx)
	if err != nil {
		responsewriters.ErrorNegotiated(apierrors.NewForbidden(schema.GroupResource{}, "", errors.New(workspacecontent.DenyReason)), scheme.Codecs, schema.GroupVersion{}, w, req)
		return
	}
	w.Header().Set("Cache-Control", "no-cache, private")
	responsewriters.Forbidden(attrs, w, req.WithContext(ctx), workspacecontent.DenyReason, scheme.Codecs)
}

// backendError answers when a backend cannot be reached: the shard's
// workspaces are unavailable, nothing else is.
func (p *proxy) backendError(w http.ResponseWriter, req *http.Request, err error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, errHeld) {
		return
	}
	fwd, _ := req.Context().Value(forwardedKey{}).(forwarded)
	what := "backend " + req.URL.Host
	if fwd.shard != "" {
		what = "shard " + fwd.shard
	}
	klog.FromContext(req.Context()).V(2).Info("Proxying failed", "target", req.URL.Host, "err", err)
	status := apierrors.NewServiceUnavailable(fmt.Sprintf("%s is not reachable: %v", what, err))
	responsewriters.ErrorNegotiated(status, scheme.Codecs, schema.GroupVersion{}, w, req)
}
