package apiextensions

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	upstream "k8s.io/apiextensions-apiserver/pkg/apiserver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// Bound resources come from APIBindings: an APIExport publishes an
// APIResourceSchema, and every workspace that binds the export serves the
// schema's resource as if it had a CRD for it. Instances are stored below
// the export's identity, /<group>/<resource>/<identityHash>/<cluster>/...,
// so two exports of the same group and resource never share data. As the
// schema is the same in every binding workspace, one serving state (and
// watch cache) per schema and identity serves all of them; the request's
// logical cluster picks the keys. A bound resource that the shard serves
// itself (kcp's system exports publish Workspaces, WorkspaceTypes and
// Shards) stays the built-in one: it is not served, listed in discovery or
// OpenAPI, or deleted here.

// BoundResource is a resource that an APIBinding serves in a logical
// cluster.
type BoundResource struct {
	// CRD is the APIResourceSchema as an established CRD, shared by every
	// binding of the schema; it must not be modified.
	CRD *apiextensionsv1.CustomResourceDefinition
	// IdentityHash is the identity of the APIExport the resource is bound
	// from: its instances are stored under it.
	IdentityHash string
	// Terminating is set while the binding is deleted: creates are refused.
	Terminating bool
	// Binding is the name of the APIBinding that serves the resource.
	Binding string
	// Virtual is set for a resource its APIExport serves from another
	// endpoint (spec.resources[].storage.virtual): nothing is stored here,
	// and requests go to VirtualHandler.
	Virtual bool
}

// VirtualHandler serves a request for br, a virtual resource bound in
// cluster, after the shard authenticated and authorized it.
type VirtualHandler func(w http.ResponseWriter, req *http.Request, cluster logicalcluster.Name, br BoundResource)

// SchemaStorageAnnotation marks a bound CRD whose resource is virtual with
// a value starting with VirtualStoragePrefix, as kcp's bound CRDs are.
const (
	SchemaStorageAnnotation = "apis.kcp.io/schema-storage"
	VirtualStoragePrefix    = "virtual:"
)

// isVirtual tells whether crd is a bound CRD of a virtual resource.
func isVirtual(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return strings.HasPrefix(crd.Annotations[SchemaStorageAnnotation], VirtualStoragePrefix)
}

// BoundAPIs tells which resources APIBindings serve.
type BoundAPIs interface {
	// Get returns the resource a binding of cluster serves as
	// group/resource.
	Get(cluster logicalcluster.Name, group, resource string) (BoundResource, bool)
	// List returns the resources the bindings of cluster serve.
	List(cluster logicalcluster.Name) []BoundResource
	// ForIdentity returns group/resource as bound from the export with
	// identityHash in any logical cluster of the shard.
	ForIdentity(group, resource, identityHash string) (BoundResource, bool)
	// ForGroupResource returns group/resource as bound from any export in
	// any logical cluster of the shard, one per schema and identity.
	ForGroupResource(group, resource string) []BoundResource
	// InUse tells whether some binding still serves the schema with uid
	// under identityHash.
	InUse(uid types.UID, identityHash string) bool
}

// boundKey names the serving state of a bound schema: it is shared by all
// bindings of the schema from exports with that identity.
type boundKey struct {
	uid      types.UID
	identity string
}

// servable tells whether crd serves the request's scope and version. A
// scope mismatch is not served, except for list and watch across
// namespaces.
func servable(crd *apiextensionsv1.CustomResourceDefinition, info *apirequest.RequestInfo) bool {
	namespacedCRD, namespacedReq := crd.Spec.Scope == apiextensionsv1.NamespaceScoped, info.Namespace != ""
	if (!namespacedCRD && namespacedReq) || (namespacedCRD && !namespacedReq && info.Verb != "list" && info.Verb != "watch") {
		return false
	}
	return servesVersion(&crd.Spec, info.APIVersion)
}

// serveBound serves a bound resource in the request's logical cluster or,
// for an identity-qualified wildcard request, in all of them.
func (h *crHandler) serveBound(w http.ResponseWriter, req *http.Request, info *apirequest.RequestInfo, br BoundResource) {
	if !servable(br.CRD, info) {
		h.notFound.ServeHTTP(w, req)
		return
	}
	si, err := h.boundServingInfo(br)
	if err != nil {
		gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
		if errors.Is(err, errRetry) {
			responsewriters.ErrorNegotiated(err, upstream.Codecs, gv, w, req)
			return
		}
		klog.FromContext(req.Context()).Error(err, "Building bound resource serving state failed", "schema", br.CRD.Name, "identity", br.IdentityHash)
		responsewriters.ErrorNegotiated(apierrors.NewInternalError(fmt.Errorf("error resolving resource")), upstream.Codecs, gv, w, req)
		return
	}
	h.serve(w, req, info, si, br.Terminating)
}

// serveIdentityWildcard serves /clusters/*/apis/<group>/<version>/<resource>:<identityHash>:
// the full objects of the resource as bound from one export, in every
// logical cluster that binds it. All of them follow the export's schemas,
// so unlike plain wildcard requests these are not limited to metadata.
func (h *crHandler) serveIdentityWildcard(w http.ResponseWriter, req *http.Request, info *apirequest.RequestInfo, resource, identity string) {
	if !logicalcluster.WildcardAllows(info.Verb) {
		h.notFound.ServeHTTP(w, req)
		return
	}
	br, ok := h.bound.ForIdentity(info.APIGroup, resource, identity)
	if !ok || br.Virtual {
		h.notFound.ServeHTTP(w, req)
		return
	}
	stripped := *info
	stripped.Resource = resource
	req = req.WithContext(apirequest.WithRequestInfo(req.Context(), &stripped))
	h.serveBound(w, req, &stripped, br)
}

// splitIdentity splits "<resource>:<identityHash>".
func splitIdentity(resource string) (string, string, bool) {
	r, identity, ok := strings.Cut(resource, ":")
	return r, identity, ok && r != "" && identity != ""
}

// boundServingInfo returns the serving state of a bound schema, building it
// on first use. A schema never changes, so the state stays current until no
// binding uses it anymore (releaseUnusedBound).
func (h *crHandler) boundServingInfo(br BoundResource) (*servingInfo, error) {
	key := boundKey{uid: br.CRD.UID, identity: br.IdentityHash}
	h.lock.RLock()
	si := h.bounds[key]
	h.lock.RUnlock()
	if si != nil {
		return si, nil
	}
	v, err, _ := h.builds.Do("bound|"+string(key.uid)+"|"+key.identity, func() (interface{}, error) {
		h.lock.RLock()
		existing := h.bounds[key]
		h.lock.RUnlock()
		if existing != nil {
			return existing, nil
		}
		return h.buildAndStore(servingTarget{identity: key.identity}, br.CRD, func(si *servingInfo) (*servingInfo, bool) {
			if existing := h.bounds[key]; existing != nil {
				return existing, true
			}
			h.bounds[key] = si
			return si, true
		})
	})
	if err != nil {
		return nil, err
	}
	return v.(*servingInfo), nil
}

// releaseUnusedBound tears down the serving state of bound schemas that no
// binding serves anymore (a binding moved to a newer schema, or was
// deleted).
func (h *crHandler) releaseUnusedBound() {
	if h.bound == nil {
		return
	}
	h.lock.Lock()
	var gone []*servingInfo
	for key, si := range h.bounds {
		if !h.bound.InUse(key.uid, key.identity) {
			delete(h.bounds, key)
			gone = append(gone, si)
		}
	}
	h.owned.Add(len(gone))
	h.lock.Unlock()
	for _, si := range gone {
		go h.tearDown(si)
	}
}

// DeleteBoundInstances deletes the instances of group/resource that a
// binding of cluster serves, and returns how many remain (instances with
// finalizers of their own stay until those are removed). The APIBinding
// controller calls it before it lets a deleted binding go. A resource the
// shard serves itself has no bound instances: its objects are the built-in
// ones and stay.
func (s *Server) DeleteBoundInstances(ctx context.Context, cluster logicalcluster.Name, group, resource string) (int, error) {
	if s.handler.bound == nil || s.native.get().serves(group, resource) {
		return 0, nil
	}
	br, ok := s.handler.bound.Get(cluster, group, resource)
	if !ok {
		return 0, nil
	}
	si, err := s.handler.boundServingInfo(br)
	if err != nil {
		return 0, err
	}
	return deleteAll(ctx, cluster, si.storages[si.storageVersion].CustomResource)
}
