// Package replication is the virtual workspace of the copies a
// ClusterCachedResource publishes, kcp's "replication" view:
//
//	/services/replication/<provider cluster>/<cached resource>[/clusters/<any>]/apis/<group>/<version>/<resource>[/<name>]
//
// serves, read-only, the objects the ClusterCachedResource of the provider
// workspace replicated into the cache server, as their workspace served
// them, from whatever shard reads the cache server. Its URL is what
// ClusterCachedResourceEndpointSlices publish. Callers need "get" on that
// ClusterCachedResource in the provider workspace, asked as a deep
// SubjectAccessReview; every verb but get, list and watch is refused.
package replication

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/virtual/framework"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
)

// Name is the view's name, the segment after /services/.
const Name = viewurl.ReplicationView

// Prefix is the path of the view.
const Prefix = viewurl.ServicesPrefix + Name + "/"

// Config is what the view needs.
type Config struct {
	// CachedResource returns a ClusterCachedResource of a logical cluster;
	// a NotFound error when there is none.
	CachedResource func(ctx context.Context, cluster logicalcluster.Name, name string) (*cachev1alpha1.ClusterCachedResource, error)
	// Copies lists the CachedObjects the ClusterCachedResource name of
	// cluster published, from every shard.
	Copies func(ctx context.Context, cluster logicalcluster.Name, name string) ([]unstructured.Unstructured, error)
	// Authorizer decides in the logical cluster of the context as a deep
	// SubjectAccessReview there would.
	Authorizer authorizer.Authorizer
}

// View serves the view. Build it with New.
type View struct {
	c Config
}

// New returns the view.
func New(c Config) (*View, error) {
	if c.CachedResource == nil || c.Copies == nil || c.Authorizer == nil {
		return nil, errors.New("replication view: CachedResource, Copies and Authorizer are required")
	}
	return &View{c: c}, nil
}

// request is a parsed request of the view.
type request struct {
	provider logicalcluster.Name
	name     string
	info     *apirequest.RequestInfo
}

var requestInfos = &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// parse splits /services/replication/<provider>/<name>[/clusters/<any>]<rest>.
func parse(req *http.Request) (*request, bool) {
	parts := strings.SplitN(strings.TrimPrefix(req.URL.Path, Prefix), "/", 3)
	if len(parts) < 2 || logicalcluster.ValidateName(parts[0]) != nil || parts[1] == "" {
		return nil, false
	}
	rest := "/"
	if len(parts) == 3 {
		rest += parts[2]
	}
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
	return &request{provider: logicalcluster.Name(parts[0]), name: parts[1], info: info}, true
}

// readOnlyVerbs are the verbs of the view.
var readOnlyVerbs = sets.New("get", "list", "watch")

// ServeHTTP authorizes the caller in the provider workspace, then serves
// list, get and watch of the copies.
func (v *View) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r, ok := parse(req)
	if !ok {
		framework.NotFound(w, req, req.URL.Path)
		return
	}
	if !v.authorized(w, req, r) {
		return
	}
	cr, err := v.c.CachedResource(req.Context(), r.provider, r.name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			framework.NotFound(w, req, req.URL.Path)
			return
		}
		framework.Error(w, req, err)
		return
	}
	gr := schema.GroupResource{Group: cr.Spec.Group, Resource: cr.Spec.Resource}
	if !r.info.IsResourceRequest || r.info.APIGroup != cr.Spec.Group || r.info.Resource != cr.Spec.Resource ||
		(cr.Spec.Version != "" && r.info.APIVersion != cr.Spec.Version) || r.info.Subresource != "" || r.info.Namespace != "" {
		framework.NotFound(w, req, r.info.Path)
		return
	}
	copies, err := v.c.Copies(req.Context(), r.provider, r.name)
	if err != nil {
		framework.Error(w, req, apierrors.NewServiceUnavailable(fmt.Sprintf("reading the cache server: %v", err)))
		return
	}
	objects := make([]map[string]interface{}, 0, len(copies))
	for i := range copies {
		if raw, ok, _ := unstructured.NestedMap(copies[i].Object, "spec", "raw"); ok {
			objects = append(objects, raw)
		}
	}
	sort.Slice(objects, func(i, j int) bool {
		return (&unstructured.Unstructured{Object: objects[i]}).GetName() < (&unstructured.Unstructured{Object: objects[j]}).GetName()
	})
	switch r.info.Verb {
	case "get":
		for _, o := range objects {
			if (&unstructured.Unstructured{Object: o}).GetName() == r.info.Name {
				writeJSON(w, o)
				return
			}
		}
		framework.Error(w, req, apierrors.NewNotFound(gr, r.info.Name))
	case "list":
		kind := ""
		if len(objects) > 0 {
			kind = (&unstructured.Unstructured{Object: objects[0]}).GetKind()
		}
		items := make([]interface{}, 0, len(objects))
		for _, o := range objects {
			items = append(items, o)
		}
		writeJSON(w, map[string]interface{}{
			"apiVersion": schema.GroupVersion{Group: r.info.APIGroup, Version: r.info.APIVersion}.String(),
			"kind":       kind + "List",
			"metadata":   map[string]interface{}{},
			"items":      items,
		})
	default:
		// A watch ends at once with no events: the copies are listed, not
		// watched, as kcp's view of bound schemas does.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
	}
}

// authorized allows read-only verbs to callers who may get the
// ClusterCachedResource in the provider workspace, and answers 403
// otherwise.
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
		framework.Error(w, req, responsewriters.ForbiddenStatusError(requested, "only read-only access is allowed to cached resources"))
		return false
	}
	check := authorizer.AttributesRecord{
		User: u, Verb: "get", APIGroup: cachev1alpha1.GroupName, APIVersion: cachev1alpha1.SchemeGroupVersion.Version,
		Resource: "clustercachedresources", Name: r.name, ResourceRequest: true,
	}
	ctx := logicalcluster.WithCluster(req.Context(), r.provider)
	decision, reason, err := v.c.Authorizer.Authorize(ctx, check)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Authorizing a replication view request failed", "provider", r.provider, "user", u.GetName(), "err", err)
	}
	if decision == authorizer.DecisionAllow {
		return true
	}
	framework.Error(w, req, responsewriters.ForbiddenStatusError(requested,
		fmt.Sprintf("provider cluster: %q RBAC decision: %v - user needs permission to get clustercachedresources/%s", r.provider, reason, r.name)))
	return false
}

func writeJSON(w http.ResponseWriter, obj interface{}) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(obj)
}
