package bootstrap

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	"github.com/shardplane/shardplane/pkg/boundapis"
)

// TestSystemExportSchemasAreValidCRDSchemas: every schema of the system
// exports is a valid APIResourceSchema and, as the CRD a binding would
// serve it with, passes the API server's own CRD validation (structural,
// list map keys required or defaulted, supported formats).
func TestSystemExportSchemasAreValidCRDSchemas(t *testing.T) {
	conv := newSchemaConverter()
	for _, e := range systemExports {
		for _, src := range e.resources {
			t.Run(src.names.Plural+"."+src.group, func(t *testing.T) {
				s, err := conv.apiResourceSchema(src)
				if err != nil {
					t.Fatal(err)
				}
				if errs := apisv1alpha1.ValidateAPIResourceSchema(s); len(errs) > 0 {
					t.Fatalf("APIResourceSchema %s is invalid: %v", s.Name, errs)
				}
				if errs := crdValidation(t, s); len(errs) > 0 {
					t.Fatalf("as a CRD, %s is invalid: %v", s.Name, errs)
				}
			})
		}
	}

	// The check notices a schema that is not structural.
	s, err := conv.apiResourceSchema(systemExports[0].resources[0])
	if err != nil {
		t.Fatal(err)
	}
	var props apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal(s.Spec.Versions[0].Schema.Raw, &props); err != nil {
		t.Fatal(err)
	}
	spec := props.Properties["spec"]
	spec.Type = ""
	props.Properties["spec"] = spec
	if s.Spec.Versions[0].Schema.Raw, err = json.Marshal(props); err != nil {
		t.Fatal(err)
	}
	if errs := crdValidation(t, s); len(errs) == 0 {
		t.Error("a schema whose spec has no type passes the CRD validation")
	}
}

// crdValidation validates s as the CRD a binding serves it with.
func crdValidation(t *testing.T, s *apisv1alpha1.APIResourceSchema) field.ErrorList {
	t.Helper()
	s = s.DeepCopy()
	s.UID = types.UID("uid-" + s.Name)
	v1, err := boundapis.CRDFor("root", s)
	if err != nil {
		t.Fatal(err)
	}
	v1.Name = s.Spec.Names.Plural + "." + s.Spec.Group
	crd := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(v1, crd, nil); err != nil {
		t.Fatal(err)
	}
	return validation.ValidateCustomResourceDefinition(context.Background(), crd)
}

// TestWorkspaceSchemaFollowsTheNativeType: the schema of workspaces is the
// shard's Workspace with every reference inlined: spec.type, conditions
// with their time, and metadata as a plain object.
func TestWorkspaceSchemaFollowsTheNativeType(t *testing.T) {
	s, err := newSchemaConverter().apiResourceSchema(systemExports[0].resources[0])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(s.Name, ".workspaces.tenancy.kcp.io") || !strings.HasPrefix(s.Name, "v") {
		t.Errorf("name %q, want v<hash>.workspaces.tenancy.kcp.io", s.Name)
	}
	var props apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal(s.Spec.Versions[0].Schema.Raw, &props); err != nil {
		t.Fatal(err)
	}
	if m := props.Properties["metadata"]; m.Type != "object" || len(m.Properties) > 0 {
		t.Errorf("metadata = %+v, want a plain object", m)
	}
	typeName := props.Properties["spec"].Properties["type"].Properties["name"]
	if typeName.Type != "string" {
		t.Errorf("spec.type.name = %+v, want a string", typeName)
	}
	conditions := props.Properties["status"].Properties["conditions"]
	if conditions.Type != "array" || conditions.Items == nil || conditions.Items.Schema.Properties["lastTransitionTime"].Format != "date-time" {
		t.Errorf("status.conditions = %+v, want an array of conditions with a date-time lastTransitionTime", conditions)
	}
	if conditions.XListType == nil || *conditions.XListType != "map" || len(conditions.XListMapKeys) != 1 || conditions.XListMapKeys[0] != "type" {
		t.Errorf("status.conditions list type %v keys %v, want a map keyed by type", conditions.XListType, conditions.XListMapKeys)
	}

	again, err := newSchemaConverter().apiResourceSchema(systemExports[0].resources[0])
	if err != nil {
		t.Fatal(err)
	}
	if again.Name != s.Name {
		t.Errorf("the name changes between conversions: %s, then %s", s.Name, again.Name)
	}
}
