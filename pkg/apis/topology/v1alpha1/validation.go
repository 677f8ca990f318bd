package v1alpha1

import (
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
)

// ValidatePartition validates a new Partition: its selector must be a
// valid label selector, as kcp's schema requires.
func ValidatePartition(p *Partition) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&p.ObjectMeta, false, path.ValidatePathSegmentName, field.NewPath("metadata"))
	return append(allErrs, validateSelector(p.Spec.Selector, field.NewPath("spec", "selector"))...)
}

// ValidatePartitionUpdate validates an update of a Partition.
func ValidatePartitionUpdate(p, old *Partition) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&p.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateSelector(p.Spec.Selector, field.NewPath("spec", "selector"))...)
}

// ValidatePartitionSet validates a new PartitionSet: dimensions are label
// keys and the shard selector a valid label selector.
func ValidatePartitionSet(ps *PartitionSet) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&ps.ObjectMeta, false, path.ValidatePathSegmentName, field.NewPath("metadata"))
	return append(allErrs, validatePartitionSetSpec(&ps.Spec, field.NewPath("spec"))...)
}

// ValidatePartitionSetUpdate validates an update of a PartitionSet.
func ValidatePartitionSetUpdate(ps, old *PartitionSet) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&ps.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validatePartitionSetSpec(&ps.Spec, field.NewPath("spec"))...)
}

// ValidatePartitionSetStatusUpdate validates a status update of a
// PartitionSet.
func ValidatePartitionSetStatusUpdate(ps, old *PartitionSet) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&ps.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, conditionsv1alpha1.ValidateConditions(ps.Status.Conditions, field.NewPath("status", "conditions"))...)
}

func validatePartitionSetSpec(spec *PartitionSetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, d := range spec.Dimensions {
		for _, msg := range validation.IsQualifiedName(d) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("dimensions").Index(i), d, msg))
		}
	}
	return append(allErrs, validateSelector(spec.ShardSelector, fldPath.Child("shardSelector"))...)
}

func validateSelector(s *metav1.LabelSelector, fldPath *field.Path) field.ErrorList {
	return metav1validation.ValidateLabelSelector(s, metav1validation.LabelSelectorValidationOptions{}, fldPath)
}
