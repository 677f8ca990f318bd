// Package replication is the virtual workspace of the copies a
// ClusterCachedResource publishes, kcp's "replication" view:
//
//	/services/replication/<provider cluster>/<endpoint slice>[/clusters/<consumer>]/apis/<group>/<version>/<resource>[/<name>]
//
// serves, read-only, the objects the ClusterCachedResource that the
// ClusterCachedResourceEndpointSlice names replicated into the cache
// server, as their workspace served them, from whatever shard reads the
// cache server. Its URL is what the slices publish; a shard serving a
// virtual resource of an APIExport in a consumer workspace sends the
// request here below /clusters/<consumer>. As kcp's, callers need the
// request's verb on apiexports/content of the APIExport the slice names,
// in that export's workspace, and a request below /clusters/<consumer>
// needs an APIBinding there that binds the resource from that export.
// Every verb but get, list and watch is refused.
package replication

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
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
	// EndpointSlice returns a ClusterCachedResourceEndpointSlice of a
	// logical cluster on any shard; a NotFound error when there is none.
	EndpointSlice func(ctx context.Context, cluster logicalcluster.Name, name string) (*cachev1alpha1.ClusterCachedResourceEndpointSlice, error)
	// CachedResource returns a ClusterCachedResource of a logical cluster
	// on any shard; a NotFound error when there is none.
	CachedResource func(ctx context.Context, cluster logicalcluster.Name, name string) (*cachev1alpha1.ClusterCachedResource, error)
	// Copies lists the CachedObjects the ClusterCachedResource name of
	// cluster published, from every shard.
	Copies func(ctx context.Context, cluster logicalcluster.Name, name string) (*unstructured.UnstructuredList, error)
	// WatchCopies watches them from resourceVersion (one of Copies' lists;
	// empty: the current copies first, as ADDED).
	WatchCopies func(ctx context.Context, cluster logicalcluster.Name, name, resourceVersion string) (watch.Interface, error)
	// APIBindings returns the APIBindings of a logical cluster of the shard.
	APIBindings func(cluster logicalcluster.Name) ([]*apisv1alpha2.APIBinding, error)
	// ResolvePath maps a workspace path to its logical cluster; nil: only
	// paths that are logical cluster names resolve.
	ResolvePath func(logicalcluster.Path) (logicalcluster.Name, bool)
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
	if c.EndpointSlice == nil || c.CachedResource == nil || c.Copies == nil || c.WatchCopies == nil || c.APIBindings == nil || c.Authorizer == nil {
		return nil, errors.New("replication view: EndpointSlice, CachedResource, Copies, WatchCopies, APIBindings and Authorizer are required")
	}
	return &View{c: c}, nil
}

// request is a parsed request of the view.
type request struct {
	provider logicalcluster.Name
	slice    string
	// target is the consumer cluster below /clusters/; empty without it.
	target logicalcluster.Name
	info   *apirequest.RequestInfo
}

var requestInfos = &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// parse splits /services/replication/<provider>/<slice>[/clusters/<target>]<rest>.
func parse(req *http.Request) (*request, bool) {
	parts := strings.SplitN(strings.TrimPrefix(req.URL.Path, Prefix), "/", 3)
	if len(parts) < 2 || logicalcluster.ValidateName(parts[0]) != nil || parts[1] == "" {
		return nil, false
	}
	rest := "/"
	if len(parts) == 3 {
		rest += parts[2]
	}
	r := &request{provider: logicalcluster.Name(parts[0]), slice: parts[1]}
	if target, below, ok := logicalcluster.SplitRequestPath(rest); ok {
		name := logicalcluster.Name(target)
		if !name.IsWildcard() && logicalcluster.ValidateName(target) != nil {
			return nil, false
		}
		r.target, rest = name, below
	}
	inner := req.Clone(req.Context())
	inner.URL.Path = rest
	inner.URL.RawPath = ""
	info, err := requestInfos.NewRequestInfo(inner)
	if err != nil {
		return nil, false
	}
	r.info = info
	return r, true
}

// readOnlyVerbs are the verbs of the view.
var readOnlyVerbs = sets.New("get", "list", "watch")

// ServeHTTP authorizes the caller, then serves get, list and watch of the
// copies.
func (v *View) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r, ok := parse(req)
	if !ok {
		framework.NotFound(w, req, req.URL.Path)
		return
	}
	u, ok := apirequest.UserFrom(req.Context())
	if !ok {
		framework.Error(w, req, apierrors.NewUnauthorized("Unauthorized"))
		return
	}
	requested := authorizer.AttributesRecord{
		User: u, Verb: r.info.Verb, APIGroup: r.info.APIGroup, APIVersion: r.info.APIVersion, Resource: r.info.Resource,
		Subresource: r.info.Subresource, Namespace: r.info.Namespace, Name: r.info.Name, ResourceRequest: r.info.IsResourceRequest, Path: r.info.Path,
	}
	if !readOnlyVerbs.Has(r.info.Verb) {
		framework.Error(w, req, responsewriters.ForbiddenStatusError(requested, "write access to the replication virtual workspace is not allowed"))
		return
	}
	ctx := req.Context()
	slice, err := v.c.EndpointSlice(ctx, r.provider, r.slice)
	if err != nil {
		v.lookupFailed(w, req, err)
		return
	}
	cr, err := v.c.CachedResource(ctx, r.provider, slice.Spec.ClusterCachedResource.Name)
	if err != nil {
		v.lookupFailed(w, req, err)
		return
	}
	if allowed, reason := v.authorize(ctx, r, u, slice, cr); !allowed {
		framework.Error(w, req, responsewriters.ForbiddenStatusError(requested, reason))
		return
	}
	if !r.info.IsResourceRequest || r.info.APIGroup != cr.Spec.Group || r.info.Resource != cr.Spec.Resource ||
		(cr.Spec.Version != "" && r.info.APIVersion != cr.Spec.Version) || r.info.Subresource != "" || r.info.Namespace != "" {
		framework.NotFound(w, req, r.info.Path)
		return
	}
	cluster := r.target
	if cluster == "" || cluster.IsWildcard() {
		cluster = r.provider
	}
	gr := schema.GroupResource{Group: cr.Spec.Group, Resource: cr.Spec.Resource}
	selector, err := newSelector(req)
	if err != nil {
		framework.Error(w, req, apierrors.NewBadRequest(err.Error()))
		return
	}
	if r.info.Verb == "watch" {
		v.serveWatch(w, req, r, cr, cluster, selector)
		return
	}
	copies, err := v.c.Copies(ctx, r.provider, cr.Name)
	if err != nil {
		framework.Error(w, req, apierrors.NewServiceUnavailable(fmt.Sprintf("reading the cache server: %v", err)))
		return
	}
	objects := make([]map[string]interface{}, 0, len(copies.Items))
	for i := range copies.Items {
		if o := unwrap(&copies.Items[i], cluster); o != nil && selector.matches(o) {
			objects = append(objects, o.Object)
		}
	}
	sort.Slice(objects, func(i, j int) bool {
		return (&unstructured.Unstructured{Object: objects[i]}).GetName() < (&unstructured.Unstructured{Object: objects[j]}).GetName()
	})
	if r.info.Verb == "get" {
		for _, o := range objects {
			if (&unstructured.Unstructured{Object: o}).GetName() == r.info.Name {
				writeJSON(w, o)
				return
			}
		}
		framework.Error(w, req, apierrors.NewNotFound(gr, r.info.Name))
		return
	}
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
		"metadata":   map[string]interface{}{"resourceVersion": copies.GetResourceVersion()},
		"items":      items,
	})
}

// lookupFailed answers a failed read of the slice or the
// ClusterCachedResource.
func (v *View) lookupFailed(w http.ResponseWriter, req *http.Request, err error) {
	if apierrors.IsNotFound(err) {
		framework.NotFound(w, req, req.URL.Path)
		return
	}
	framework.Error(w, req, err)
}

// authorize allows a caller with the request's verb on apiexports/content
// of the slice's APIExport, in the export's workspace; below
// /clusters/<consumer>, that workspace must bind the resource from the
// export, as in kcp.
func (v *View) authorize(ctx context.Context, r *request, u user.Info, slice *cachev1alpha1.ClusterCachedResourceEndpointSlice, cr *cachev1alpha1.ClusterCachedResource) (bool, string) {
	exportCluster := r.provider
	if p := logicalcluster.Path(slice.Spec.APIExport.Path); p != "" {
		name, ok := p.Name()
		if !ok && v.c.ResolvePath != nil {
			name, ok = v.c.ResolvePath(p)
		}
		if !ok {
			return false, fmt.Sprintf("APIExport %s of endpoint slice %s not found", p.Join(slice.Spec.APIExport.Name), slice.Name)
		}
		exportCluster = name
	}
	exportName := slice.Spec.APIExport.Name
	if r.target != "" && !r.target.IsWildcard() && r.info.IsResourceRequest {
		bindings, err := v.c.APIBindings(r.target)
		if err != nil || !bindsFrom(bindings, exportCluster, exportName, cr.Spec.Group, cr.Spec.Resource) {
			return false, "could not find suitable APIBinding in target logical cluster"
		}
	}
	check := authorizer.AttributesRecord{
		User: u, Verb: r.info.Verb, APIGroup: apisv1alpha2.SchemeGroupVersion.Group, APIVersion: "v1alpha1",
		Resource: "apiexports", Subresource: "content", Name: exportName, ResourceRequest: true,
	}
	decision, reason, err := v.c.Authorizer.Authorize(logicalcluster.WithCluster(ctx, exportCluster), check)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("Authorizing a replication view request failed", "export", exportCluster.Path().Join(exportName), "user", u.GetName(), "err", err)
	}
	if decision == authorizer.DecisionAllow {
		return true, ""
	}
	return false, fmt.Sprintf("APIExport %s: %q RBAC decision: %v - user needs permission to %s apiexports/content %s", exportName, exportCluster, reason, r.info.Verb, exportName)
}

// bindsFrom tells whether one of bindings binds group/resource from the
// APIExport name in exportCluster.
func bindsFrom(bindings []*apisv1alpha2.APIBinding, exportCluster logicalcluster.Name, name, group, resource string) bool {
	for _, b := range bindings {
		if b.Status.APIExportClusterName != string(exportCluster) || b.Spec.Reference.Export == nil || b.Spec.Reference.Export.Name != name {
			continue
		}
		for _, br := range b.Status.BoundResources {
			if br.Group == group && br.Resource == resource {
				return true
			}
		}
	}
	return false
}

// unwrap returns the object a CachedObject holds as its workspace served
// it, shown in cluster, without the copies' own annotations.
func unwrap(copy *unstructured.Unstructured, cluster logicalcluster.Name) *unstructured.Unstructured {
	raw, ok, _ := unstructured.NestedMap(copy.Object, "spec", "raw")
	if !ok {
		return nil
	}
	o := &unstructured.Unstructured{Object: raw}
	annotations := o.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[logicalcluster.AnnotationKey] = string(cluster)
	o.SetAnnotations(annotations)
	// The copy's version in the cache server: what a watch resumes from.
	o.SetResourceVersion(copy.GetResourceVersion())
	return o
}

// selector is a request's label and field selector.
type selector struct {
	labels labels.Selector
	fields fields.Selector
}

func newSelector(req *http.Request) (*selector, error) {
	q := req.URL.Query()
	l, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return nil, fmt.Errorf("labelSelector: %w", err)
	}
	f, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		return nil, fmt.Errorf("fieldSelector: %w", err)
	}
	return &selector{labels: l, fields: f}, nil
}

func (s *selector) matches(o *unstructured.Unstructured) bool {
	return s.labels.Matches(labels.Set(o.GetLabels())) && s.fields.Matches(fields.Set{"metadata.name": o.GetName()})
}

// serveWatch streams the copies' events as the objects they hold.
func (v *View) serveWatch(w http.ResponseWriter, req *http.Request, r *request, cr *cachev1alpha1.ClusterCachedResource, cluster logicalcluster.Name, s *selector) {
	rv := req.URL.Query().Get("resourceVersion")
	if rv == "0" {
		rv = ""
	}
	if _, err := strconv.ParseUint(rv, 10, 64); rv != "" && err != nil {
		framework.Error(w, req, apierrors.NewBadRequest(fmt.Sprintf("resourceVersion %q: %v", rv, err)))
		return
	}
	upstream, err := v.c.WatchCopies(req.Context(), r.provider, cr.Name, rv)
	if err != nil {
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			framework.Error(w, req, err)
			return
		}
		framework.Error(w, req, apierrors.NewServiceUnavailable(fmt.Sprintf("watching the cache server: %v", err)))
		return
	}
	defer upstream.Stop()
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	enc := json.NewEncoder(w)
	for {
		select {
		case <-req.Context().Done():
			return
		case e, ok := <-upstream.ResultChan():
			if !ok {
				return
			}
			var obj interface{}
			switch e.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				copy, isCopy := e.Object.(*unstructured.Unstructured)
				if !isCopy {
					continue
				}
				o := unwrap(copy, cluster)
				if o == nil || !s.matches(o) {
					continue
				}
				obj = o.Object
			case watch.Bookmark:
				continue
			default:
				obj = e.Object
			}
			if err := enc.Encode(metav1.WatchEvent{Type: string(e.Type), Object: rawJSON(obj)}); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

// rawJSON is obj as an event's object.
func rawJSON(obj interface{}) runtime.RawExtension {
	raw, _ := json.Marshal(obj)
	return runtime.RawExtension{Raw: raw}
}

func writeJSON(w http.ResponseWriter, obj interface{}) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(obj)
}
