package v1alpha1

import (
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The messages below are those of the x-kubernetes-validations rules of
// kcp's WorkspaceAuthenticationConfiguration CRD, reported on the object
// the rule belongs to, as the CRD's CEL validation reports them.
const (
	claimOrExpressionMessage         = "either claim or expression must be specified"
	claimAndExpressionMessage        = "claim and expression cannot both be specified"
	prefixWithoutClaimMessage        = "prefix can only be specified when claim is specified"
	requiredValueWithoutClaimMessage = "requiredValue can only be specified when claim is specified"
	messageWithoutExpressionMessage  = "message can only be specified when expression is specified"
)

// ValidateWorkspaceAuthenticationConfiguration validates a new or updated
// WorkspaceAuthenticationConfiguration the way kcp's CRD schema does.
// Whether the issuer can be reached and the CEL expressions compile is
// found out when the authenticator is built, as in kcp.
func ValidateWorkspaceAuthenticationConfiguration(wac *WorkspaceAuthenticationConfiguration) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&wac.ObjectMeta, false, path.ValidatePathSegmentName, field.NewPath("metadata"))
	jwtPath := field.NewPath("spec", "jwt")
	if len(wac.Spec.JWT) == 0 {
		return append(allErrs, field.Required(jwtPath, ""))
	}
	for i := range wac.Spec.JWT {
		allErrs = append(allErrs, validateJWTAuthenticator(&wac.Spec.JWT[i], jwtPath.Index(i))...)
	}
	return allErrs
}

// ValidateWorkspaceAuthenticationConfigurationUpdate validates an update.
func ValidateWorkspaceAuthenticationConfigurationUpdate(newWAC, oldWAC *WorkspaceAuthenticationConfiguration) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newWAC.ObjectMeta, &oldWAC.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, ValidateWorkspaceAuthenticationConfiguration(newWAC)...)
}

func validateJWTAuthenticator(jwt *JWTAuthenticator, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if jwt.Issuer.URL == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("issuer", "url"), ""))
	}
	for i, rule := range jwt.ClaimValidationRules {
		allErrs = append(allErrs, validateClaimValidationRule(rule, fldPath.Child("claimValidationRules").Index(i))...)
	}
	mappingsPath := fldPath.Child("claimMappings")
	allErrs = append(allErrs, validatePrefixedClaimOrExpression(jwt.ClaimMappings.Username, mappingsPath.Child("username"))...)
	allErrs = append(allErrs, validatePrefixedClaimOrExpression(jwt.ClaimMappings.Groups, mappingsPath.Child("groups"))...)
	if jwt.ClaimMappings.UID.Claim != "" && jwt.ClaimMappings.UID.Expression != "" {
		allErrs = append(allErrs, field.Invalid(mappingsPath.Child("uid"), "object", claimAndExpressionMessage))
	}
	for i, extra := range jwt.ClaimMappings.Extra {
		idxPath := mappingsPath.Child("extra").Index(i)
		if extra.Key == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("key"), ""))
		}
		if extra.ValueExpression == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("valueExpression"), ""))
		}
	}
	for i, rule := range jwt.UserValidationRules {
		if rule.Expression == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("userValidationRules").Index(i).Child("expression"), ""))
		}
	}
	return allErrs
}

// validatePrefixedClaimOrExpression checks a username or groups mapping.
// An empty mapping is an error, as in kcp, whose clients always send the
// object.
func validatePrefixedClaimOrExpression(m PrefixedClaimOrExpression, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if m.Claim == "" && m.Expression == "" {
		allErrs = append(allErrs, field.Invalid(fldPath, "object", claimOrExpressionMessage))
	}
	if m.Claim != "" && m.Expression != "" {
		allErrs = append(allErrs, field.Invalid(fldPath, "object", claimAndExpressionMessage))
	}
	if m.Prefix != nil && m.Claim == "" {
		allErrs = append(allErrs, field.Invalid(fldPath, "object", prefixWithoutClaimMessage))
	}
	return allErrs
}

func validateClaimValidationRule(rule ClaimValidationRule, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if rule.Claim == "" && rule.Expression == "" {
		allErrs = append(allErrs, field.Invalid(fldPath, "object", claimOrExpressionMessage))
	}
	if rule.Claim != "" && rule.Expression != "" {
		allErrs = append(allErrs, field.Invalid(fldPath, "object", claimAndExpressionMessage))
	}
	if rule.RequiredValue != "" && rule.Claim == "" {
		allErrs = append(allErrs, field.Invalid(fldPath, "object", requiredValueWithoutClaimMessage))
	}
	if rule.Message != "" && rule.Expression == "" {
		allErrs = append(allErrs, field.Invalid(fldPath, "object", messageWithoutExpressionMessage))
	}
	return allErrs
}
