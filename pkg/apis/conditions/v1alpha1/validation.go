package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var validStatuses = sets.New(corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown)

var validSeverities = sets.New(ConditionSeverityError, ConditionSeverityWarning, ConditionSeverityInfo, ConditionSeverityNone)

// ValidateConditions checks that every condition has a type and a known
// status and severity, and that no type appears twice.
func ValidateConditions(conds Conditions, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[ConditionType]()
	for i, c := range conds {
		idxPath := fldPath.Index(i)
		if c.Type == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("type"), ""))
		} else if seen.Has(c.Type) {
			allErrs = append(allErrs, field.Duplicate(idxPath.Child("type"), c.Type))
		}
		seen.Insert(c.Type)
		if !validStatuses.Has(c.Status) {
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("status"), c.Status, sets.List(validStatuses)))
		}
		if !validSeverities.Has(c.Severity) {
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("severity"), c.Severity, sets.List(validSeverities)))
		}
	}
	return allErrs
}
