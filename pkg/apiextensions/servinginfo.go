package apiextensions

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/conversion"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/client-go/scale/scheme/autoscalingv1"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/mediatypes"
)

// servingInfo is what it takes to serve the custom resources of one CRD in
// one logical cluster: storage and request scopes per version.
type servingInfo struct {
	cluster logicalcluster.Name
	uid     types.UID
	// spec and acceptedNames are what the info was built from; a CRD change
	// to either rebuilds it.
	spec          *apiextensionsv1.CustomResourceDefinitionSpec
	acceptedNames *apiextensionsv1.CustomResourceDefinitionNames

	storages      map[string]customresource.CustomResourceStorage
	requestScopes map[string]*handlers.RequestScope
	statusScopes  map[string]*handlers.RequestScope
	scaleScopes   map[string]*handlers.RequestScope
	deprecated    map[string]bool
	warnings      map[string][]string
	// coreStatus replaces the status storage of core group resources.
	coreStatus map[string]subresourceStorage

	// shared is what serving state of CRDs with an equal spec shares.
	shared *specState

	storageVersion string
	// requests tracks requests in flight, so teardown waits for them.
	requests *requestGroup
	// lastUsed is when a request last used the serving state (Unix
	// nanoseconds), and watches how many watches it serves: serving state
	// idle for long is released (crHandler.releaseIdle).
	lastUsed atomic.Int64
	watches  atomic.Int32
}

// markUsed records a use at now.
func (i *servingInfo) markUsed(now time.Time) { i.lastUsed.Store(now.UnixNano()) }

// idleFor returns how long the serving state has served nothing at now:
// zero while a request or watch is in flight.
func (i *servingInfo) idleFor(now time.Time) time.Duration {
	if i.watches.Load() > 0 || i.requests.inFlight() > 0 {
		return 0
	}
	return now.Sub(time.Unix(0, i.lastUsed.Load()))
}

// requestGroup counts the requests in flight on one servingInfo. Unlike a
// wait group, its drain is a channel: a tear-down can stop waiting for it
// without leaving a goroutine behind.
type requestGroup struct {
	mu       sync.Mutex
	n        int
	draining bool
	idle     chan struct{}
}

func newRequestGroup() *requestGroup { return &requestGroup{idle: make(chan struct{})} }

// Add counts delta requests; once the group drains, new requests are
// refused (and asked to retry).
func (g *requestGroup) Add(delta int) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if delta > 0 && g.draining {
		return errors.New("custom resource serving state is being torn down")
	}
	g.n += delta
	if g.n < 0 {
		g.n = 0
	}
	g.closeIfIdleLocked()
	return nil
}

// inFlight returns how many requests are in flight.
func (g *requestGroup) inFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

// Done ends a request.
func (g *requestGroup) Done() { _ = g.Add(-1) }

// drain refuses new requests and returns a channel closed when none is in
// flight.
func (g *requestGroup) drain() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.draining = true
	g.closeIfIdleLocked()
	return g.idle
}

func (g *requestGroup) closeIfIdleLocked() {
	if !g.draining || g.n != 0 {
		return
	}
	select {
	case <-g.idle:
	default:
		close(g.idle)
	}
}

// destroy stops the storage (watch cache, etcd client) of every version.
func (i *servingInfo) destroy() {
	for _, s := range i.storages {
		// Subresources share the main storage.
		s.CustomResource.DestroyFunc()
	}
}

// servingTarget is what serving state serves: the custom resources of one
// logical cluster; with the wildcard, their metadata in all clusters; with
// an identity, the bound instances of every logical cluster, each request
// addressing those of its own cluster.
type servingTarget struct {
	cluster  logicalcluster.Name
	identity string
}

// metadataOnly tells whether the target serves metadata across clusters.
func (t servingTarget) metadataOnly() bool { return t.identity == "" && t.cluster.IsWildcard() }

// servingInfoBuilder holds what every servingInfo shares.
type servingInfoBuilder struct {
	// restOptions returns the storage options for a target.
	restOptions         func(target servingTarget) generic.RESTOptionsGetter
	converterFactory    *conversion.CRConverterFactory
	authorizer          authorizer.Authorizer
	maxRequestBodyBytes int64
	// staticOpenAPISpec returns the models of ObjectMeta and friends that
	// server-side apply merges with the CRD schema.
	staticOpenAPISpec func() map[string]*spec.Schema
	// specs shares spec-derived state between serving states.
	specs specStates
}

// build creates the serving state of crd for target.
func (b *servingInfoBuilder) build(target servingTarget, crd *apiextensionsv1.CustomResourceDefinition) (*servingInfo, error) {
	st, err := b.specs.get(crd, b.openAPIModels)
	if err != nil {
		return nil, err
	}
	names := crd.Status.AcceptedNames

	var safeConverter, unsafeConverter runtime.ObjectConvertor
	if target.metadataOnly() {
		mc := metadataConverter{group: crd.Spec.Group, clusterScoped: crd.Spec.Scope == apiextensionsv1.ClusterScoped}
		safeConverter, unsafeConverter = mc, mc
	} else if safeConverter, unsafeConverter, err = b.converterFactory.NewConverter(crd); err != nil {
		return nil, err
	}

	info := &servingInfo{
		cluster:        target.cluster,
		uid:            crd.UID,
		spec:           &crd.Spec,
		acceptedNames:  &crd.Status.AcceptedNames,
		shared:         st,
		storages:       map[string]customresource.CustomResourceStorage{},
		requestScopes:  map[string]*handlers.RequestScope{},
		statusScopes:   map[string]*handlers.RequestScope{},
		scaleScopes:    map[string]*handlers.RequestScope{},
		deprecated:     map[string]bool{},
		coreStatus:     map[string]subresourceStorage{},
		warnings:       map[string][]string{},
		storageVersion: st.storageVersion,
		requests:       newRequestGroup(),
	}
	ok := false
	defer func() {
		if !ok {
			info.destroy()
		}
	}()

	clusterScoped := crd.Spec.Scope == apiextensionsv1.ClusterScoped
	for _, v := range crd.Spec.Versions {
		vs := st.versions[v.Name]
		if vs == nil {
			continue
		}
		gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
		kind := gv.WithKind(names.Kind)
		resource := gv.WithResource(names.Plural)

		optsGetter := storageCodecGetter{
			RESTOptionsGetter: b.restOptions(target),
			converter:         safeConverter,
			decodeVersion:     gv,
			encodeVersion:     schema.GroupVersion{Group: crd.Spec.Group, Version: st.storageVersion},
			schemas:           st.schemas,
		}
		storage, coreStatus, err := vs.newStorage(optsGetter)
		if err != nil {
			return nil, err
		}
		info.storages[v.Name] = storage
		if coreStatus != nil {
			info.coreStatus[v.Name] = coreStatus
		}

		ns := newNegotiatedSerializer(vs.typer, safeConverter, st.schemas)
		scope := handlers.RequestScope{
			Namer:                    handlers.ContextBasedNaming{Namer: meta.NewAccessor(), ClusterScoped: clusterScoped},
			Serializer:               ns,
			ParameterCodec:           vs.parameterCodec,
			StandardSerializers:      mediatypes.WithoutProtobuf(ns.SupportedMediaTypes()),
			Creater:                  unstructuredCreator{},
			Convertor:                safeConverter,
			Defaulter:                schemaDefaulter{delegate: vs.parameters, schemas: st.schemas},
			Typer:                    vs.typer,
			UnsafeConvertor:          unsafeConverter,
			EquivalentResourceMapper: st.equivalents,
			Resource:                 resource,
			Kind:                     kind,
			HubGroupVersion:          gv,
			MetaGroupVersion:         metav1.SchemeGroupVersion,
			TableConvertor:           storage.CustomResource,
			Authorizer:               b.authorizer,
			MaxRequestBodyBytes:      b.maxRequestBodyBytes,
		}
		if scope, err = withFieldManager(st.typeConverter, scope, coreResetFields(storage.CustomResource.GetResetFields()), ""); err != nil {
			return nil, err
		}
		info.requestScopes[v.Name] = &scope

		sub, err := apiextensionshelpers.GetSubresourcesForVersion(crd, v.Name)
		if err != nil {
			return nil, err
		}
		scaleScope := scope
		scaleScope.Subresource = "scale"
		scaleScope.Serializer = scaleSerializer()
		scaleScope.Kind = autoscalingv1.SchemeGroupVersion.WithKind("Scale")
		scaleScope.TableConvertor = vs.scaleTable
		if sub != nil && sub.Scale != nil {
			if scaleScope, err = withFieldManager(st.typeConverter, scaleScope, nil, "scale"); err != nil {
				return nil, err
			}
		}
		info.scaleScopes[v.Name] = &scaleScope

		if v.Deprecated {
			info.deprecated[v.Name] = true
			if v.DeprecationWarning != nil {
				info.warnings[v.Name] = append(info.warnings[v.Name], *v.DeprecationWarning)
			} else {
				info.warnings[v.Name] = append(info.warnings[v.Name], deprecationWarning(v.Name, crd.Spec))
			}
		}
	}

	// The status field manager resets everything but status, in every version.
	statusResetFields := map[fieldpath.APIVersion]*fieldpath.Set{}
	for _, s := range info.storages {
		if s.Status != nil {
			for k, set := range coreResetFields(s.Status.GetResetFields()) {
				statusResetFields[k] = set
			}
		}
	}
	for name, scope := range info.requestScopes {
		statusScope := *scope
		statusScope.Subresource = "status"
		sub, _ := apiextensionshelpers.GetSubresourcesForVersion(crd, name)
		if sub != nil && sub.Status != nil {
			if statusScope, err = withFieldManager(st.typeConverter, statusScope, statusResetFields, "status"); err != nil {
				return nil, err
			}
		}
		info.statusScopes[name] = &statusScope
	}
	ok = true
	return info, nil
}

// parameterSchemes holds one scheme per group version for the typed options
// objects (everything else is unstructured). They are the same for every
// CRD of a group version in every cluster, so they are shared.
var parameterSchemes sync.Map // schema.GroupVersion -> *runtime.Scheme

func parameterSchemeFor(gv schema.GroupVersion) *runtime.Scheme {
	if s, ok := parameterSchemes.Load(gv); ok {
		return s.(*runtime.Scheme)
	}
	s := runtime.NewScheme()
	s.AddUnversionedTypes(gv, &metav1.ListOptions{}, &metav1.GetOptions{}, &metav1.DeleteOptions{})
	actual, _ := parameterSchemes.LoadOrStore(gv, s)
	return actual.(*runtime.Scheme)
}

// openAPIModels merges the static models with the CRD's schemas, for the
// server-side apply type converter.
func (b *servingInfoBuilder) openAPIModels(crd *apiextensionsv1.CustomResourceDefinition) (map[string]*spec.Schema, error) {
	static := b.staticOpenAPISpec()
	if static == nil {
		return nil, nil
	}
	specs := []*spec3.OpenAPI{{
		Version:    "3.0.0",
		Info:       &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes CRD Swagger", Version: "v0.1.0"}},
		Components: &spec3.Components{Schemas: static},
	}}
	for _, v := range crd.Spec.Versions {
		s, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{})
		if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	merged, err := builder.MergeSpecsV3(specs...)
	if err != nil {
		return nil, err
	}
	return merged.Components.Schemas, nil
}

func withFieldManager(tc managedfields.TypeConverter, scope handlers.RequestScope, resetFields map[fieldpath.APIVersion]*fieldpath.Set, subresource string) (handlers.RequestScope, error) {
	fm, err := managedfields.NewDefaultCRDFieldManager(tc, scope.Convertor, scope.Defaulter, scope.Creater, scope.Kind,
		scope.HubGroupVersion, subresource, fieldpath.NewExcludeFilterSetMap(resetFields))
	if err != nil {
		return handlers.RequestScope{}, err
	}
	scope.FieldManager = fm
	return scope, nil
}

// internalValidation returns the internal form of a version's schema, or nil.
func internalValidation(crd *apiextensionsv1.CustomResourceDefinition, version string) (*apiextensionsinternal.CustomResourceValidation, error) {
	v, err := apiextensionshelpers.GetSchemaForVersion(crd, version)
	if err != nil || v == nil {
		return nil, err
	}
	internal := &apiextensionsinternal.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v, internal, nil); err != nil {
		return nil, fmt.Errorf("convert schema of version %s: %w", version, err)
	}
	return internal, nil
}

func fieldPathOf(jsonPath string) fieldpath.Path {
	var p fieldpath.Path
	for _, element := range strings.Split(strings.TrimPrefix(jsonPath, "."), ".") {
		s := element
		p = append(p, fieldpath.PathElement{FieldName: &s})
	}
	return p
}

var creationTimestampDescription = metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]

// columnsFor defaults empty printer columns to AGE, as kube-apiserver does.
func columnsFor(columns []apiextensionsv1.CustomResourceColumnDefinition) []apiextensionsv1.CustomResourceColumnDefinition {
	if len(columns) > 0 {
		return columns
	}
	return []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Age", Type: "date", Description: creationTimestampDescription, JSONPath: ".metadata.creationTimestamp"},
	}
}

// scaleColumns are the table columns of the scale subresource.
func scaleColumns(sub *apiextensionsv1.CustomResourceSubresources) []apiextensionsv1.CustomResourceColumnDefinition {
	var cols []apiextensionsv1.CustomResourceColumnDefinition
	if sub != nil && sub.Scale != nil {
		if sub.Scale.SpecReplicasPath != "" {
			cols = append(cols, apiextensionsv1.CustomResourceColumnDefinition{Name: "Desired", Type: "integer", Description: "Number of desired replicas", JSONPath: ".spec.replicas"})
		}
		if sub.Scale.StatusReplicasPath != "" {
			cols = append(cols, apiextensionsv1.CustomResourceColumnDefinition{Name: "Available", Type: "integer", Description: "Number of actual replicas", JSONPath: ".status.replicas"})
		}
	}
	return append(cols, apiextensionsv1.CustomResourceColumnDefinition{Name: "Age", Type: "date", Description: creationTimestampDescription, JSONPath: ".metadata.creationTimestamp"})
}

func deprecationWarning(deprecated string, crd apiextensionsv1.CustomResourceDefinitionSpec) string {
	msg := fmt.Sprintf("%s/%s %s is deprecated", crd.Group, deprecated, crd.Names.Kind)
	var newer []string
	for _, v := range crd.Versions {
		if v.Served && !v.Deprecated && version.CompareKubeAwareVersionStrings(deprecated, v.Name) < 0 {
			newer = append(newer, v.Name)
		}
	}
	if len(newer) == 0 {
		return msg
	}
	sort.Slice(newer, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(newer[i], newer[j]) > 0 })
	return msg + fmt.Sprintf("; use %s/%s %s", crd.Group, newer[0], crd.Names.Kind)
}
