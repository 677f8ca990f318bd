package apiextensions

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"weak"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/scale/scheme/autoscalingv1"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// specState is what the serving state of a CRD derives from its spec and
// accepted names alone: schemas, validators and CEL programs (in the
// strategies), and the server-side apply type converter. Building it is
// most of the cost of a CRD's first request, and the same CRD is often
// created in many logical clusters, so serving state with equal specs
// shares one specState.
type specState struct {
	storageVersion string
	schemas        schemas
	typeConverter  managedfields.TypeConverter
	equivalents    kruntime.EquivalentResourceRegistry
	versions       map[string]*versionState
}

// versionState is the part of specState of one served or stored version.
type versionState struct {
	typer          kruntime.ObjectTyper
	parameterCodec kruntime.ParameterCodec
	parameters     *kruntime.Scheme
	scaleTable     rest.TableConvertor
	// newStorage builds the storage of the version on the options of a
	// target, with the version's strategy; for the core group it also
	// returns the status storage that replaces upstream's.
	newStorage func(generic.RESTOptionsGetter) (customresource.CustomResourceStorage, subresourceStorage, error)
}

// specStates shares specState between serving states with equal specs.
// It holds them weakly: a specState lives as long as serving state uses it.
type specStates struct {
	mu     sync.Mutex
	states map[string]weak.Pointer[specState]
}

// get returns the specState of crd, building it unless serving state of an
// equal spec holds one. models are the OpenAPI models for the type
// converter (nil deduces types).
func (s *specStates) get(crd *apiextensionsv1.CustomResourceDefinition, models func(*apiextensionsv1.CustomResourceDefinition) (map[string]*spec.Schema, error)) (*specState, error) {
	key, err := specKey(crd)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if w, ok := s.states[key]; ok {
		if st := w.Value(); st != nil {
			s.mu.Unlock()
			return st, nil
		}
	}
	s.mu.Unlock()

	// Built outside the lock: builds of other specs go on. Two builds of one
	// spec may race; the first one stored wins.
	st, err := newSpecState(crd, models)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.states == nil {
		s.states = map[string]weak.Pointer[specState]{}
	}
	if w, ok := s.states[key]; ok {
		if existing := w.Value(); existing != nil {
			return existing, nil
		}
	}
	w := weak.Make(st)
	s.states[key] = w
	runtime.AddCleanup(st, func(key string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if current, ok := s.states[key]; ok && current == w {
			delete(s.states, key)
		}
	}, key)
	return st, nil
}

// len returns how many specStates are held, for tests.
func (s *specStates) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, w := range s.states {
		if w.Value() != nil {
			n++
		}
	}
	return n
}

// specKey hashes what a specState is built from.
func specKey(crd *apiextensionsv1.CustomResourceDefinition) (string, error) {
	b, err := json.Marshal(struct {
		Spec  *apiextensionsv1.CustomResourceDefinitionSpec
		Names *apiextensionsv1.CustomResourceDefinitionNames
	}{&crd.Spec, &crd.Status.AcceptedNames})
	if err != nil {
		return "", fmt.Errorf("hash spec of CustomResourceDefinition %s: %w", crd.Name, err)
	}
	sum := sha256.Sum256(b)
	return string(sum[:]), nil
}

func newSpecState(crd *apiextensionsv1.CustomResourceDefinition, models func(*apiextensionsv1.CustomResourceDefinition) (map[string]*spec.Schema, error)) (*specState, error) {
	storageVersion, err := apiextensionshelpers.GetCRDStorageVersion(crd)
	if err != nil {
		return nil, err
	}
	names := crd.Status.AcceptedNames
	if names.Plural == "" || names.Singular == "" || names.Kind == "" || names.ListKind == "" {
		return nil, fmt.Errorf("CustomResourceDefinition %s has no accepted names yet", crd.Name)
	}

	structurals := map[string]*structuralschema.Structural{}
	for _, v := range crd.Spec.Versions {
		internal, err := internalValidation(crd, v.Name)
		if err != nil {
			return nil, err
		}
		if internal == nil {
			continue
		}
		s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
		if !crd.Spec.PreserveUnknownFields && err != nil {
			return nil, fmt.Errorf("schema of version %s is not structural: %w", v.Name, err)
		}
		if !crd.Spec.PreserveUnknownFields {
			s = s.DeepCopy()
			if err := structuraldefaulting.PruneDefaults(s); err != nil {
				return nil, fmt.Errorf("prune defaults of version %s: %w", v.Name, err)
			}
		}
		structurals[v.Name] = s
	}
	st := &specState{
		storageVersion: storageVersion,
		schemas: schemas{
			byVersion:             structurals,
			groupKind:             schema.GroupKind{Group: crd.Spec.Group, Kind: names.Kind},
			preserveUnknownFields: crd.Spec.PreserveUnknownFields,
		},
		typeConverter: managedfields.NewDeducedTypeConverter(),
		equivalents:   kruntime.NewEquivalentResourceRegistry(),
		versions:      map[string]*versionState{},
	}
	if m, err := models(crd); err == nil && len(m) > 0 {
		if st.typeConverter, err = managedfields.NewTypeConverter(m, crd.Spec.PreserveUnknownFields); err != nil {
			return nil, err
		}
	}

	replicasPaths := managedfields.ResourcePathMappings{}
	for _, v := range crd.Spec.Versions {
		gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
		sub, err := apiextensionshelpers.GetSubresourcesForVersion(crd, v.Name)
		if err != nil {
			return nil, err
		}
		resource := gv.WithResource(names.Plural)
		kind := gv.WithKind(names.Kind)
		st.equivalents.RegisterKindFor(resource, "", kind)
		if sub == nil || sub.Scale == nil {
			replicasPaths[gv.String()] = nil
		} else {
			replicasPaths[gv.String()] = fieldPathOf(sub.Scale.SpecReplicasPath)
			st.equivalents.RegisterKindFor(resource, "scale", autoscalingv1.SchemeGroupVersion.WithKind("Scale"))
		}
		if sub != nil && sub.Status != nil {
			st.equivalents.RegisterKindFor(resource, "status", kind)
		}
	}

	clusterScoped := crd.Spec.Scope == apiextensionsv1.ClusterScoped
	for _, v := range crd.Spec.Versions {
		if !v.Storage && !v.Served {
			continue
		}
		gv := schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
		kind := gv.WithKind(names.Kind)
		resource := gv.WithResource(names.Plural)

		parameterScheme := parameterSchemeFor(gv)
		typer := newTyper(parameterScheme)

		internal, err := internalValidation(crd, v.Name)
		if err != nil {
			return nil, err
		}
		var props *apiextensionsinternal.JSONSchemaProps
		if internal != nil {
			props = internal.OpenAPIV3Schema
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(props)
		if err != nil {
			return nil, err
		}

		sub, err := apiextensionshelpers.GetSubresourcesForVersion(crd, v.Name)
		if err != nil {
			return nil, err
		}
		var statusSpec *apiextensionsinternal.CustomResourceSubresourceStatus
		var statusValidator apiservervalidation.SchemaValidator
		if sub != nil && sub.Status != nil {
			statusSpec = &apiextensionsinternal.CustomResourceSubresourceStatus{}
			if props != nil {
				if statusProps, found := props.Properties["status"]; found {
					if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&statusProps); err != nil {
						return nil, err
					}
				}
			}
		}
		var scaleSpec *apiextensionsinternal.CustomResourceSubresourceScale
		if sub != nil && sub.Scale != nil {
			scaleSpec = &apiextensionsinternal.CustomResourceSubresourceScale{}
			if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(sub.Scale, scaleSpec, nil); err != nil {
				return nil, err
			}
		}

		table, err := tableconvertor.New(columnsFor(v.AdditionalPrinterColumns))
		if err != nil {
			// Invalid printer columns fall back to the default table.
			table, _ = tableconvertor.New(columnsFor(nil))
		}
		scaleTable, _ := tableconvertor.New(scaleColumns(sub))

		strategy := customresource.NewStrategy(typer, !clusterScoped, strategyKind(kind), validator, statusValidator,
			structurals[v.Name], statusSpec, scaleSpec, v.SelectableFields)
		coreGroup := crd.Spec.Group == ""
		st.versions[v.Name] = &versionState{
			typer:          typer,
			parameterCodec: kruntime.NewParameterCodec(parameterScheme),
			parameters:     parameterScheme,
			scaleTable:     scaleTable,
			newStorage: func(optsGetter generic.RESTOptionsGetter) (customresource.CustomResourceStorage, subresourceStorage, error) {
				storage, err := customresource.NewStorage(resource.GroupResource(), gv.WithResource(names.Singular).GroupResource(),
					kind, gv.WithKind(names.ListKind), strategy, optsGetter, names.Categories, table, replicasPaths)
				if err != nil || !coreGroup {
					return storage, nil, err
				}
				return storage, forCoreGroup(storage, customresource.NewStatusStrategy(strategy)), nil
			},
		}
	}
	return st, nil
}

// scaleSerializer serves the scale subresource of every CRD: its scheme is
// the same for all of them.
var scaleSerializer = sync.OnceValue(func() kruntime.NegotiatedSerializer {
	return serializer.NewCodecFactory(scale.NewScaleConverter().Scheme(),
		serializer.WithStreamingCollectionEncodingToJSON(), serializer.WithStreamingCollectionEncodingToProtobuf())
})
