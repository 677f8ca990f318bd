// Package apiexport is the virtual workspace of an APIExport's owner:
// /services/apiexport/<export cluster>/<export name>/clusters/<name or *>/...
// serves the export's resources in every workspace of the shard that binds
// it, and of the resources it claims the objects that carry the claim's
// label where a binding accepted the claim, as if they were one API server. The owner needs a verb on apiexports/content
// (resourceName = the export) in the export's workspace; the view then acts
// on the shard with its own privileged credentials, adding the export's
// identity to wildcard requests, so that nothing else of a consumer's is
// reachable through it.
package apiexport

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/virtual/framework"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Name is the view's name, the segment after /services/.
const Name = viewurl.APIExportView

// Prefix is the path of the view.
const Prefix = viewurl.ServicesPrefix + Name + "/"

// Config is what the view needs of the shard it serves.
type Config struct {
	// Shard reaches the shard with privileged credentials (wildcard
	// requests by identity); its host is the shard's base URL. The
	// credentials never reach a caller.
	Shard *rest.Config
	// APIBindings are the shard's APIBindings (v1alpha2) in all its
	// logical clusters.
	APIBindings *wildcardinformer.Informer
	// Authorizer decides in the logical cluster of the context
	// (logicalcluster.WithCluster): the shard's authorizer, or
	// SubjectAccessReviews (framework.SubjectAccessReviews).
	Authorizer authorizer.Authorizer
}

// View serves the view. Build it with New.
type View struct {
	bindings *wildcardinformer.Informer
	indexed  bool
	authz    authorizer.Authorizer
	shard    *rest.Config
	// transport carries the shard's credentials.
	transport http.RoundTripper
	proxy     *httputil.ReverseProxy
	client    *http.Client
}

// New returns the view. Call it before the APIBindings informer starts, so
// that it can index the bindings by export.
func New(c Config) (*View, error) {
	if c.Shard == nil || c.APIBindings == nil || c.Authorizer == nil {
		return nil, errors.New("apiexport view: Shard, APIBindings and Authorizer are required")
	}
	shard := rest.CopyConfig(c.Shard)
	// The view forwards watches: no client-side timeout.
	shard.Timeout = 0
	transport, err := rest.TransportFor(shard)
	if err != nil {
		return nil, fmt.Errorf("apiexport view: shard transport: %w", err)
	}
	v := &View{
		bindings:  c.APIBindings,
		indexed:   addExportIndex(c.APIBindings),
		authz:     c.Authorizer,
		shard:     shard,
		transport: transport,
		client:    &http.Client{Transport: transport},
	}
	v.proxy = &httputil.ReverseProxy{
		Rewrite:       func(*httputil.ProxyRequest) {}, // the target is set before
		Transport:     transport,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, req *http.Request, err error) {
			if errors.Is(err, req.Context().Err()) {
				return
			}
			framework.Error(w, req, apierrors.NewServiceUnavailable(fmt.Sprintf("the shard is not reachable: %v", err)))
		},
	}
	return v, nil
}

// request is a parsed request of the view.
type request struct {
	exportCluster logicalcluster.Name
	exportName    string
	cluster       logicalcluster.Name
	// rest is the path below /clusters/<cluster>: /api..., /apis...
	rest string
	info *apirequest.RequestInfo
}

var requestInfos = &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// parse splits /services/apiexport/<cluster>/<export>/clusters/<c>/<rest>.
func parse(req *http.Request) (*request, bool) {
	exportCluster, after, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, Prefix), "/")
	exportName, after, _ := strings.Cut(after, "/")
	clusterSegment, rest, ok := logicalcluster.SplitRequestPath("/" + after)
	if !ok || logicalcluster.ValidateName(exportCluster) != nil || exportName == "" {
		return nil, false
	}
	cluster, err := logicalcluster.ParseNameOrWildcard(clusterSegment)
	if err != nil {
		return nil, false
	}
	r := &request{exportCluster: logicalcluster.Name(exportCluster), exportName: exportName, cluster: cluster, rest: rest}
	inner := req.Clone(req.Context())
	inner.URL.Path = r.rest
	inner.URL.RawPath = ""
	info, err := requestInfos.NewRequestInfo(inner)
	if err != nil {
		return nil, false
	}
	r.info = info
	return r, true
}

// ServeHTTP authorizes the caller against the export, then serves
// discovery, the export's resources and the accepted claims.
func (v *View) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r, ok := parse(req)
	if !ok {
		framework.NotFound(w, req, req.URL.Path)
		return
	}
	if !v.authorized(w, req, r) {
		return
	}
	view := viewOf(r.exportCluster, r.exportName, bindingsOf(v.bindings, v.indexed, r.exportCluster, r.exportName))
	if !r.info.IsResourceRequest {
		v.serveDiscovery(w, req, r, view)
		return
	}
	gr := schema.GroupResource{Group: r.info.APIGroup, Resource: r.info.Resource}
	if r.cluster.IsWildcard() && !logicalcluster.WildcardAllows(r.info.Verb) {
		err := apierrors.NewMethodNotSupported(gr, r.info.Verb)
		err.ErrStatus.Message = fmt.Sprintf("%s is not supported in the `*` logical cluster: name a logical cluster", r.info.Verb)
		framework.Error(w, req, err)
		return
	}
	if b := view.bound[gr]; b != nil {
		v.serveBound(w, req, r, b)
		return
	}
	if c := view.claimed[gr]; c != nil {
		v.serveClaimed(w, req, r, c)
		return
	}
	v.notFound(w, req, r, gr)
}

// authorized checks the caller's verb on apiexports/content in the
// export's workspace. Anyone else learns nothing, not even whether the
// export exists.
func (v *View) authorized(w http.ResponseWriter, req *http.Request, r *request) bool {
	u, ok := apirequest.UserFrom(req.Context())
	if !ok {
		framework.Error(w, req, apierrors.NewUnauthorized("Unauthorized"))
		return false
	}
	verb := r.info.Verb
	if !r.info.IsResourceRequest {
		verb = "get"
	}
	attrs := authorizer.AttributesRecord{
		User: u, Verb: verb, APIGroup: apisv1alpha2.SchemeGroupVersion.Group, APIVersion: apisv1alpha2.SchemeGroupVersion.Version,
		Resource: "apiexports", Subresource: "content", Name: r.exportName, ResourceRequest: true,
	}
	ctx := logicalcluster.WithCluster(req.Context(), r.exportCluster)
	decision, reason, err := v.authz.Authorize(ctx, attrs)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Authorizing an APIExport view request failed", "export", exportKey(r.exportCluster, r.exportName), "user", u.GetName(), "err", err)
	}
	if decision == authorizer.DecisionAllow {
		return true
	}
	// The denial as kcp's view words it: the request's own resource, and
	// the export's workspace's RBAC decision as the reason.
	requested := authorizer.AttributesRecord{
		User: u, Verb: verb, APIGroup: r.info.APIGroup, APIVersion: r.info.APIVersion, Resource: r.info.Resource,
		Subresource: r.info.Subresource, Namespace: r.info.Namespace, Name: r.info.Name, ResourceRequest: r.info.IsResourceRequest, Path: r.info.Path,
	}
	framework.Error(w, req, responsewriters.ForbiddenStatusError(requested,
		fmt.Sprintf("API export: %q, workspace: %q RBAC decision: %v", r.exportName, r.exportCluster, reason)))
	return false
}

// notFound answers a resource the view does not serve in the cluster.
func (v *View) notFound(w http.ResponseWriter, req *http.Request, r *request, gr schema.GroupResource) {
	err := apierrors.NewNotFound(gr, r.info.Name)
	err.ErrStatus.Message = fmt.Sprintf("the server could not find the requested resource: %s is neither a resource of APIExport %s nor a claim accepted in %s",
		gr, exportKey(r.exportCluster, r.exportName), r.cluster)
	framework.Error(w, req, err)
}

// serveBound forwards a request for one of the export's own resources:
// wildcard list and watch by the export's identity, anything else in a
// workspace that binds the export.
func (v *View) serveBound(w http.ResponseWriter, req *http.Request, r *request, b *boundResource) {
	path := r.cluster.RequestPath() + r.rest
	if r.cluster.IsWildcard() {
		path = logicalcluster.Wildcard.RequestPath() + withIdentity(r.rest, r.info, b.identityHash)
	} else if !b.clusters[r.cluster] {
		v.notFound(w, req, r, schema.GroupResource{Group: r.info.APIGroup, Resource: r.info.Resource})
		return
	}
	v.forward(w, req, path)
}

// withIdentity qualifies the resource segment of a collection path with an
// identity: .../<resource> becomes .../<resource>:<identity>.
func withIdentity(rest string, info *apirequest.RequestInfo, identity string) string {
	if identity == "" {
		return rest
	}
	suffix := "/" + info.Resource
	if i := strings.LastIndex(rest, suffix); i >= 0 && i+len(suffix) == len(rest) {
		return rest + ":" + identity
	}
	return rest
}

// forward proxies the request to path on the shard, with the shard
// credentials instead of the caller's.
func (v *View) forward(w http.ResponseWriter, req *http.Request, path string) {
	out := req.Clone(req.Context())
	target := *out.URL
	base, err := shardURL(v.shard)
	if err != nil {
		framework.Error(w, req, apierrors.NewServiceUnavailable(err.Error()))
		return
	}
	target.Scheme, target.Host = base.Scheme, base.Host
	target.Path = strings.TrimSuffix(base.Path, "/") + path
	target.RawPath = ""
	out.URL = &target
	out.Host = target.Host
	out.RequestURI = ""
	dropCallerIdentity(out.Header)
	v.proxy.ServeHTTP(w, out)
}

// dropCallerIdentity removes whatever could make the shard act as someone
// other than the view.
func dropCallerIdentity(h http.Header) {
	h.Del("Authorization")
	for name := range h {
		l := strings.ToLower(name)
		if strings.HasPrefix(l, "impersonate-") || strings.HasPrefix(l, "x-remote-") {
			delete(h, name)
		}
	}
}
