package bootstrap

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	kcpopenapi "github.com/shardplane/shardplane/pkg/apis/generated/openapi"
)

// The APIResourceSchemas of the system exports are the OpenAPI definitions
// of the shard's own types, converted into the structural schemas a CRD
// has. The shard serves these kinds itself; the schemas say what the
// exports publish, for tools that read them as they read kcp's.

// definitionsPrefix is how the generated definitions refer to each other.
const definitionsPrefix = "#/definitions/"

// Models that a CRD spells differently from their OpenAPI definition.
const (
	objectMetaModel  = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
	timeModel        = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
	microTimeModel   = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"
	durationModel    = "io.k8s.apimachinery.pkg.apis.meta.v1.Duration"
	quantityModel    = "io.k8s.apimachinery.pkg.api.resource.Quantity"
	intOrStringModel = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
	rawExtModel      = "io.k8s.apimachinery.pkg.runtime.RawExtension"
)

// schemaConverter turns OpenAPI definitions into structural schemas with
// every reference inlined.
type schemaConverter struct {
	defs map[string]common.OpenAPIDefinition
}

func newSchemaConverter() *schemaConverter {
	return &schemaConverter{defs: kcpopenapi.GetServedOpenAPIDefinitions(func(name string) spec.Ref {
		return spec.MustCreateRef(definitionsPrefix + name)
	})}
}

// structural returns the model as the root schema of a custom resource:
// metadata is just an object, as the API server fills in its schema.
func (c *schemaConverter) structural(model string) (*apiextensionsv1.JSONSchemaProps, error) {
	def, ok := c.defs[model]
	if !ok {
		return nil, fmt.Errorf("no OpenAPI definition %s", model)
	}
	return c.convert(def.Schema, map[string]bool{model: true})
}

// convert converts one schema; inlining names the models being inlined,
// which must not refer to themselves.
func (c *schemaConverter) convert(s spec.Schema, inlining map[string]bool) (*apiextensionsv1.JSONSchemaProps, error) {
	if ref := s.Ref.String(); ref != "" {
		out, err := c.inline(strings.TrimPrefix(ref, definitionsPrefix), inlining)
		if err != nil {
			return nil, err
		}
		if s.Description != "" {
			out.Description = s.Description
		}
		return out, nil
	}
	out := &apiextensionsv1.JSONSchemaProps{
		Description: s.Description,
		Format:      s.Format,
		Required:    s.Required,
		Nullable:    s.Nullable,
		Pattern:     s.Pattern,
		MaxLength:   s.MaxLength,
		MinLength:   s.MinLength,
		MaxItems:    s.MaxItems,
		MinItems:    s.MinItems,
		Maximum:     s.Maximum,
		Minimum:     s.Minimum,
	}
	switch len(s.Type) {
	case 0:
	case 1:
		out.Type = s.Type[0]
	default:
		return nil, fmt.Errorf("several types %v", s.Type)
	}
	for _, e := range s.Enum {
		raw, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("enum value %v: %w", e, err)
		}
		out.Enum = append(out.Enum, apiextensionsv1.JSON{Raw: raw})
	}
	if s.Default != nil {
		raw, err := json.Marshal(s.Default)
		if err != nil {
			return nil, fmt.Errorf("default %v: %w", s.Default, err)
		}
		out.Default = &apiextensionsv1.JSON{Raw: raw}
	}
	if err := extensions(s.Extensions, out); err != nil {
		return nil, err
	}
	if len(s.Properties) > 0 {
		out.Properties = make(map[string]apiextensionsv1.JSONSchemaProps, len(s.Properties))
		for name, p := range s.Properties {
			converted, err := c.convert(p, inlining)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out.Properties[name] = *converted
		}
	}
	if s.Items != nil {
		if s.Items.Schema == nil {
			return nil, fmt.Errorf("items with several schemas")
		}
		items, err := c.convert(*s.Items.Schema, inlining)
		if err != nil {
			return nil, fmt.Errorf("items: %w", err)
		}
		out.Items = &apiextensionsv1.JSONSchemaPropsOrArray{Schema: items}
	}
	if a := s.AdditionalProperties; a != nil {
		switch {
		case a.Schema != nil:
			values, err := c.convert(*a.Schema, inlining)
			if err != nil {
				return nil, fmt.Errorf("additionalProperties: %w", err)
			}
			out.AdditionalProperties = &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: values}
		case a.Allows:
			out.XPreserveUnknownFields = ptrTo(true)
		}
	}
	// A value of no stated shape (an interface, a free-form map) is kept
	// as it comes.
	if out.Type == "" && !out.XIntOrString && out.XPreserveUnknownFields == nil {
		out.XPreserveUnknownFields = ptrTo(true)
	}
	return out, nil
}

// inline returns the schema of a referenced model.
func (c *schemaConverter) inline(model string, inlining map[string]bool) (*apiextensionsv1.JSONSchemaProps, error) {
	switch model {
	case objectMetaModel:
		return &apiextensionsv1.JSONSchemaProps{Type: "object"}, nil
	case timeModel, microTimeModel:
		return &apiextensionsv1.JSONSchemaProps{Type: "string", Format: "date-time"}, nil
	case durationModel:
		return &apiextensionsv1.JSONSchemaProps{Type: "string"}, nil
	case quantityModel, intOrStringModel:
		return &apiextensionsv1.JSONSchemaProps{XIntOrString: true, AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}}, nil
	case rawExtModel:
		return &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}, nil
	}
	if inlining[model] {
		return nil, fmt.Errorf("%s refers to itself", model)
	}
	def, ok := c.defs[model]
	if !ok {
		return nil, fmt.Errorf("no OpenAPI definition %s", model)
	}
	inlining[model] = true
	defer delete(inlining, model)
	return c.convert(def.Schema, inlining)
}

// extensions copies the Kubernetes extensions a CRD schema knows.
func extensions(ext spec.Extensions, out *apiextensionsv1.JSONSchemaProps) error {
	for key, value := range ext {
		switch key {
		case "x-kubernetes-list-type":
			s, ok := value.(string)
			if !ok {
				return fmt.Errorf("%s is %T, not a string", key, value)
			}
			out.XListType = &s
		case "x-kubernetes-map-type":
			s, ok := value.(string)
			if !ok {
				return fmt.Errorf("%s is %T, not a string", key, value)
			}
			out.XMapType = &s
		case "x-kubernetes-list-map-keys":
			keys, ok := value.([]interface{})
			if !ok {
				return fmt.Errorf("%s is %T, not a list", key, value)
			}
			for _, k := range keys {
				s, ok := k.(string)
				if !ok {
					return fmt.Errorf("%s has %T, not a string", key, k)
				}
				out.XListMapKeys = append(out.XListMapKeys, s)
			}
		case "x-kubernetes-preserve-unknown-fields":
			if b, ok := value.(bool); ok && b {
				out.XPreserveUnknownFields = ptrTo(true)
			}
		case "x-kubernetes-int-or-string":
			if b, ok := value.(bool); ok && b {
				out.XIntOrString = true
			}
		case "x-kubernetes-embedded-resource":
			if b, ok := value.(bool); ok && b {
				out.XEmbeddedResource = true
			}
		}
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }

// schemaSource is a kind of the shard whose schema a system export
// publishes.
type schemaSource struct {
	group   string
	version string
	names   apiextensionsv1.CustomResourceDefinitionNames
	// model is the OpenAPI model name of the kind.
	model string
	// columns are those of `kubectl get`.
	columns []apiextensionsv1.CustomResourceColumnDefinition
}

// apiResourceSchema returns the APIResourceSchema of src, named as kcp
// names its schemas: "v<hash of the spec>.<resource>.<group>", so that a
// changed type gets a new schema (schemas are immutable) and an unchanged
// one keeps its name across restarts.
func (c *schemaConverter) apiResourceSchema(src schemaSource) (*apisv1alpha1.APIResourceSchema, error) {
	props, err := c.structural(src.model)
	if err != nil {
		return nil, fmt.Errorf("schema of %s.%s: %w", src.names.Plural, src.group, err)
	}
	// metadata is filled in by the API server; the root is an object.
	props.Properties["metadata"] = apiextensionsv1.JSONSchemaProps{Type: "object"}
	raw, err := json.Marshal(props)
	if err != nil {
		return nil, err
	}
	s := &apisv1alpha1.APIResourceSchema{
		TypeMeta: metav1.TypeMeta{APIVersion: apisv1alpha1.SchemeGroupVersion.String(), Kind: "APIResourceSchema"},
		Spec: apisv1alpha1.APIResourceSchemaSpec{
			Group: src.group,
			Names: src.names,
			Scope: apiextensionsv1.ClusterScoped,
			Versions: []apisv1alpha1.APIResourceVersion{{
				Name: src.version, Served: true, Storage: true,
				Schema:                   runtime.RawExtension{Raw: raw},
				Subresources:             apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				AdditionalPrinterColumns: src.columns,
			}},
		},
	}
	specJSON, err := json.Marshal(s.Spec)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(specJSON)
	s.Name = "v" + hex.EncodeToString(sum[:])[:10] + "." + src.names.Plural + "." + src.group
	return s, nil
}
