package v1alpha1

import (
	"encoding/json"
	"regexp"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// versionNamePattern is kcp's pattern of a resource version name.
var versionNamePattern = regexp.MustCompile(`^v[1-9][0-9]*([a-z]+[1-9][0-9]*)?$`)

// ValidateAPIResourceSchema validates a new APIResourceSchema. Its name is
// "<prefix>.<plural>.<group>" ("core" for the core group).
func ValidateAPIResourceSchema(s *APIResourceSchema) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&s.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	group := s.Spec.Group
	if group == "" {
		group = "core"
	}
	if suffix := "." + s.Spec.Names.Plural + "." + group; s.Spec.Names.Plural != "" && (!strings.HasSuffix(s.Name, suffix) || len(s.Name) == len(suffix)) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), s.Name, "must be <prefix>"+suffix))
	}
	return append(allErrs, validateAPIResourceSchemaSpec(&s.Spec, field.NewPath("spec"))...)
}

// ValidateAPIResourceSchemaUpdate validates an update of an
// APIResourceSchema: the spec is immutable.
func ValidateAPIResourceSchemaUpdate(s, old *APIResourceSchema) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if !jsonEqual(s.Spec, old.Spec) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"), "APIResourceSchema spec is immutable: create a new APIResourceSchema instead"))
	}
	return allErrs
}

func jsonEqual(a, b any) bool {
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && string(x) == string(y)
}

func validateAPIResourceSchemaSpec(spec *APIResourceSchemaSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Group != "" {
		for _, msg := range validation.IsDNS1123Subdomain(spec.Group) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("group"), spec.Group, msg))
		}
	}
	names := fldPath.Child("names")
	for name, value := range map[string]string{"plural": spec.Names.Plural, "singular": spec.Names.Singular, "listKind": spec.Names.ListKind} {
		if value == "" && name == "plural" {
			allErrs = append(allErrs, field.Required(names.Child(name), ""))
			continue
		}
		if value != "" && name != "listKind" {
			for _, msg := range validation.IsDNS1035Label(value) {
				allErrs = append(allErrs, field.Invalid(names.Child(name), value, msg))
			}
		}
	}
	if spec.Names.Kind == "" {
		allErrs = append(allErrs, field.Required(names.Child("kind"), ""))
	}
	if spec.Scope != apiextensionsv1.ClusterScoped && spec.Scope != apiextensionsv1.NamespaceScoped {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("scope"), spec.Scope, []apiextensionsv1.ResourceScope{apiextensionsv1.ClusterScoped, apiextensionsv1.NamespaceScoped}))
	}
	if spec.NameValidation != "" && spec.NameValidation != NameValidationDNS1123Subdomain && spec.NameValidation != NameValidationPathSegmentName {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("nameValidation"), spec.NameValidation, []string{NameValidationDNS1123Subdomain, NameValidationPathSegmentName}))
	}

	versions := fldPath.Child("versions")
	if len(spec.Versions) == 0 {
		allErrs = append(allErrs, field.Required(versions, "at least one version is required"))
	}
	seen, storage := sets.New[string](), 0
	for i, v := range spec.Versions {
		p := versions.Index(i)
		switch {
		case !versionNamePattern.MatchString(v.Name):
			allErrs = append(allErrs, field.Invalid(p.Child("name"), v.Name, "must match "+versionNamePattern.String()))
		case seen.Has(v.Name):
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), v.Name))
		}
		seen.Insert(v.Name)
		if v.Storage {
			storage++
		}
		if v.DeprecationWarning != nil && !v.Deprecated {
			allErrs = append(allErrs, field.Invalid(p.Child("deprecationWarning"), *v.DeprecationWarning, "can only be set for deprecated versions"))
		}
		if len(v.Schema.Raw) == 0 {
			allErrs = append(allErrs, field.Required(p.Child("schema"), "an OpenAPI v3 schema is required"))
		} else if _, err := v.GetSchema(); err != nil {
			allErrs = append(allErrs, field.Invalid(p.Child("schema"), string(v.Schema.Raw), "must be an OpenAPI v3 schema: "+err.Error()))
		}
		colNames := sets.New[string]()
		for j, c := range v.AdditionalPrinterColumns {
			if c.Name == "" || colNames.Has(c.Name) {
				allErrs = append(allErrs, field.Invalid(p.Child("additionalPrinterColumns").Index(j).Child("name"), c.Name, "must be set and unique"))
			}
			colNames.Insert(c.Name)
			if c.JSONPath == "" {
				allErrs = append(allErrs, field.Required(p.Child("additionalPrinterColumns").Index(j).Child("jsonPath"), ""))
			}
		}
	}
	if len(spec.Versions) > 0 && storage != 1 {
		allErrs = append(allErrs, field.Invalid(versions, storage, "exactly one version must be the storage version"))
	}
	if len(spec.Versions) > 1 && spec.Conversion == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("conversion"), "conversion must be specified when multiple versions exist"))
	}
	if c := spec.Conversion; c != nil {
		p := fldPath.Child("conversion")
		switch c.Strategy {
		case NoneConverter:
			if c.Webhook != nil {
				allErrs = append(allErrs, field.Forbidden(p.Child("webhook"), "must not be set for strategy None"))
			}
		case WebhookConverter:
			if c.Webhook == nil || c.Webhook.ClientConfig == nil || !strings.HasPrefix(c.Webhook.ClientConfig.URL, "https://") {
				allErrs = append(allErrs, field.Required(p.Child("webhook", "clientConfig", "url"), "an https URL is required for strategy Webhook"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(p.Child("strategy"), c.Strategy, []ConversionStrategyType{NoneConverter, WebhookConverter}))
		}
	}
	return allErrs
}

// GetSchema decodes the OpenAPI schema of a version.
func (v *APIResourceVersion) GetSchema() (*apiextensionsv1.JSONSchemaProps, error) {
	if v.Schema.Raw == nil {
		return nil, nil
	}
	var s apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal(v.Schema.Raw, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// ValidateAPIExportEndpointSlice validates a new APIExportEndpointSlice.
func ValidateAPIExportEndpointSlice(s *APIExportEndpointSlice) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&s.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, ValidateExportBindingReference(s.Spec.APIExport, field.NewPath("spec", "export"))...)
	if s.Spec.Partition != "" {
		for _, msg := range validation.IsDNS1123Subdomain(s.Spec.Partition) {
			allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "partition"), s.Spec.Partition, msg))
		}
	}
	return append(allErrs, validateEndpointSliceStatus(&s.Status, field.NewPath("status"))...)
}

// ValidateAPIExportEndpointSliceUpdate validates an update of an
// APIExportEndpointSlice: the export cannot change.
func ValidateAPIExportEndpointSliceUpdate(s, old *APIExportEndpointSlice) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, ValidateExportBindingReference(s.Spec.APIExport, field.NewPath("spec", "export"))...)
	if s.Spec.APIExport != old.Spec.APIExport {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "export"), s.Spec.APIExport, "APIExport reference must not be changed"))
	}
	return append(allErrs, validateEndpointSliceStatus(&s.Status, field.NewPath("status"))...)
}

// ValidateAPIExportEndpointSliceStatusUpdate validates a status update.
func ValidateAPIExportEndpointSliceStatusUpdate(s, old *APIExportEndpointSlice) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateEndpointSliceStatus(&s.Status, field.NewPath("status"))...)
}

func validateEndpointSliceStatus(status *APIExportEndpointSliceStatus, fldPath *field.Path) field.ErrorList {
	allErrs := conditionsv1alpha1.ValidateConditions(status.Conditions, fldPath.Child("conditions"))
	seen := sets.New[string]()
	for i, e := range status.APIExportEndpoints {
		p := fldPath.Child("endpoints").Index(i).Child("url")
		if !strings.HasPrefix(e.URL, "https://") && !strings.HasPrefix(e.URL, "http://") {
			allErrs = append(allErrs, field.Invalid(p, e.URL, "must be an http(s) URL"))
		}
		if seen.Has(e.URL) {
			allErrs = append(allErrs, field.Duplicate(p, e.URL))
		}
		seen.Insert(e.URL)
	}
	return allErrs
}

// ValidateExportBindingReference validates a reference to an APIExport:
// a name, and a workspace path when set.
func ValidateExportBindingReference(ref ExportBindingReference, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ref.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), "the name of the APIExport is required"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(ref.Name) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("name"), ref.Name, msg))
		}
	}
	if ref.Path != "" {
		if _, err := logicalcluster.ParsePath(ref.Path); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("path"), ref.Path, err.Error()))
		}
	}
	return allErrs
}
