package v1alpha1

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validSchema() *APIResourceSchema {
	return &APIResourceSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "v1.widgets.example.io"},
		Spec: APIResourceSchemaSpec{
			Group:    "example.io",
			Names:    apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope:    apiextensionsv1.NamespaceScoped,
			Versions: []APIResourceVersion{{Name: "v1", Served: true, Storage: true, Schema: runtime.RawExtension{Raw: []byte(`{"type":"object"}`)}}},
		},
	}
}

// requireField fails unless errs has exactly one error, on path.
func requireField(t *testing.T, errs field.ErrorList, path, what string) {
	t.Helper()
	if len(errs) != 1 || errs[0].Field != path {
		t.Errorf("%s: errors %v, want one on %s", what, errs, path)
	}
}

func TestValidateAPIResourceSchema(t *testing.T) {
	if errs := ValidateAPIResourceSchema(validSchema()); len(errs) != 0 {
		t.Fatalf("valid schema: %v", errs)
	}
	core := validSchema()
	core.Name, core.Spec.Group = "v1.widgets.core", ""
	if errs := ValidateAPIResourceSchema(core); len(errs) != 0 {
		t.Errorf("core group schema: %v", errs)
	}
	for what, tc := range map[string]struct {
		mutate func(*APIResourceSchema)
		field  string
	}{
		"name of another resource": {func(s *APIResourceSchema) { s.Name = "v1.gadgets.example.io" }, "metadata.name"},
		"name without prefix":      {func(s *APIResourceSchema) { s.Name = "widgets.example.io" }, "metadata.name"},
		"no versions":              {func(s *APIResourceSchema) { s.Spec.Versions = nil }, "spec.versions"},
		"bad version name":         {func(s *APIResourceSchema) { s.Spec.Versions[0].Name = "one" }, "spec.versions[0].name"},
		"no storage version":       {func(s *APIResourceSchema) { s.Spec.Versions[0].Storage = false }, "spec.versions"},
		"schema not json":          {func(s *APIResourceSchema) { s.Spec.Versions[0].Schema.Raw = []byte("{") }, "spec.versions[0].schema"},
		"no schema":                {func(s *APIResourceSchema) { s.Spec.Versions[0].Schema.Raw = nil }, "spec.versions[0].schema"},
		"bad scope":                {func(s *APIResourceSchema) { s.Spec.Scope = "Galaxy" }, "spec.scope"},
		"no kind":                  {func(s *APIResourceSchema) { s.Spec.Names.Kind = "" }, "spec.names.kind"},
		"bad name validation":      {func(s *APIResourceSchema) { s.Spec.NameValidation = "Anything" }, "spec.nameValidation"},
		"two versions without conversion": {func(s *APIResourceSchema) {
			v2 := s.Spec.Versions[0]
			v2.Name, v2.Storage = "v2", false
			s.Spec.Versions = append(s.Spec.Versions, v2)
		}, "spec.conversion"},
		"webhook without url": {func(s *APIResourceSchema) {
			s.Spec.Conversion = &CustomResourceConversion{Strategy: WebhookConverter}
		}, "spec.conversion.webhook.clientConfig.url"},
	} {
		s := validSchema()
		tc.mutate(s)
		requireField(t, ValidateAPIResourceSchema(s), tc.field, what)
	}
}

func TestAPIResourceSchemaSpecIsImmutable(t *testing.T) {
	old := validSchema()
	old.ResourceVersion = "1"
	labelled := old.DeepCopy()
	labelled.Labels = map[string]string{"a": "b"}
	if errs := ValidateAPIResourceSchemaUpdate(labelled, old); len(errs) != 0 {
		t.Errorf("label update: %v", errs)
	}
	changed := old.DeepCopy()
	changed.Spec.Versions[0].Served = false
	errs := ValidateAPIResourceSchemaUpdate(changed, old)
	requireField(t, errs, "spec", "spec change")
	if len(errs) == 1 && !strings.Contains(errs[0].Error(), "immutable") {
		t.Errorf("error %q does not say the spec is immutable", errs[0].Error())
	}
}

func TestDefaultNameValidation(t *testing.T) {
	spec := &APIResourceSchemaSpec{}
	SetDefaults_APIResourceSchemaSpec(spec)
	if spec.NameValidation != NameValidationDNS1123Subdomain {
		t.Errorf("nameValidation = %q", spec.NameValidation)
	}
	spec.NameValidation = NameValidationPathSegmentName
	SetDefaults_APIResourceSchemaSpec(spec)
	if spec.NameValidation != NameValidationPathSegmentName {
		t.Errorf("default overwrote %q", spec.NameValidation)
	}
}

func TestValidateAPIExportEndpointSlice(t *testing.T) {
	slice := &APIExportEndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "s", ResourceVersion: "1"}, Spec: APIExportEndpointSliceSpec{APIExport: ExportBindingReference{Path: "root:org", Name: "tenancy.kcp.io"}}}
	if errs := ValidateAPIExportEndpointSlice(slice); len(errs) != 0 {
		t.Fatalf("valid slice: %v", errs)
	}
	noName := slice.DeepCopy()
	noName.Spec.APIExport.Name = ""
	requireField(t, ValidateAPIExportEndpointSlice(noName), "spec.export.name", "no export name")
	badPath := slice.DeepCopy()
	badPath.Spec.APIExport.Path = "Root::x"
	requireField(t, ValidateAPIExportEndpointSlice(badPath), "spec.export.path", "bad path")
	moved := slice.DeepCopy()
	moved.Spec.APIExport.Name = "other"
	requireField(t, ValidateAPIExportEndpointSliceUpdate(moved, slice), "spec.export", "changed export")
	badURL := slice.DeepCopy()
	badURL.Status.APIExportEndpoints = []APIExportEndpoint{{URL: "ftp://x"}}
	requireField(t, ValidateAPIExportEndpointSliceStatusUpdate(badURL, slice), "status.endpoints[0].url", "bad endpoint")
}
