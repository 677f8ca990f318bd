package apiextensions

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// A workspace may define core group kinds the shard does not serve itself
// (Services, Pods, ...) as CRDs named <plural>.core, as kcp does. They are
// served below /api like the built-in core resources: requests for them are
// routed to the custom resource handler behind authentication and
// authorization, and /api and /api/v1 discovery list them.

// coreVersion is the only version of the core group /api lists.
const coreVersion = "v1"

// WrapAPIHandler routes requests for core group custom resources, which the
// built-in /api handlers would answer 404, to the custom resource handler.
// h is the built-in API handler, inside authentication and authorization.
func (s *Server) WrapAPIHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if s.routesToCoreCRD(req) {
			s.handler.ServeHTTP(w, req)
			return
		}
		h.ServeHTTP(w, req)
	})
}

func (s *Server) routesToCoreCRD(req *http.Request) bool {
	info, ok := apirequest.RequestInfoFrom(req.Context())
	if !ok || !info.IsResourceRequest || info.APIPrefix != "api" || info.APIGroup != "" {
		return false
	}
	if native := s.native.get(); native == nil || native.core.Has(info.Resource) {
		return false
	}
	cluster, ok := logicalcluster.ClusterFromContext(req.Context())
	if !ok {
		return false
	}
	name := crdName("", info.Resource)
	if cluster.IsWildcard() {
		return len(s.crds.byName(name)) > 0 || s.boundCoreAnywhere(info.Resource)
	}
	return s.crds.get(cluster, name) != nil || s.boundCore(cluster, info.Resource)
}

// boundCoreAnywhere tells whether an APIBinding of any cluster serves a core
// group resource, given as <resource> or <resource>:<identityHash>.
func (s *Server) boundCoreAnywhere(resource string) bool {
	if s.crds.bound == nil {
		return false
	}
	if r, identity, ok := splitIdentity(resource); ok {
		_, found := s.crds.bound.ForIdentity("", r, identity)
		return found
	}
	return len(s.crds.bound.ForGroupResource("", resource)) > 0
}

// boundCore tells whether an APIBinding of cluster serves a core group
// resource, as kcp serves it below /api.
func (s *Server) boundCore(cluster logicalcluster.Name, resource string) bool {
	if s.crds.bound == nil {
		return false
	}
	_, ok := s.crds.bound.Get(cluster, "", resource)
	return ok
}

// withoutCoreGroup drops the core group, which is not listed below /apis.
func withoutCoreGroup(groups []groupDiscovery) []groupDiscovery {
	out := groups[:0:0]
	for _, g := range groups {
		if g.name != "" {
			out = append(out, g)
		}
	}
	return out
}

// coreResources returns the discovery of the cluster's core group CRDs in
// version v1.
func (s *Server) coreResources(cluster logicalcluster.Name) (versionDiscovery, bool) {
	for _, g := range discoveryFor(s.crds.served(cluster)) {
		if g.name == "" {
			return g.version(coreVersion)
		}
	}
	return versionDiscovery{}, false
}

// serveCoreGroup adds the cluster's core CRDs to the aggregated discovery of
// /api. The legacy form (APIVersions) lists versions only and needs nothing.
func (s *Server) serveCoreGroup(h http.Handler, w http.ResponseWriter, req *http.Request, cluster logicalcluster.Name) {
	vd, ok := s.coreResources(cluster)
	if !ok {
		h.ServeHTTP(w, req)
		return
	}
	s.editAggregated(h, w, req, func(list *apidiscoveryv2.APIGroupDiscoveryList) {
		for i := range list.Items {
			if list.Items[i].Name != "" {
				continue
			}
			for j := range list.Items[i].Versions {
				v := &list.Items[i].Versions[j]
				if v.Version != coreVersion {
					continue
				}
				present := map[string]bool{}
				for _, r := range v.Resources {
					present[r.Resource] = true
				}
				for _, r := range vd.aggregated {
					if !present[r.Resource] {
						v.Resources = append(v.Resources, r)
					}
				}
			}
		}
	})
}

// serveCoreResources adds the cluster's core CRDs to /api/v1.
func (s *Server) serveCoreResources(h http.Handler, w http.ResponseWriter, req *http.Request, cluster logicalcluster.Name) {
	vd, ok := s.coreResources(cluster)
	if !ok {
		h.ServeHTTP(w, req)
		return
	}
	s.editResourceList(h, w, req, func(list *metav1.APIResourceList) {
		present := map[string]bool{}
		for _, r := range list.APIResources {
			present[r.Name] = true
		}
		for _, r := range vd.resources {
			if !present[r.Name] {
				list.APIResources = append(list.APIResources, r)
			}
		}
	})
}

// editAggregated serves h's aggregated discovery (APIGroupDiscoveryList)
// as edit changes it; a client that does not accept that form, or an
// answer that is not one, is served by h unchanged.
func (s *Server) editAggregated(h http.Handler, w http.ResponseWriter, req *http.Request, edit func(*apidiscoveryv2.APIGroupDiscoveryList)) {
	if !acceptsAggregated(req.Header.Get("Accept")) {
		h.ServeHTTP(w, req)
		return
	}
	inner := req.Clone(req.Context())
	inner.Header.Set("Accept", aggregatedDiscoveryJSON)
	rec := record(h, inner)
	contentType := rec.header.Get("Content-Type")
	var list apidiscoveryv2.APIGroupDiscoveryList
	if rec.code != http.StatusOK || !strings.Contains(contentType, "as=APIGroupDiscoveryList") || json.Unmarshal(rec.body.Bytes(), &list) != nil {
		rec.replay(w)
		return
	}
	edit(&list)
	s.replayMerged(w, req, rec, contentType, &list)
}

// editResourceList serves h's discovery of a group version (an
// APIResourceList) as edit changes it, when the client takes JSON.
func (s *Server) editResourceList(h http.Handler, w http.ResponseWriter, req *http.Request, edit func(*metav1.APIResourceList)) {
	if !acceptsJSON(req.Header.Get("Accept")) {
		h.ServeHTTP(w, req)
		return
	}
	inner := req.Clone(req.Context())
	inner.Header.Set("Accept", "application/json")
	rec := record(h, inner)
	contentType := rec.header.Get("Content-Type")
	var list metav1.APIResourceList
	if rec.code != http.StatusOK || !strings.HasPrefix(contentType, "application/json") || json.Unmarshal(rec.body.Bytes(), &list) != nil {
		rec.replay(w)
		return
	}
	edit(&list)
	s.replayMerged(w, req, rec, contentType, &list)
}

// replayMerged serves a merged discovery document in place of the recorded
// one.
func (s *Server) replayMerged(w http.ResponseWriter, req *http.Request, rec *recorder, contentType string, doc interface{}) {
	body, err := json.Marshal(doc)
	if err != nil {
		rec.replay(w)
		return
	}
	if v := rec.header.Values("Vary"); len(v) > 0 {
		w.Header()["Vary"] = v
	}
	serveWithETag(w, req, contentType, body)
}

// Upstream's custom resource validation requires apiVersion to be
// "<group>/<version>", which no core group object can match. The strategy
// of a core group resource is therefore built for the pseudo group "core"
// (strategyKind), and these wrappers show the object to it as "core/<v>"
// while it validates; the object keeps its "v1".

// strategyKind is the kind to build a custom resource strategy for.
func strategyKind(kind schema.GroupVersionKind) schema.GroupVersionKind {
	if kind.Group == "" {
		kind.Group = coreGroupName
	}
	return kind
}

// coreResetFields keys reset fields of a strategy built for strategyKind by
// the real API version.
func coreResetFields(in map[fieldpath.APIVersion]*fieldpath.Set) map[fieldpath.APIVersion]*fieldpath.Set {
	out := make(map[fieldpath.APIVersion]*fieldpath.Set, len(in))
	for k, v := range in {
		out[fieldpath.APIVersion(strings.TrimPrefix(string(k), coreGroupName+"/"))] = v
	}
	return out
}

type coreCreateStrategy struct{ rest.RESTCreateStrategy }

func (s coreCreateStrategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return asCoreGroup(obj, func() field.ErrorList { return s.RESTCreateStrategy.Validate(ctx, obj) })
}

type coreUpdateStrategy struct{ rest.RESTUpdateStrategy }

func (s coreUpdateStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return asCoreGroup(obj, func() field.ErrorList { return s.RESTUpdateStrategy.ValidateUpdate(ctx, obj, old) })
}

func asCoreGroup(obj runtime.Object, validate func() field.ErrorList) field.ErrorList {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || strings.Contains(u.GetAPIVersion(), "/") {
		return validate()
	}
	v := u.GetAPIVersion()
	u.SetAPIVersion(coreGroupName + "/" + v)
	defer u.SetAPIVersion(v)
	return validate()
}

// coreStatusREST is upstream's status storage of a custom resource with
// coreUpdateStrategy.
type coreStatusREST struct{ store *genericregistry.Store }

func (r coreStatusREST) New() runtime.Object { return r.store.New() }

func (r coreStatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

func (r coreStatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc,
	updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// A subresource never creates.
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// forCoreGroup makes the storage of a core group custom resource accept
// apiVersion "v1"; the status storage it returns replaces storage.Status.
func forCoreGroup(storage customresource.CustomResourceStorage, statusStrategy rest.RESTUpdateStrategy) subresourceStorage {
	store := storage.CustomResource.Store
	store.CreateStrategy = coreCreateStrategy{store.CreateStrategy}
	store.UpdateStrategy = coreUpdateStrategy{store.UpdateStrategy}
	status := *store
	status.UpdateStrategy = coreUpdateStrategy{statusStrategy}
	if rf, ok := statusStrategy.(rest.ResetFieldsStrategy); ok {
		status.ResetFieldsStrategy = rf
	}
	return coreStatusREST{store: &status}
}
