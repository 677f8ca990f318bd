// Package apiresourceschema is the virtual workspace of the
// APIResourceSchemas a workspace has bound, kcp's "apiresourceschema" view:
//
//	/services/apiresourceschema/<consumer cluster>[/clusters/<any>]/apis/apis.kcp.io/v1alpha1/apiresourceschemas[/<name>]
//
// serves, read-only, the schemas of the resources that the Bound
// APIBindings of the consumer workspace bind, wherever the exports and
// their schemas live. It lets a provider's operator see what a consumer
// uses. The /clusters/<any> segment is what cluster-aware clients add; it
// is ignored, as in kcp: the consumer comes from the first segment, and
// only a shard that hosts it knows its bindings. Callers need "get" on
// apibindings in the consumer workspace, asked there as an ordinary
// SubjectAccessReview (kcp's delegated authorizer, not a deep review):
// access to the workspace is part of the permission.
package apiresourceschema

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	_ "github.com/shardplane/shardplane/pkg/apis/install" // encode kcp's types
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/virtual/framework"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
)

// Name is the view's name, the segment after /services/.
const Name = viewurl.APIResourceSchemaView

// Prefix is the path of the view.
const Prefix = viewurl.ServicesPrefix + Name + "/"

// Resource is the one resource the view serves.
var Resource = apisv1alpha1.SchemeGroupVersion.WithResource("apiresourceschemas")

// Config is what the view needs of the shard it serves.
type Config struct {
	// Bindings lists the APIBindings of a logical cluster of the shard.
	Bindings func(logicalcluster.Name) ([]*apisv1alpha2.APIBinding, error)
	// Schema returns an APIResourceSchema of any logical cluster, on this
	// shard or another; a NotFound error when there is none.
	Schema func(ctx context.Context, cluster logicalcluster.Name, name string) (*apisv1alpha1.APIResourceSchema, error)
	// Authorizer decides in the logical cluster of the context
	// (logicalcluster.WithCluster) as an ordinary SubjectAccessReview
	// there would: workspace access included, not a deep review.
	Authorizer authorizer.Authorizer
}

// View serves the view. Build it with New.
type View struct {
	c Config
}

// New returns the view.
func New(c Config) (*View, error) {
	if c.Bindings == nil || c.Schema == nil || c.Authorizer == nil {
		return nil, errors.New("apiresourceschema view: Bindings, Schema and Authorizer are required")
	}
	return &View{c: c}, nil
}

// request is a parsed request of the view.
type request struct {
	consumer logicalcluster.Name
	info     *apirequest.RequestInfo
}

var requestInfos = &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// parse splits /services/apiresourceschema/<consumer>[/clusters/<any>]<rest>.
// The consumer must be a logical cluster name: not a path, not `*`.
func parse(req *http.Request) (*request, bool) {
	consumer, rest, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, Prefix), "/")
	if logicalcluster.ValidateName(consumer) != nil {
		return nil, false
	}
	rest = "/" + rest
	if _, below, ok := logicalcluster.SplitRequestPath(rest); ok {
		rest = below
	}
	inner := req.Clone(req.Context())
	inner.URL.Path = rest
	inner.URL.RawPath = ""
	info, err := requestInfos.NewRequestInfo(inner)
	if err != nil {
		return nil, false
	}
	return &request{consumer: logicalcluster.Name(consumer), info: info}, true
}

// ServeHTTP authorizes the caller in the consumer workspace, then serves
// discovery, list, get and watch of the bound schemas.
func (v *View) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r, ok := parse(req)
	if !ok {
		framework.NotFound(w, req, req.URL.Path)
		return
	}
	if !v.authorized(w, req, r) {
		return
	}
	bound, err := boundSchemas(v.c.Bindings, r.consumer)
	if err != nil {
		framework.Error(w, req, apierrors.NewInternalError(err))
		return
	}
	// A workspace that binds nothing, or that this shard does not host,
	// has no API here at all.
	if len(bound) == 0 {
		framework.NotFound(w, req, r.info.Path)
		return
	}
	if !r.info.IsResourceRequest {
		serveDiscovery(w, req, r)
		return
	}
	if r.info.APIGroup != Resource.Group || r.info.APIVersion != Resource.Version || r.info.Resource != Resource.Resource ||
		r.info.Subresource != "" || r.info.Namespace != "" {
		framework.NotFound(w, req, r.info.Path)
		return
	}
	switch r.info.Verb {
	case "get":
		v.get(w, req, r, bound)
	case "list":
		v.list(w, req, bound)
	case "watch":
		serveEmptyWatch(w)
	default:
		// The authorizer refused every other verb already.
		framework.Error(w, req, apierrors.NewMethodNotSupported(Resource.GroupResource(), r.info.Verb))
	}
}

// readOnlyVerbs are the verbs of the view; kcp's authorizer refuses the
// rest before anything else.
var readOnlyVerbs = sets.New("get", "list", "watch")

// authorized allows read-only verbs to callers who may get apibindings in
// the consumer workspace, and answers 403 otherwise, in kcp's words.
func (v *View) authorized(w http.ResponseWriter, req *http.Request, r *request) bool {
	u, ok := apirequest.UserFrom(req.Context())
	if !ok {
		framework.Error(w, req, apierrors.NewUnauthorized("Unauthorized"))
		return false
	}
	requested := authorizer.AttributesRecord{
		User: u, Verb: r.info.Verb, APIGroup: r.info.APIGroup, APIVersion: r.info.APIVersion, Resource: r.info.Resource,
		Subresource: r.info.Subresource, Namespace: r.info.Namespace, Name: r.info.Name, ResourceRequest: r.info.IsResourceRequest, Path: r.info.Path,
	}
	if !readOnlyVerbs.Has(r.info.Verb) {
		framework.Error(w, req, responsewriters.ForbiddenStatusError(requested, "only read-only access is allowed to apiresourceschemas"))
		return false
	}
	check := authorizer.AttributesRecord{
		User: u, Verb: "get", APIGroup: apisv1alpha2.SchemeGroupVersion.Group, APIVersion: apisv1alpha2.SchemeGroupVersion.Version,
		Resource: "apibindings", ResourceRequest: true,
	}
	ctx := logicalcluster.WithCluster(req.Context(), r.consumer)
	decision, reason, err := v.c.Authorizer.Authorize(ctx, check)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Authorizing an APIResourceSchema view request failed", "consumer", r.consumer, "user", u.GetName(), "err", err)
	}
	if decision == authorizer.DecisionAllow {
		return true
	}
	framework.Error(w, req, responsewriters.ForbiddenStatusError(requested,
		fmt.Sprintf("consumer cluster: %q RBAC decision: %v - user needs permission to read apibindings", r.consumer, reason)))
	return false
}

func (v *View) get(w http.ResponseWriter, req *http.Request, r *request, bound map[string]logicalcluster.Name) {
	cluster, ok := bound[r.info.Name]
	if !ok {
		framework.Error(w, req, apierrors.NewNotFound(Resource.GroupResource(), r.info.Name))
		return
	}
	s, err := v.c.Schema(req.Context(), cluster, r.info.Name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			err = apierrors.NewNotFound(Resource.GroupResource(), r.info.Name)
		}
		framework.Error(w, req, err)
		return
	}
	write(w, req, s)
}

func (v *View) list(w http.ResponseWriter, req *http.Request, bound map[string]logicalcluster.Name) {
	out := &apisv1alpha1.APIResourceSchemaList{Items: []apisv1alpha1.APIResourceSchema{}}
	for _, name := range sets.List(sets.KeySet(bound)) {
		s, err := v.c.Schema(req.Context(), bound[name], name)
		if apierrors.IsNotFound(err) {
			// Deleted since it was bound.
			continue
		}
		if err != nil {
			framework.Error(w, req, err)
			return
		}
		out.Items = append(out.Items, *s)
	}
	write(w, req, out)
}

// write answers obj in the encoding the client asked for (JSON or YAML:
// kcp's types have no protobuf).
func write(w http.ResponseWriter, req *http.Request, obj runtime.Object) {
	responsewriters.WriteObjectNegotiated(legacyscheme.Codecs.WithoutConversion(), negotiation.DefaultEndpointRestrictions,
		apisv1alpha1.SchemeGroupVersion, w, req, http.StatusOK, obj, false)
}

// serveEmptyWatch answers a watch with no events, ending at once: kcp's
// view has no watch of its own (an empty watch), and neither has this one.
func serveEmptyWatch(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
}
