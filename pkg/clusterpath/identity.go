package clusterpath

import (
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// IdentityLookup returns the identity hash of the APIExport that publishes
// a group and resource the shard serves itself, and false when no export
// does (or its identity is unknown yet).
type IdentityLookup func(group, resource string) (identityHash string, ok bool)

// WithResourceIdentity serves identity-qualified wildcard requests,
// /clusters/*/apis/<group>/<version>/<resource>:<identityHash>, for the
// resources the shard serves itself that an export publishes (kcp's
// Workspaces as tenancy.kcp.io publishes them): with the export's identity
// the qualifier is taken off the path and the request info, and the
// built-in handler lists or watches the resource across all logical
// clusters; with another identity the answer is 404, as for an export that
// does not exist. Requests for resources no lookup knows pass untouched
// (bound custom resources resolve their identity themselves). It runs after
// request info is known.
func WithResourceIdentity(handler http.Handler, s runtime.NegotiatedSerializer, lookup IdentityLookup) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info, ok := genericapirequest.RequestInfoFrom(req.Context())
		if !ok || !info.IsResourceRequest || !strings.Contains(info.Resource, ":") {
			handler.ServeHTTP(w, req)
			return
		}
		if cluster, _ := logicalcluster.ClusterFromContext(req.Context()); !cluster.IsWildcard() {
			handler.ServeHTTP(w, req)
			return
		}
		resource, identity, _ := strings.Cut(info.Resource, ":")
		want, known := lookup(info.APIGroup, resource)
		if !known {
			handler.ServeHTTP(w, req)
			return
		}
		gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
		if identity != want {
			err := apierrors.NewNotFound(gr, "")
			err.ErrStatus.Message = fmt.Sprintf("%s: no APIExport with identity %q publishes %s", info.Resource, identity, schema.GroupResource{Group: info.APIGroup, Resource: resource})
			responsewriters.ErrorNegotiated(err, s, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, req)
			return
		}
		qualified := "/" + info.Resource
		stripped := *info
		stripped.Resource = resource
		stripped.Path = strings.Replace(info.Path, qualified, "/"+resource, 1)
		req = req.Clone(genericapirequest.WithRequestInfo(req.Context(), &stripped))
		req.URL.Path = strings.Replace(req.URL.Path, qualified, "/"+resource, 1)
		// A list path has no segment that needs escaping.
		req.URL.RawPath = ""
		req.RequestURI = strings.Replace(req.RequestURI, qualified, "/"+resource, 1)
		handler.ServeHTTP(w, req)
	})
}
