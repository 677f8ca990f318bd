package cacheserver

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/discovery"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/metrics"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/yaml"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/mediatypes"
)

// apis serves the replicated kinds: their resources below
// /apis/<group>/<version>/ and the discovery of their groups and versions.
// Shard and cluster are in the request context (withScope).
type apis struct {
	// resources are the handlers of each resource, by group version and
	// resource name, and then by verb.
	resources map[schema.GroupVersion]map[string]*resourceHandlers
	// groups are the discovery documents of each group.
	groups map[string]metav1.APIGroup
	// versions serve /apis/<group>/<version>.
	versions map[schema.GroupVersion]http.Handler
	// storages are the storages of every kind, destroyed at shutdown.
	storages []*replicaREST
}

// verbs are the verbs every replicated kind serves.
var verbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// resourceHandlers serve one resource.
type resourceHandlers struct {
	kind  cacheclient.Kind
	verbs map[string]http.HandlerFunc
}

// apisConfig is what serving the replicated kinds needs from the server.
type apisConfig struct {
	// restOptions store replicas as unstructured JSON under their keys.
	restOptions generic.RESTOptionsGetter
	// authorizer authorizes what a request implies beyond its verb (an
	// update that would create).
	authorizer          authorizer.Authorizer
	maxRequestBodyBytes int64
	minRequestTimeout   time.Duration
}

// newAPIs builds the storage and handlers of every kind in Kinds.
func newAPIs(c apisConfig) (*apis, error) {
	a := &apis{
		resources: map[schema.GroupVersion]map[string]*resourceHandlers{},
		groups:    map[string]metav1.APIGroup{},
		versions:  map[schema.GroupVersion]http.Handler{},
	}
	ok := false
	defer func() {
		if !ok {
			a.destroy()
		}
	}()
	resourceLists := map[schema.GroupVersion][]metav1.APIResource{}
	for _, k := range cacheclient.Kinds {
		h, err := a.newResourceHandlers(c, k)
		if err != nil {
			return nil, err
		}
		gv := k.Resource.GroupVersion()
		if a.resources[gv] == nil {
			a.resources[gv] = map[string]*resourceHandlers{}
		}
		a.resources[gv][k.Resource.Resource] = h
		resourceLists[gv] = append(resourceLists[gv], metav1.APIResource{
			Name: k.Resource.Resource, SingularName: k.Singular, Namespaced: k.Namespaced, Kind: k.Kind,
			Verbs: verbs,
		})
	}
	for gv, resources := range resourceLists {
		sort.Slice(resources, func(i, j int) bool { return resources[i].Name < resources[j].Name })
		a.versions[gv] = discovery.NewAPIVersionHandler(codecs, gv, discovery.APIResourceListerFunc(func() []metav1.APIResource { return resources }))
		group := a.groups[gv.Group]
		group.Name = gv.Group
		group.Versions = append(group.Versions, metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version})
		a.groups[gv.Group] = group
	}
	// Versions newest first, as Kubernetes orders them; the newest is
	// preferred.
	for name, group := range a.groups {
		sort.Slice(group.Versions, func(i, j int) bool {
			return version.CompareKubeAwareVersionStrings(group.Versions[i].Version, group.Versions[j].Version) > 0
		})
		group.PreferredVersion = group.Versions[0]
		a.groups[name] = group
	}
	ok = true
	return a, nil
}

func (a *apis) newResourceHandlers(c apisConfig, k cacheclient.Kind) (*resourceHandlers, error) {
	gv := k.Resource.GroupVersion()
	storage, err := newReplicaREST(k, c.restOptions, rest.NewDefaultTableConvertor(k.Resource.GroupResource()))
	if err != nil {
		return nil, err
	}
	a.storages = append(a.storages, storage)

	parameters := parameterScheme(gv)
	typer := newTyper(parameters)
	converter := replicaConverter{gv: gv, namespaced: k.Namespaced}
	serializer := newReplicaSerializer(typer, converter)
	equivalents := runtime.NewEquivalentResourceRegistry()
	equivalents.RegisterKindFor(k.Resource, "", k.GroupVersionKind())
	scope := &handlers.RequestScope{
		Namer:                    handlers.ContextBasedNaming{Namer: meta.NewAccessor(), ClusterScoped: !k.Namespaced},
		Serializer:               serializer,
		ParameterCodec:           runtime.NewParameterCodec(parameters),
		StandardSerializers:      serializer.SupportedMediaTypes(),
		Creater:                  unstructuredCreator{},
		Convertor:                converter,
		Defaulter:                parameters,
		Typer:                    typer,
		UnsafeConvertor:          converter,
		EquivalentResourceMapper: equivalents,
		Resource:                 k.Resource,
		Kind:                     k.GroupVersionKind(),
		HubGroupVersion:          gv,
		MetaGroupVersion:         metav1.SchemeGroupVersion,
		TableConvertor:           storage,
		Authorizer:               c.authorizer,
		MaxRequestBodyBytes:      c.maxRequestBodyBytes,
	}
	// Replicas have no schema: managed fields are tracked on the object as
	// it comes, as for schema-less custom resources.
	if scope.FieldManager, err = managedfields.NewDefaultCRDFieldManager(managedfields.NewDeducedTypeConverter(), converter, parameters,
		unstructuredCreator{}, scope.Kind, gv, "", nil); err != nil {
		return nil, err
	}

	// No admission: the cache server stores what shards replicate.
	admit := admission.NewChainHandler()
	patchTypes := []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.ApplyYAMLPatchType)}
	// The writing handlers are built per request, as upstream's installer
	// does: they wrap the admission they capture on every call, so a shared
	// one would race and grow with every write.
	perRequest := func(build func() http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, req *http.Request) { build()(w, req) }
	}
	byVerb := map[string]http.HandlerFunc{
		"get":              withoutMetadataListOfOne(handlers.GetResource(storage, scope), scope),
		"list":             handlers.ListResource(storage, storage, scope, false, c.minRequestTimeout),
		"watch":            handlers.ListResource(storage, storage, scope, true, c.minRequestTimeout),
		"create":           perRequest(func() http.HandlerFunc { return handlers.CreateResource(storage, scope, admit) }),
		"update":           perRequest(func() http.HandlerFunc { return handlers.UpdateResource(storage, scope, admit) }),
		"patch":            perRequest(func() http.HandlerFunc { return handlers.PatchResource(storage, scope, admit, patchTypes) }),
		"delete":           perRequest(func() http.HandlerFunc { return handlers.DeleteResource(storage, true, scope, admit) }),
		"deletecollection": perRequest(func() http.HandlerFunc { return handlers.DeleteCollection(storage, true, scope, admit) }),
	}
	byVerb["create"] = withCreateMeta(byVerb["create"], c.maxRequestBodyBytes)
	for verb, h := range byVerb {
		byVerb[verb] = metrics.InstrumentHandlerFunc(strings.ToUpper(verb), gv.Group, gv.Version, k.Resource.Resource, "", "", metrics.APIServerComponent, false, "", h)
	}
	return &resourceHandlers{kind: k, verbs: byVerb}, nil
}

// withoutMetadataListOfOne answers 406 to a GET of one replica as a
// metadata list, which upstream's handler would fail with a 500.
func withoutMetadataListOfOne(h http.HandlerFunc, scope *handlers.RequestScope) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if !mediatypes.RefusedMetadataListOfOne(w, req, scope) {
			h(w, req)
		}
	}
}

// withCreateMeta reads the uid and creation time a writer sent with a
// create, which the generic handler erases before storage sees the object,
// and hands them to storage in the request context.
func withCreateMeta(h http.HandlerFunc, maxBytes int64) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if req.Body == nil {
			h(w, req)
			return
		}
		// One byte more than the handler accepts, so that it still refuses
		// a body that is too large.
		body, err := io.ReadAll(io.LimitReader(req.Body, maxBytes+1))
		_ = req.Body.Close()
		if err != nil {
			responsewriters.ErrorNegotiated(apierrors.NewBadRequest(fmt.Sprintf("read request body: %v", err)), codecs, schema.GroupVersion{}, w, req)
			return
		}
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(body))
		var sent struct {
			Metadata struct {
				UID               types.UID   `json:"uid"`
				CreationTimestamp metav1.Time `json:"creationTimestamp"`
			} `json:"metadata"`
		}
		// A body that does not parse is the handler's to refuse.
		if int64(len(body)) <= maxBytes && yaml.Unmarshal(body, &sent) == nil {
			req = req.WithContext(withWrittenMeta(req.Context(), &writtenMeta{uid: sent.Metadata.UID, created: sent.Metadata.CreationTimestamp}))
		}
		h(w, req)
	}
}

// destroy stops the storage (watch caches, etcd clients) of every kind.
func (a *apis) destroy() {
	for _, s := range a.storages {
		s.DestroyFunc()
	}
	a.storages = nil
}

// serve serves /apis/<group>, /apis/<group>/<version> and the
// resources below; anything else goes to notFound.
func (a *apis) serve(notFound http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		info, ok := genericapirequest.RequestInfoFrom(req.Context())
		if !ok {
			responsewriters.InternalError(w, req, fmt.Errorf("no request info in the request context"))
			return
		}
		if !info.IsResourceRequest {
			parts := strings.Split(strings.Trim(info.Path, "/"), "/")
			switch {
			case len(parts) == 2 && parts[0] == "apis":
				if group, ok := a.groups[parts[1]]; ok {
					discovery.NewAPIGroupHandler(codecs, group).ServeHTTP(w, req)
					return
				}
			case len(parts) == 3 && parts[0] == "apis":
				if h, ok := a.versions[schema.GroupVersion{Group: parts[1], Version: parts[2]}]; ok {
					h.ServeHTTP(w, req)
					return
				}
			}
			notFound.ServeHTTP(w, req)
			return
		}
		r, ok := a.resources[schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}][info.Resource]
		// A cluster-scoped kind has no namespaces; a namespaced one is
		// addressed in one, except across all namespaces.
		if !ok || info.Subresource != "" || (!r.kind.Namespaced && info.Namespace != "") ||
			(r.kind.Namespaced && info.Namespace == "" && info.Verb != "list" && info.Verb != "watch") {
			notFound.ServeHTTP(w, req)
			return
		}
		h, ok := r.verbs[info.Verb]
		if !ok {
			err := apierrors.NewMethodNotSupported(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, info.Verb)
			responsewriters.ErrorNegotiated(err, codecs, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, req)
			return
		}
		h.ServeHTTP(w, req)
	})
}

// aggregatedDiscovery is the aggregated discovery of one group version.
func (a *apis) aggregatedDiscovery(gv schema.GroupVersion) apidiscoveryv2.APIVersionDiscovery {
	d := apidiscoveryv2.APIVersionDiscovery{Version: gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
	names := make([]string, 0, len(a.resources[gv]))
	for name := range a.resources[gv] {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		k := a.resources[gv][name].kind
		scope := apidiscoveryv2.ScopeCluster
		if k.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		d.Resources = append(d.Resources, apidiscoveryv2.APIResourceDiscovery{
			Resource:         name,
			ResponseKind:     &metav1.GroupVersionKind{Group: gv.Group, Version: gv.Version, Kind: k.Kind},
			Scope:            scope,
			SingularResource: k.Singular,
			Verbs:            verbs,
		})
	}
	return d
}

// groupList returns the discovery of every group, for /apis.
func (a *apis) groupList() []metav1.APIGroup {
	names := make([]string, 0, len(a.groups))
	for name := range a.groups {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]metav1.APIGroup, 0, len(names))
	for _, name := range names {
		out = append(out, a.groups[name])
	}
	return out
}
