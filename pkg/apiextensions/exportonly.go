package apiextensions

import (
	"net/http"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Kinds the shard serves itself in some logical clusters only (limited):
//
//   - exportOnly: kinds kcp serves only through a system export which root
//     binds and other workspaces do not by default (shards.core.kcp.io,
//     config/root-phase0 in kcp; migration.kcp.io's
//     LogicalClusterMigrations likewise): outside root they exist only
//     where a binding of the export is bound;
//   - systemOnly: the shard's API Priority and Fairness configuration
//     (pkg/fairness), only in its system:admin logical cluster, which
//     tenants cannot reach.
var (
	exportOnly = []schema.GroupVersionResource{shardsResource, migrationsResource}
	systemOnly = []schema.GroupVersionResource{
		{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "flowschemas"},
		{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "prioritylevelconfigurations"},
	}
	limited = append(append([]schema.GroupVersionResource{}, exportOnly...), systemOnly...)
)

var (
	shardsResource     = schema.GroupVersionResource{Group: "core.kcp.io", Version: "v1alpha1", Resource: "shards"}
	migrationsResource = schema.GroupVersionResource{Group: "migration.kcp.io", Version: "v1alpha1", Resource: "logicalclustermigrations"}
)

// limitedKind is the kind of each limited resource, which names it in
// OpenAPI documents.
var limitedKind = map[schema.GroupVersionResource]string{
	shardsResource:     "Shard",
	migrationsResource: "LogicalClusterMigration",
	systemOnly[0]:      "FlowSchema",
	systemOnly[1]:      "PriorityLevelConfiguration",
}

// WithLimitedKinds hides the limited kinds from the workspaces that do not
// serve them: requests for them answer 404 as for any resource a server
// does not have, and discovery leaves them out. h is the API handler:
// request info and the logical cluster are in the context.
func (s *Server) WithLimitedKinds(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		cluster, ok := logicalcluster.ClusterFromContext(req.Context())
		if !ok || cluster == logicalcluster.SystemAdmin || cluster.IsWildcard() {
			h.ServeHTTP(w, req)
			return
		}
		// Only requests for these kinds and the discovery that lists them
		// look at the cluster's bindings.
		info, _ := apirequest.RequestInfoFrom(req.Context())
		switch {
		case info != nil && info.IsResourceRequest:
			for _, gvr := range limited {
				if info.APIGroup == gvr.Group && info.Resource == gvr.Resource && s.hidden(cluster, gvr) {
					err := apierrors.NewGenericServerResponse(http.StatusNotFound, info.Verb, gvr.GroupResource(), info.Name, "", 0, false)
					responsewriters.ErrorNegotiated(err, scheme.Codecs, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, req)
					return
				}
			}
		case req.Method == http.MethodGet && (req.URL.Path == "/apis" || req.URL.Path == "/apis/"):
			if hidden := s.hiddenKinds(cluster); len(hidden) > 0 {
				s.serveGroupsWithout(h, w, req, hidden)
				return
			}
		case req.Method == http.MethodGet:
			for _, gvr := range limited {
				if strings.TrimSuffix(req.URL.Path, "/") == "/apis/"+gvr.Group+"/"+gvr.Version && s.hidden(cluster, gvr) {
					s.serveResourcesWithout(h, w, req, gvr.Resource)
					return
				}
			}
		}
		h.ServeHTTP(w, req)
	})
}

// hiddenIn returns the limited kinds that cluster does not serve.
func (s *Server) hiddenIn(cluster logicalcluster.Name) []schema.GroupVersionResource {
	return s.hiddenKinds(cluster)
}

// servesEveryKind tells whether cluster serves the exportOnly kinds
// whatever it binds: root, which binds them, the system clusters and
// wildcard requests.
func servesEveryKind(cluster logicalcluster.Name) bool {
	return cluster == logicalcluster.Root || cluster.IsWildcard() || cluster.IsSystem()
}

// hiddenKinds are the limited kinds cluster does not serve.
func (s *Server) hiddenKinds(cluster logicalcluster.Name) []schema.GroupVersionResource {
	var out []schema.GroupVersionResource
	for _, gvr := range limited {
		if s.hidden(cluster, gvr) {
			out = append(out, gvr)
		}
	}
	return out
}

// hidden tells whether cluster does not serve gvr: a systemOnly kind
// outside system:admin, an exportOnly one where it is not bound.
func (s *Server) hidden(cluster logicalcluster.Name, gvr schema.GroupVersionResource) bool {
	if cluster.IsWildcard() {
		return false
	}
	for _, g := range systemOnly {
		if g == gvr {
			return cluster != logicalcluster.SystemAdmin
		}
	}
	if servesEveryKind(cluster) {
		return false
	}
	if s.handler.bound == nil {
		return true
	}
	_, ok := s.handler.bound.Get(cluster, gvr.Group, gvr.Resource)
	return !ok
}

// isHidden tells whether resource (or a subresource of it) is one of
// hidden in group and version.
func isHidden(hidden []schema.GroupVersionResource, group, version, resource string) bool {
	base, _, _ := strings.Cut(resource, "/")
	for _, gvr := range hidden {
		if gvr.Group == group && gvr.Version == version && gvr.Resource == base {
			return true
		}
	}
	return false
}

// serveGroupsWithout serves the aggregated discovery of /apis without the
// hidden resources; the legacy form lists groups only and needs nothing.
func (s *Server) serveGroupsWithout(h http.Handler, w http.ResponseWriter, req *http.Request, hidden []schema.GroupVersionResource) {
	s.editAggregated(h, w, req, func(list *apidiscoveryv2.APIGroupDiscoveryList) {
		for i := range list.Items {
			g := &list.Items[i]
			for j := range g.Versions {
				v := &g.Versions[j]
				kept := v.Resources[:0]
				for _, r := range v.Resources {
					if !isHidden(hidden, g.Name, v.Version, r.Resource) {
						kept = append(kept, r)
					}
				}
				v.Resources = kept
			}
		}
	})
}

// serveResourcesWithout serves the discovery of a group version without
// resource and its subresources.
func (s *Server) serveResourcesWithout(h http.Handler, w http.ResponseWriter, req *http.Request, resource string) {
	s.editResourceList(h, w, req, func(list *metav1.APIResourceList) {
		kept := list.APIResources[:0]
		for _, r := range list.APIResources {
			if base, _, _ := strings.Cut(r.Name, "/"); base != resource {
				kept = append(kept, r)
			}
		}
		list.APIResources = kept
	})
}
