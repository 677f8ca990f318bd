package v1alpha1

import (
	"regexp"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
)

// The patterns of kcp's schema for cache.kcp.io.
var (
	groupPattern    = regexp.MustCompile(`^(|[a-z0-9]([-a-z0-9]*[a-z0-9](\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?)$`)
	resourcePattern = regexp.MustCompile(`^[a-z][-a-z0-9]*[a-z0-9]$`)
	clusterPath     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(:[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// ValidateClusterCachedResource validates a new ClusterCachedResource.
func ValidateClusterCachedResource(r *ClusterCachedResource) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&r.ObjectMeta, false, path.ValidatePathSegmentName, field.NewPath("metadata"))
	return append(allErrs, validateClusterCachedResourceSpec(&r.Spec, field.NewPath("spec"))...)
}

// ValidateClusterCachedResourceUpdate validates an update of a
// ClusterCachedResource.
func ValidateClusterCachedResourceUpdate(r, old *ClusterCachedResource) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&r.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateClusterCachedResourceSpec(&r.Spec, field.NewPath("spec"))...)
}

// ValidateClusterCachedResourceStatusUpdate validates a status update of a
// ClusterCachedResource.
func ValidateClusterCachedResourceStatusUpdate(r, old *ClusterCachedResource) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&r.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, conditionsv1alpha1.ValidateConditions(r.Status.Conditions, field.NewPath("status", "conditions"))...)
}

func validateClusterCachedResourceSpec(spec *ClusterCachedResourceSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if !groupPattern.MatchString(spec.Group) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("group"), spec.Group, "must match "+groupPattern.String()))
	}
	switch {
	case spec.Resource == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("resource"), ""))
	case !resourcePattern.MatchString(spec.Resource):
		allErrs = append(allErrs, field.Invalid(fldPath.Child("resource"), spec.Resource, "must match "+resourcePattern.String()))
	}
	if id := spec.Identity; id != nil && id.SecretRef != nil && id.SecretRef.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("identity", "secretRef", "name"), ""))
	}
	return append(allErrs, metav1validation.ValidateLabelSelector(spec.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("labelSelector"))...)
}

// ValidateClusterCachedResourceEndpointSlice validates a new
// ClusterCachedResourceEndpointSlice.
func ValidateClusterCachedResourceEndpointSlice(s *ClusterCachedResourceEndpointSlice) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&s.ObjectMeta, false, path.ValidatePathSegmentName, field.NewPath("metadata"))
	fldPath := field.NewPath("spec")
	allErrs = append(allErrs, validateReference(s.Spec.ClusterCachedResource.Path, s.Spec.ClusterCachedResource.Name, fldPath.Child("clusterCachedResource"))...)
	return append(allErrs, validateReference(s.Spec.APIExport.Path, s.Spec.APIExport.Name, fldPath.Child("export"))...)
}

// ValidateClusterCachedResourceEndpointSliceUpdate validates an update of a
// ClusterCachedResourceEndpointSlice: its references do not change, as
// kcp's schema says.
func ValidateClusterCachedResourceEndpointSliceUpdate(s, old *ClusterCachedResourceEndpointSlice) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	fldPath := field.NewPath("spec")
	if s.Spec.ClusterCachedResource != old.Spec.ClusterCachedResource {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("clusterCachedResource"), s.Spec.ClusterCachedResource, "ClusterCachedResource reference must not be changed"))
	}
	if s.Spec.APIExport != old.Spec.APIExport {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("export"), s.Spec.APIExport, "APIExport reference must not be changed"))
	}
	return allErrs
}

// ValidateClusterCachedResourceEndpointSliceStatusUpdate validates a status
// update of a ClusterCachedResourceEndpointSlice.
func ValidateClusterCachedResourceEndpointSliceStatusUpdate(s, old *ClusterCachedResourceEndpointSlice) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, conditionsv1alpha1.ValidateConditions(s.Status.Conditions, field.NewPath("status", "conditions"))...)
}

func validateReference(p, name string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if p != "" && !clusterPath.MatchString(p) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("path"), p, "must match "+clusterPath.String()))
	}
	if name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	return allErrs
}
