package v1alpha2

import (
	"encoding/hex"
	"regexp"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
)

// Patterns of kcp's permission claim fields.
var (
	claimGroupPattern    = regexp.MustCompile(`^(|[a-z0-9]([-a-z0-9]*[a-z0-9](\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?)$`)
	claimResourcePattern = regexp.MustCompile(`^[a-z][-a-z0-9]*[a-z0-9](/[a-z][-a-z0-9]*[a-z0-9])?$`)
)

// ValidateAPIExport validates a new APIExport.
func ValidateAPIExport(e *APIExport) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&e.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateAPIExportSpec(&e.Spec, field.NewPath("spec"))...)
	return append(allErrs, validateAPIExportStatus(&e.Status, field.NewPath("status"))...)
}

// ValidateAPIExportUpdate validates an update of an APIExport.
func ValidateAPIExportUpdate(e, old *APIExport) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&e.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateAPIExportSpec(&e.Spec, field.NewPath("spec"))...)
	return append(allErrs, ValidateAPIExportStatusUpdate(e, old)...)
}

// ValidateAPIExportStatusUpdate validates an update of the status of an
// APIExport: the identity hash never changes once set.
func ValidateAPIExportStatusUpdate(e, old *APIExport) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&e.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateAPIExportStatus(&e.Status, field.NewPath("status"))...)
	if old.Status.IdentityHash != "" && e.Status.IdentityHash != old.Status.IdentityHash {
		allErrs = append(allErrs, field.Invalid(field.NewPath("status", "identityHash"), e.Status.IdentityHash, "the identity hash of an APIExport is immutable once set"))
	}
	return allErrs
}

func validateAPIExportSpec(spec *APIExportSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	type key struct{ name, group string }
	seen := sets.New[key]()
	for i, r := range spec.Resources {
		p := fldPath.Child("resources").Index(i)
		if r.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsDNS1035Label(r.Name) {
				allErrs = append(allErrs, field.Invalid(p.Child("name"), r.Name, msg))
			}
		}
		if r.Group != "" {
			for _, msg := range validation.IsDNS1123Subdomain(r.Group) {
				allErrs = append(allErrs, field.Invalid(p.Child("group"), r.Group, msg))
			}
		}
		if name, group, ok := ParseSchemaName(r.Schema); !ok {
			allErrs = append(allErrs, field.Invalid(p.Child("schema"), r.Schema, "must be the name of an APIResourceSchema, <prefix>.<resource>.<group>"))
		} else if name != r.Name || group != r.Group {
			allErrs = append(allErrs, field.Invalid(p.Child("schema"), r.Schema, "must be of the resource's name and group"))
		}
		if (r.Storage.CRD == nil) == (r.Storage.Virtual == nil) {
			allErrs = append(allErrs, field.Invalid(p.Child("storage"), r.Storage, "exactly one of crd or virtual must be set"))
		}
		if v := r.Storage.Virtual; v != nil && (v.Reference.Kind == "" || v.Reference.Name == "") {
			allErrs = append(allErrs, field.Required(p.Child("storage", "virtual", "reference"), "kind and name are required"))
		}
		k := key{r.Name, r.Group}
		if seen.Has(k) {
			allErrs = append(allErrs, field.Duplicate(p, k))
		}
		seen.Insert(k)
	}
	if id := spec.Identity; id != nil && id.SecretRef != nil {
		p := fldPath.Child("identity", "secretRef")
		for _, msg := range validation.IsDNS1123Subdomain(id.SecretRef.Name) {
			allErrs = append(allErrs, field.Invalid(p.Child("name"), id.SecretRef.Name, msg))
		}
		if id.SecretRef.Namespace != "" {
			for _, msg := range validation.IsDNS1123Label(id.SecretRef.Namespace) {
				allErrs = append(allErrs, field.Invalid(p.Child("namespace"), id.SecretRef.Namespace, msg))
			}
		}
	}
	return append(allErrs, validateClaims(spec.PermissionClaims, fldPath.Child("permissionClaims"))...)
}

func validateClaims(claims []PermissionClaim, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[GroupResource]()
	for i, c := range claims {
		p := fldPath.Index(i)
		allErrs = append(allErrs, validateClaim(c, p)...)
		allErrs = append(allErrs, validateIdentityHash(c.IdentityHash, p.Child("identityHash"))...)
		if seen.Has(c.GroupResource) {
			allErrs = append(allErrs, field.Duplicate(p, c.GroupResource))
		}
		seen.Insert(c.GroupResource)
	}
	return allErrs
}

func validateClaim(c PermissionClaim, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if !claimGroupPattern.MatchString(c.Group) {
		allErrs = append(allErrs, field.Invalid(p.Child("group"), c.Group, "must be an API group name or empty"))
	}
	if !claimResourcePattern.MatchString(c.Resource) {
		allErrs = append(allErrs, field.Invalid(p.Child("resource"), c.Resource, "must match "+claimResourcePattern.String()))
	}
	if len(c.Verbs) == 0 {
		allErrs = append(allErrs, field.Required(p.Child("verbs"), "at least one verb is required"))
	}
	if c.DefaultSelector != nil {
		allErrs = append(allErrs, validateSelector(*c.DefaultSelector, p.Child("defaultSelector"))...)
	}
	return allErrs
}

// validateIdentityHash checks the identity hash of an export's claim. A
// binding's claims are not checked: kcp admits a binding that accepts a
// claim under a wrong identity and reports it in PermissionClaimsValid.
func validateIdentityHash(hash string, p *field.Path) field.ErrorList {
	if hash == "" {
		return nil
	}
	if _, err := hex.DecodeString(hash); err != nil {
		return field.ErrorList{field.Invalid(p, hash, "must be the hex identity hash of an APIExport")}
	}
	return nil
}

func validateSelector(s PermissionClaimSelector, p *field.Path) field.ErrorList {
	labels := len(s.MatchLabels) > 0 || len(s.MatchExpressions) > 0
	if s.MatchAll == labels {
		return field.ErrorList{field.Invalid(p, s, "exactly one of matchAll or matchLabels/matchExpressions must be set")}
	}
	return metav1validation.ValidateLabelSelector(&s.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, p)
}

func validateAPIExportStatus(status *APIExportStatus, fldPath *field.Path) field.ErrorList {
	allErrs := conditionsv1alpha1.ValidateConditions(status.Conditions, fldPath.Child("conditions"))
	if status.IdentityHash != "" {
		if _, err := hex.DecodeString(status.IdentityHash); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("identityHash"), status.IdentityHash, "must be a hex SHA-256"))
		}
	}
	return allErrs
}

// ValidateAPIBinding validates a new APIBinding.
func ValidateAPIBinding(b *APIBinding) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&b.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateAPIBindingSpec(&b.Spec, field.NewPath("spec"))...)
	return append(allErrs, validateAPIBindingStatus(&b.Status, field.NewPath("status"))...)
}

// ValidateAPIBindingUpdate validates an update of an APIBinding: the
// reference to the export cannot change.
func ValidateAPIBindingUpdate(b, old *APIBinding) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateAPIBindingSpec(&b.Spec, field.NewPath("spec"))...)
	if !apiequality.Semantic.DeepEqual(b.Spec.Reference, old.Spec.Reference) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "reference"), b.Spec.Reference, "APIExport reference must not be changed"))
	}
	return append(allErrs, validateAPIBindingStatus(&b.Status, field.NewPath("status"))...)
}

// ValidateAPIBindingStatusUpdate validates an update of the status of an
// APIBinding.
func ValidateAPIBindingStatusUpdate(b, old *APIBinding) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&b.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateAPIBindingStatus(&b.Status, field.NewPath("status"))...)
}

func validateAPIBindingSpec(spec *APIBindingSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	ref := fldPath.Child("reference", "export")
	if spec.Reference.Export == nil {
		allErrs = append(allErrs, field.Required(ref, "an APIExport reference is required"))
	} else {
		allErrs = append(allErrs, apisv1alpha1.ValidateExportBindingReference(apisv1alpha1.ExportBindingReference(*spec.Reference.Export), ref)...)
	}
	type key struct{ group, resource, identityHash string }
	seen := sets.New[key]()
	for i, c := range spec.PermissionClaims {
		p := fldPath.Child("permissionClaims").Index(i)
		allErrs = append(allErrs, validateClaim(c.PermissionClaim, p)...)
		allErrs = append(allErrs, validateSelector(c.Selector, p.Child("selector"))...)
		if c.State != ClaimAccepted && c.State != ClaimRejected {
			allErrs = append(allErrs, field.NotSupported(p.Child("state"), c.State, []AcceptablePermissionClaimState{ClaimAccepted, ClaimRejected}))
		}
		k := key{c.Group, c.Resource, c.IdentityHash}
		if seen.Has(k) {
			allErrs = append(allErrs, field.Duplicate(p, k))
		}
		seen.Insert(k)
	}
	return allErrs
}

func validateAPIBindingStatus(status *APIBindingStatus, fldPath *field.Path) field.ErrorList {
	allErrs := conditionsv1alpha1.ValidateConditions(status.Conditions, fldPath.Child("conditions"))
	switch status.Phase {
	case "", APIBindingPhaseBinding, APIBindingPhaseBound:
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("phase"), status.Phase, []APIBindingPhaseType{"", APIBindingPhaseBinding, APIBindingPhaseBound}))
	}
	for i, r := range status.BoundResources {
		p := fldPath.Child("boundResources").Index(i)
		if r.Resource == "" {
			allErrs = append(allErrs, field.Required(p.Child("resource"), ""))
		}
		if r.Schema.Name == "" || r.Schema.UID == "" || r.Schema.IdentityHash == "" {
			allErrs = append(allErrs, field.Required(p.Child("schema"), "name, UID and identityHash are required"))
		}
	}
	return allErrs
}
