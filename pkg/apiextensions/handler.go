package apiextensions

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	upstream "k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/endpoints/discovery"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/metrics"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/mediatypes"
)

// watches handle storage teardown by ending the connection; they are not
// waited for.
var longRunning = genericfilters.BasicLongRunningRequestCheck(sets.NewString("watch"), sets.NewString())

var patchTypes = []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.ApplyYAMLPatchType)}

type infoKey struct {
	cluster logicalcluster.Name
	uid     types.UID
}

// wildcardKey names the serving state of a resource version across clusters.
type wildcardKey struct {
	group, resource, version string
}

// crHandler serves custom resources and the discovery of CRD groups per
// logical cluster. It is the delegate of the built-in API handlers: what
// they do not serve falls through to it.
type crHandler struct {
	crds     *crdIndex
	builder  *servingInfoBuilder
	notFound http.Handler
	// admission returns the shard's admission chain (set once the server is built).
	admission         func() admission.Interface
	minRequestTimeout time.Duration
	requestTimeout    time.Duration
	// build creates the serving state of a CRD for a target: builder.build,
	// or a stand-in in tests.
	build func(target servingTarget, crd *apiextensionsv1.CustomResourceDefinition) (*servingInfo, error)
	// bound tells which resources APIBindings serve; nil serves none.
	bound BoundAPIs
	// virtual serves the virtual bound resources; nil: 404.
	virtual VirtualHandler

	// builds runs one build per CRD (and resource version) at a time;
	// builds of different CRDs run in parallel, and no lock is held while
	// they run.
	builds singleflight.Group
	// lock guards infos, wildcards, bounds and stopped. It is only held to look up
	// and swap entries, never across a build or a tear-down, so that the
	// informer's handler never waits for a build.
	lock      sync.RWMutex
	infos     map[infoKey]*servingInfo
	wildcards map[wildcardKey]*servingInfo
	bounds    map[boundKey]*servingInfo
	// stopped is set by shutdown: no build is stored and no tear-down
	// started afterwards.
	stopped bool
	// owned tracks the builds and tear-downs in flight; shutdown joins them
	// before the storage they use is stopped.
	owned sync.WaitGroup
	// stopping is closed by shutdown: tear-downs stop waiting for requests.
	stopping chan struct{}

	// idleTimeout is how long serving state of a CRD in a cluster (or across
	// clusters) may serve nothing before releaseIdle tears it down; clock
	// tells the time.
	idleTimeout time.Duration
	clock       clock.PassiveClock
}

// defaultIdleTimeout is how long unused serving state is kept.
const defaultIdleTimeout = 5 * time.Minute

func newCRHandler(crds *crdIndex, builder *servingInfoBuilder) *crHandler {
	h := &crHandler{
		crds:      crds,
		builder:   builder,
		infos:     map[infoKey]*servingInfo{},
		wildcards: map[wildcardKey]*servingInfo{},
		bounds:    map[boundKey]*servingInfo{},
		stopping:  make(chan struct{}),

		idleTimeout: defaultIdleTimeout,
		clock:       clock.RealClock{},
	}
	h.build = builder.build
	return h
}

func (h *crHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	ctx := req.Context()
	info, ok := apirequest.RequestInfoFrom(ctx)
	if !ok {
		responsewriters.ErrorNegotiated(apierrors.NewInternalError(errors.New("no RequestInfo found in the context")),
			upstream.Codecs, schema.GroupVersion{}, w, req)
		return
	}
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok {
		h.notFound.ServeHTTP(w, req)
		return
	}
	if !info.IsResourceRequest {
		h.serveDiscovery(w, req, cluster, info)
		return
	}
	if cluster.IsWildcard() {
		h.serveWildcard(w, req, info)
		return
	}

	crd := h.crds.get(cluster, crdName(info.APIGroup, info.Resource))
	if crd == nil {
		if h.bound != nil && !h.crds.nativeAPIs().serves(info.APIGroup, info.Resource) {
			if br, ok := h.bound.Get(cluster, info.APIGroup, info.Resource); ok {
				if br.Virtual {
					h.serveVirtual(w, req, info, cluster, br)
					return
				}
				h.serveBound(w, req, info, br)
				return
			}
		}
		h.notFound.ServeHTTP(w, req)
		return
	}
	if !servable(crd, info) {
		h.notFound.ServeHTTP(w, req)
		return
	}
	if !apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.NamesAccepted) &&
		!apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		h.notFound.ServeHTTP(w, req)
		return
	}
	terminating := !crd.DeletionTimestamp.IsZero() || apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Terminating)

	si, err := h.servingInfoFor(cluster, crd.UID, crd.Name)
	if apierrors.IsNotFound(err) {
		h.notFound.ServeHTTP(w, req)
		return
	}
	if errors.Is(err, errRetry) {
		responsewriters.ErrorNegotiated(err, upstream.Codecs, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, req)
		return
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Building custom resource serving state failed", "cluster", cluster, "crd", crd.Name)
		responsewriters.ErrorNegotiated(apierrors.NewInternalError(fmt.Errorf("error resolving resource")),
			upstream.Codecs, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, req)
		return
	}
	h.serve(w, req, info, si, terminating)
}

// serveVirtual hands a request for a virtual resource to h.virtual.
func (h *crHandler) serveVirtual(w http.ResponseWriter, req *http.Request, info *apirequest.RequestInfo, cluster logicalcluster.Name, br BoundResource) {
	if h.virtual == nil || !servable(br.CRD, info) {
		h.notFound.ServeHTTP(w, req)
		return
	}
	h.virtual(w, req, cluster, br)
}

// serve dispatches to the upstream REST handlers.
func (h *crHandler) serve(w http.ResponseWriter, req *http.Request, info *apirequest.RequestInfo, si *servingInfo, terminating bool) {
	if !servesVersion(si.spec, info.APIVersion) {
		h.notFound.ServeHTTP(w, req)
		return
	}
	for _, msg := range si.warnings[info.APIVersion] {
		warning.AddWarning(req.Context(), "", msg)
	}
	sub, err := apiextensionshelpers.GetSubresourcesForVersion(&apiextensionsv1.CustomResourceDefinition{Spec: *si.spec}, info.APIVersion)
	if err != nil {
		responsewriters.ErrorNegotiated(apierrors.NewInternalError(err), upstream.Codecs,
			schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, req)
		return
	}
	var handler http.HandlerFunc
	switch {
	case refused(w, req, info, si):
	case info.Subresource == "status" && sub != nil && sub.Status != nil:
		var status subresourceStorage = si.storages[info.APIVersion].Status
		if core := si.coreStatus[info.APIVersion]; core != nil {
			status = core
		}
		handler = h.serveSubresource(w, req, info, si, si.statusScopes[info.APIVersion], status)
	case info.Subresource == "scale" && sub != nil && sub.Scale != nil:
		handler = h.serveSubresource(w, req, info, si, si.scaleScopes[info.APIVersion], si.storages[info.APIVersion].Scale)
	case info.Subresource == "":
		handler = h.serveResource(w, req, info, si, terminating)
	default:
		responsewriters.ErrorNegotiated(apierrors.NewNotFound(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, info.Name),
			upstream.Codecs, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, req)
	}
	if handler == nil {
		return
	}
	si.markUsed(h.clock.Now())
	if longRunning(req, info) {
		// An open watch keeps its serving state.
		si.watches.Add(1)
		defer func() {
			si.markUsed(h.clock.Now())
			si.watches.Add(-1)
		}()
	}
	handler = metrics.InstrumentHandlerFunc(strings.ToUpper(info.Verb), info.APIGroup, info.APIVersion, info.Resource, info.Subresource,
		metrics.CleanScope(info), metrics.APIServerComponent, si.deprecated[info.APIVersion], "", handler)
	genericfilters.WithWaitGroup(handler, longRunning, si.requests).ServeHTTP(w, req)
}

// refused answers what custom resources list among their media types but
// cannot serve, before a handler runs: a create or update of an object or
// its status in protobuf (they are only encoded to it, for Table and
// metadata answers; nothing decodes it into an unstructured object) gets
// 415, a GET of one object as a metadata list 406.
func refused(w http.ResponseWriter, req *http.Request, info *apirequest.RequestInfo, si *servingInfo) bool {
	scope := si.requestScopes[info.APIVersion]
	if info.Subresource == "status" {
		scope = si.statusScopes[info.APIVersion]
	}
	if scope == nil || info.Subresource != "" && info.Subresource != "status" {
		return false
	}
	switch info.Verb {
	case "create", "update":
		return mediatypes.Decoded(scope.StandardSerializers).Refused(w, req, upstream.Codecs, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion})
	case "get":
		return mediatypes.RefusedMetadataListOfOne(w, req, scope)
	}
	return false
}

func (h *crHandler) serveResource(w http.ResponseWriter, req *http.Request, info *apirequest.RequestInfo, si *servingInfo, terminating bool) http.HandlerFunc {
	scope := si.requestScopes[info.APIVersion]
	storage := si.storages[info.APIVersion].CustomResource
	admit := h.admission()
	switch info.Verb {
	case "get":
		return handlers.GetResource(storage, scope)
	case "list":
		return handlers.ListResource(storage, storage, scope, false, h.minRequestTimeout)
	case "watch":
		return handlers.ListResource(storage, storage, scope, true, h.minRequestTimeout)
	case "create":
		if terminating {
			admit = forbidCreate{admit}
		}
		return handlers.CreateResource(storage, scope, admit)
	case "update":
		return handlers.UpdateResource(storage, scope, admit)
	case "patch":
		if terminating {
			admit = forbidCreate{admit}
		}
		return patchHandler(req, storage, scope, admit, si.shared.schemas.byVersion[info.APIVersion])
	case "delete":
		return handlers.DeleteResource(storage, true, scope, admit)
	case "deletecollection":
		return handlers.DeleteCollection(storage, true, scope, admit)
	}
	responsewriters.ErrorNegotiated(apierrors.NewMethodNotSupported(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, info.Verb),
		upstream.Codecs, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, req)
	return nil
}

// subresourceStorage is what the status and scale storages implement.
type subresourceStorage interface {
	rest.Getter
	rest.Updater
	rest.Patcher
}

func (h *crHandler) serveSubresource(w http.ResponseWriter, req *http.Request, info *apirequest.RequestInfo, si *servingInfo, scope *handlers.RequestScope, storage subresourceStorage) http.HandlerFunc {
	admit := h.admission()
	switch info.Verb {
	case "get":
		return handlers.GetResource(storage, scope)
	case "update":
		return handlers.UpdateResource(storage, scope, admit)
	case "patch":
		if info.Subresource == "status" {
			return patchHandler(req, storage, scope, admit, si.shared.schemas.byVersion[info.APIVersion])
		}
		return handlers.PatchResource(storage, scope, admit, patchTypes)
	}
	responsewriters.ErrorNegotiated(apierrors.NewMethodNotSupported(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, info.Verb),
		upstream.Codecs, schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}, w, req)
	return nil
}

// serveWildcard serves list and watch of a resource across all logical
// clusters, as object metadata only: clusters define the resource with
// their own schemas and versions.
func (h *crHandler) serveWildcard(w http.ResponseWriter, req *http.Request, info *apirequest.RequestInfo) {
	if resource, identity, ok := splitIdentity(info.Resource); ok && h.bound != nil {
		h.serveIdentityWildcard(w, req, info, resource, identity)
		return
	}
	if !logicalcluster.WildcardAllows(info.Verb) {
		h.notFound.ServeHTTP(w, req)
		return
	}
	gv := schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
	if h.wildcardSource(info.APIGroup, info.Resource, info.APIVersion) == nil {
		h.notFound.ServeHTTP(w, req)
		return
	}
	accept := metadataOnlyAccept(req.Header.Get("Accept"))
	if accept == "" {
		responsewriters.ErrorNegotiated(errFullObjectsAcrossClusters(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}),
			upstream.Codecs, gv, w, req)
		return
	}
	key := wildcardKey{group: info.APIGroup, resource: info.Resource, version: info.APIVersion}
	h.lock.RLock()
	si := h.wildcards[key]
	h.lock.RUnlock()
	if si == nil {
		var err error
		if si, err = h.buildWildcard(key); errors.Is(err, errRetry) {
			responsewriters.ErrorNegotiated(err, upstream.Codecs, gv, w, req)
			return
		} else if err != nil {
			klog.FromContext(req.Context()).Error(err, "Building wildcard custom resource serving state failed", "group", key.group, "resource", key.resource)
			responsewriters.ErrorNegotiated(apierrors.NewInternalError(fmt.Errorf("error resolving resource")), upstream.Codecs, gv, w, req)
			return
		}
		if si == nil {
			h.notFound.ServeHTTP(w, req)
			return
		}
	}
	// Whatever else the client accepts, it gets metadata.
	req = req.Clone(req.Context())
	req.Header.Set("Accept", accept)
	h.serve(w, req, info, si, false)
}

// maxBuildAttempts bounds how often a request builds serving state anew
// because its CRD changed while it was built.
const maxBuildAttempts = 5

// errRetry marks the errors a client should retry: the CRD changed while
// its serving state was built, or the server is shutting down.
var errRetry = errors.New("retry")

type retryError struct{ *apierrors.StatusError }

func (e retryError) Is(target error) bool { return target == errRetry }

func errChanging(name string) error {
	return retryError{apierrors.NewTooManyRequests(fmt.Sprintf("CustomResourceDefinition %s changed while its serving state was built, retry", name), 1)}
}

var errShuttingDown = retryError{apierrors.NewServiceUnavailable("the server is shutting down")}

// startOwnedLocked counts a build that shutdown must join; false once the
// server stops.
func (h *crHandler) startOwnedLocked() bool {
	if h.stopped {
		return false
	}
	h.owned.Add(1)
	return true
}

func (h *crHandler) buildWildcard(key wildcardKey) (*servingInfo, error) {
	for attempt := 0; ; attempt++ {
		h.lock.RLock()
		si := h.wildcards[key]
		h.lock.RUnlock()
		if si != nil {
			return si, nil
		}
		crd := h.wildcardSource(key.group, key.resource, key.version)
		if crd == nil {
			return nil, nil
		}
		if attempt == maxBuildAttempts {
			return nil, errChanging(crd.Name)
		}
		flight := strings.Join([]string{"*", key.group, key.resource, key.version, string(crd.UID), crd.ResourceVersion}, "|")
		v, err, _ := h.builds.Do(flight, func() (interface{}, error) {
			// A flight that just ended may have stored it.
			h.lock.RLock()
			existing := h.wildcards[key]
			h.lock.RUnlock()
			if existing != nil {
				return existing, nil
			}
			return h.buildAndStore(servingTarget{cluster: logicalcluster.Wildcard}, metadataCRD(crd, key.version), func(si *servingInfo) (*servingInfo, bool) {
				if existing := h.wildcards[key]; existing != nil {
					return existing, true
				}
				current := h.wildcardSource(key.group, key.resource, key.version)
				if current == nil || current.UID != si.uid || !sameServing(si, metadataCRD(current, key.version)) {
					return nil, false
				}
				h.wildcards[key] = si
				return si, true
			})
		})
		if err != nil {
			return nil, err
		}
		if si := v.(*servingInfo); si != nil {
			return si, nil
		}
		// The CRD changed while building: build from the newer one.
	}
}

// servingInfoFor returns the serving state of a CRD, building it from the
// newest CRD in the index on first use. Builds of different CRDs run in
// parallel; concurrent requests for the same CRD share one build.
func (h *crHandler) servingInfoFor(cluster logicalcluster.Name, uid types.UID, name string) (*servingInfo, error) {
	key := infoKey{cluster: cluster, uid: uid}
	for attempt := 0; ; attempt++ {
		h.lock.RLock()
		si := h.infos[key]
		h.lock.RUnlock()
		if si != nil {
			return si, nil
		}
		crd := h.crds.get(cluster, name)
		if crd == nil {
			return nil, apierrors.NewNotFound(apiextensionsv1.Resource("customresourcedefinitions"), name)
		}
		if attempt == maxBuildAttempts {
			return nil, errChanging(name)
		}
		if crd.UID != key.uid {
			key.uid = crd.UID
			continue
		}
		flight := strings.Join([]string{string(cluster), string(crd.UID), crd.ResourceVersion}, "|")
		v, err, _ := h.builds.Do(flight, func() (interface{}, error) {
			// A flight that just ended may have stored it.
			h.lock.RLock()
			existing := h.infos[key]
			h.lock.RUnlock()
			if existing != nil {
				return existing, nil
			}
			return h.buildAndStore(servingTarget{cluster: cluster}, crd, func(si *servingInfo) (*servingInfo, bool) {
				if existing := h.infos[key]; existing != nil {
					return existing, true
				}
				// The informer updates the index before it tells the
				// handler: a CRD that changed since is either seen here
				// or invalidates the entry stored here right after.
				current := h.crds.get(cluster, name)
				if current == nil || current.UID != si.uid || !sameServing(si, current) {
					return nil, false
				}
				h.infos[key] = si
				return si, true
			})
		})
		if err != nil {
			return nil, err
		}
		if si := v.(*servingInfo); si != nil {
			return si, nil
		}
		// The CRD changed while building: build from the newer one.
	}
}

// buildAndStore builds serving state without holding the lock, then lets
// store decide under the lock whether it is still current. A build that
// store does not keep is stopped again; no request has seen it. It returns
// a nil *servingInfo when the CRD changed in the meantime.
func (h *crHandler) buildAndStore(target servingTarget, crd *apiextensionsv1.CustomResourceDefinition, store func(si *servingInfo) (*servingInfo, bool)) (*servingInfo, error) {
	h.lock.Lock()
	owned := h.startOwnedLocked()
	h.lock.Unlock()
	if !owned {
		return nil, errShuttingDown
	}
	defer h.owned.Done()

	si, err := h.build(target, crd)
	if err != nil {
		return nil, err
	}
	h.lock.Lock()
	if h.stopped {
		h.lock.Unlock()
		si.destroy()
		return nil, errShuttingDown
	}
	si.markUsed(h.clock.Now())
	kept, current := store(si)
	h.lock.Unlock()
	if kept != si {
		si.destroy()
	}
	if !current {
		return nil, nil
	}
	return kept, nil
}

// OnAdd, OnUpdate and OnDelete drop serving state that no longer matches
// its CRD; the next request builds it anew. They only take the lock briefly:
// builds in flight do not hold them up.
func (h *crHandler) OnAdd(obj interface{}) { h.invalidate(obj, false) }

func (h *crHandler) OnUpdate(_, newObj interface{}) { h.invalidate(newObj, false) }

func (h *crHandler) OnDelete(obj interface{}) { h.invalidate(obj, true) }

func (h *crHandler) invalidate(obj interface{}, deleted bool) {
	crd, ok := crdFromObject(obj)
	if !ok {
		return
	}
	cluster := clusterOf(crd)
	h.lock.Lock()
	var gone []*servingInfo
	key := infoKey{cluster: cluster, uid: crd.UID}
	if si := h.infos[key]; si != nil && (deleted || !sameServing(si, crd)) {
		delete(h.infos, key)
		gone = append(gone, si)
	}
	for k, si := range h.wildcards {
		if crdName(k.group, k.resource) == crd.Name && si.uid == crd.UID &&
			(deleted || !servesVersion(&crd.Spec, k.version) || !sameServing(si, metadataCRD(crd, k.version))) {
			delete(h.wildcards, k)
			gone = append(gone, si)
		}
	}
	// Every removed entry gets a tear-down that shutdown joins (once
	// stopped, the maps are empty and nothing is removed).
	h.owned.Add(len(gone))
	h.lock.Unlock()
	for _, si := range gone {
		go h.tearDown(si)
	}
}

// releaseIdle tears down the serving state of CRDs, per cluster and across
// clusters, that served nothing for idleTimeout: its watch cache, etcd watch
// and goroutines go; the next request builds it anew. Serving state with a
// watch open is in use. Bound serving state is released by
// releaseUnusedBound.
func (h *crHandler) releaseIdle() {
	now := h.clock.Now()
	h.lock.Lock()
	var gone []*servingInfo
	for key, si := range h.infos {
		if si.idleFor(now) >= h.idleTimeout {
			delete(h.infos, key)
			gone = append(gone, si)
		}
	}
	for key, si := range h.wildcards {
		if si.idleFor(now) >= h.idleTimeout {
			delete(h.wildcards, key)
			gone = append(gone, si)
		}
	}
	h.owned.Add(len(gone))
	h.lock.Unlock()
	for _, si := range gone {
		go h.tearDown(si)
	}
}

// sameServing tells whether si still serves crd: only the spec and the
// accepted names shape serving state, not conditions.
func sameServing(si *servingInfo, crd *apiextensionsv1.CustomResourceDefinition) bool {
	return equality.Semantic.DeepEqual(si.spec, &crd.Spec) && equality.Semantic.DeepEqual(si.acceptedNames, &crd.Status.AcceptedNames)
}

// tearDown waits for requests in flight, then stops the storage. Requests
// that reach si once it drains are asked to retry; they find the new
// serving state.
func (h *crHandler) tearDown(si *servingInfo) {
	defer h.owned.Done()
	defer si.destroy()
	// Let requests that already hold si register themselves.
	grace := time.NewTimer(time.Second)
	defer grace.Stop()
	select {
	case <-grace.C:
	case <-h.stopping:
		return
	}
	timeout := time.NewTimer(2 * h.requestTimeout)
	defer timeout.Stop()
	select {
	case <-si.requests.drain():
	case <-h.stopping:
		// The server has drained its requests already.
	case <-timeout.C:
		klog.Background().Info("Timeout waiting for custom resource requests to drain; tearing down storage", "cluster", si.cluster, "group", si.spec.Group, "kind", si.spec.Names.Kind)
	}
}

// shutdown stops all serving state at server shutdown, after the server has
// drained its requests: builds and tear-downs in flight are joined first,
// so that no goroutine uses storage once it returns.
func (h *crHandler) shutdown() {
	h.lock.Lock()
	if h.stopped {
		h.lock.Unlock()
		h.owned.Wait()
		return
	}
	h.stopped = true
	close(h.stopping)
	infos, wildcards, bounds := h.infos, h.wildcards, h.bounds
	h.infos, h.wildcards, h.bounds = map[infoKey]*servingInfo{}, map[wildcardKey]*servingInfo{}, map[boundKey]*servingInfo{}
	h.lock.Unlock()

	h.owned.Wait()
	for _, si := range infos {
		si.destroy()
	}
	for _, si := range wildcards {
		si.destroy()
	}
	for _, si := range bounds {
		si.destroy()
	}
}

// servingCount returns how many CRDs have serving state, for tests and metrics.
func (h *crHandler) servingCount() int {
	h.lock.RLock()
	defer h.lock.RUnlock()
	return len(h.infos) + len(h.wildcards) + len(h.bounds)
}

// serveDiscovery serves /apis/<group> and /apis/<group>/<version> of the
// CRD groups of a logical cluster.
func (h *crHandler) serveDiscovery(w http.ResponseWriter, req *http.Request, cluster logicalcluster.Name, info *apirequest.RequestInfo) {
	parts := strings.Split(strings.Trim(info.Path, "/"), "/")
	if cluster.IsWildcard() || len(parts) < 2 || len(parts) > 3 || parts[0] != "apis" || !h.crds.hasAnyServed(cluster) {
		h.notFound.ServeHTTP(w, req)
		return
	}
	group, found := findGroup(discoveryFor(h.crds.served(cluster)), parts[1])
	if !found {
		h.notFound.ServeHTTP(w, req)
		return
	}
	if len(parts) == 2 {
		discovery.NewAPIGroupHandler(upstream.Codecs, group.apiGroup()).ServeHTTP(w, req)
		return
	}
	vd, found := group.version(parts[2])
	if !found {
		h.notFound.ServeHTTP(w, req)
		return
	}
	gv := schema.GroupVersion{Group: group.name, Version: vd.version}
	discovery.NewAPIVersionHandler(upstream.Codecs, gv, discovery.APIResourceListerFunc(func() []metav1.APIResource {
		return vd.resources
	})).ServeHTTP(w, req)
}

func servesVersion(spec *apiextensionsv1.CustomResourceDefinitionSpec, version string) bool {
	for _, v := range spec.Versions {
		if v.Name == version {
			return v.Served
		}
	}
	return false
}

// forbidCreate refuses creates while the CRD is terminating.
type forbidCreate struct {
	delegate admission.Interface
}

func (f forbidCreate) Handles(op admission.Operation) bool {
	return op == admission.Create || (f.delegate != nil && f.delegate.Handles(op))
}

func (f forbidCreate) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if a.GetOperation() == admission.Create {
		return apierrors.NewForbidden(a.GetResource().GroupResource(), a.GetName(), errors.New("create not allowed while custom resource definition is terminating"))
	}
	if m, ok := f.delegate.(admission.MutationInterface); ok {
		return m.Admit(ctx, a, o)
	}
	return nil
}

func (f forbidCreate) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if a.GetOperation() == admission.Create {
		return apierrors.NewForbidden(a.GetResource().GroupResource(), a.GetName(), errors.New("create not allowed while custom resource definition is terminating"))
	}
	if v, ok := f.delegate.(admission.ValidationInterface); ok {
		return v.Validate(ctx, a, o)
	}
	return nil
}
