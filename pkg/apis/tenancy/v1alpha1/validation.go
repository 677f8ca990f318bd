package v1alpha1

import (
	"fmt"
	"regexp"
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// workspaceTypeNamePattern is a DNS-1123 label that starts with a letter.
var workspaceTypeNamePattern = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`)

const workspaceTypeNameMessage = "must be lower-case alphanumerics or '-', start with a letter, end with an alphanumeric, and be at most 63 characters"

var validVirtualWorkspaceTypes = sets.New(VirtualWorkspaceTypeInitializing, VirtualWorkspaceTypeTerminating)

// ValidateWorkspaceCreate validates a new Workspace.
func ValidateWorkspaceCreate(ws *Workspace) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&ws.ObjectMeta, false, apimachineryvalidation.NameIsDNSLabel, field.NewPath("metadata"))
	allErrs = append(allErrs, validateWorkspaceSpec(&ws.Spec, field.NewPath("spec"))...)
	allErrs = append(allErrs, validateWorkspaceStatus(&ws.Status, field.NewPath("status"))...)
	return allErrs
}

// ValidateWorkspaceUpdate validates an update of a Workspace: the type, the
// cluster and the mount cannot change once set, and the URL cannot be unset.
func ValidateWorkspaceUpdate(newWS, oldWS *Workspace) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newWS.ObjectMeta, &oldWS.ObjectMeta, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, validateWorkspaceSpec(&newWS.Spec, specPath)...)

	newSpec, oldSpec := &newWS.Spec, &oldWS.Spec
	if oldSpec.Type != nil && !apiequality.Semantic.DeepEqual(newSpec.Type, oldSpec.Type) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("type"), newSpec.Type, "field is immutable"))
	}
	if oldSpec.Cluster != "" && newSpec.Cluster != oldSpec.Cluster {
		allErrs = append(allErrs, field.Invalid(specPath.Child("cluster"), newSpec.Cluster, "field is immutable"))
	}
	if oldSpec.URL != "" && newSpec.URL == "" {
		allErrs = append(allErrs, field.Required(specPath.Child("URL"), "cannot be unset"))
	}
	if !apiequality.Semantic.DeepEqual(newSpec.Mount, oldSpec.Mount) {
		// Adding a mount later would leave the workspace's logical cluster
		// behind; removing one would leave it without any.
		allErrs = append(allErrs, field.Invalid(specPath.Child("mount"), newSpec.Mount, "field is immutable"))
	}

	allErrs = append(allErrs, validateWorkspaceStatus(&newWS.Status, field.NewPath("status"))...)
	return allErrs
}

// ValidateWorkspaceStatusUpdate validates an update of the status of a
// Workspace.
func ValidateWorkspaceStatusUpdate(newWS, oldWS *Workspace) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newWS.ObjectMeta, &oldWS.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateWorkspaceStatus(&newWS.Status, field.NewPath("status"))...)
	return allErrs
}

func validateWorkspaceSpec(spec *WorkspaceSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Type != nil {
		allErrs = append(allErrs, ValidateWorkspaceTypeReference(*spec.Type, fldPath.Child("type"))...)
	}
	if spec.Location != nil && spec.Location.Selector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Location.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("location", "selector"))...)
	}
	if spec.Cluster != "" {
		if err := logicalcluster.ValidateName(spec.Cluster); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("cluster"), spec.Cluster, err.Error()))
		}
	}
	if spec.URL != "" {
		allErrs = append(allErrs, corev1alpha1.ValidateURL(spec.URL, fldPath.Child("URL"))...)
	}
	if spec.Mount != nil {
		allErrs = append(allErrs, validateObjectReference(&spec.Mount.Reference, fldPath.Child("mount", "ref"))...)
	}
	return allErrs
}

func validateObjectReference(ref *ObjectReference, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ref.APIVersion == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("apiVersion"), ""))
	} else if _, err := schema.ParseGroupVersion(ref.APIVersion); err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("apiVersion"), ref.APIVersion, err.Error()))
	}
	if ref.Kind == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("kind"), ""))
	}
	if ref.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	if ref.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(ref.Namespace) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("namespace"), ref.Namespace, msg))
		}
	}
	return allErrs
}

func validateWorkspaceStatus(status *WorkspaceStatus, fldPath *field.Path) field.ErrorList {
	allErrs := corev1alpha1.ValidatePhase(status.Phase, fldPath.Child("phase"))
	allErrs = append(allErrs, conditionsv1alpha1.ValidateConditions(status.Conditions, fldPath.Child("conditions"))...)
	allErrs = append(allErrs, corev1alpha1.ValidateInitializers(status.Initializers, fldPath.Child("initializers"))...)
	allErrs = append(allErrs, corev1alpha1.ValidateTerminators(status.Terminators, fldPath.Child("terminators"))...)
	return allErrs
}

// ValidateWorkspaceTypeReference checks that a reference has a valid type
// name and, if any, a valid workspace path.
func ValidateWorkspaceTypeReference(ref WorkspaceTypeReference, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if ref.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	} else if !workspaceTypeNamePattern.MatchString(string(ref.Name)) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("name"), ref.Name, workspaceTypeNameMessage))
	}
	allErrs = append(allErrs, validateOptionalPath(ref.Path, fldPath.Child("path"))...)
	return allErrs
}

func validateOptionalPath(path string, fldPath *field.Path) field.ErrorList {
	if path == "" {
		return nil
	}
	if _, err := logicalcluster.ParsePath(path); err != nil {
		return field.ErrorList{field.Invalid(fldPath, path, err.Error())}
	}
	return nil
}

// ValidateWorkspaceTypeCreate validates a new WorkspaceType. The reserved
// names "any" and "system" are refused.
func ValidateWorkspaceTypeCreate(wt *WorkspaceType) field.ErrorList {
	metaPath := field.NewPath("metadata")
	allErrs := apimachineryvalidation.ValidateObjectMeta(&wt.ObjectMeta, false, validateWorkspaceTypeName, metaPath)
	if slices.Contains(WorkspaceTypeReservedNames(), wt.Name) {
		allErrs = append(allErrs, field.Invalid(metaPath.Child("name"), wt.Name, fmt.Sprintf("is reserved: %v may not be used", WorkspaceTypeReservedNames())))
	}
	allErrs = append(allErrs, validateWorkspaceTypeSpec(&wt.Spec, field.NewPath("spec"))...)
	allErrs = append(allErrs, validateWorkspaceTypeStatus(&wt.Status, field.NewPath("status"))...)
	return allErrs
}

// ValidateWorkspaceTypeUpdate validates an update of a WorkspaceType.
func ValidateWorkspaceTypeUpdate(newWT, oldWT *WorkspaceType) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newWT.ObjectMeta, &oldWT.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateWorkspaceTypeSpec(&newWT.Spec, field.NewPath("spec"))...)
	allErrs = append(allErrs, validateWorkspaceTypeStatus(&newWT.Status, field.NewPath("status"))...)
	return allErrs
}

// ValidateWorkspaceTypeStatusUpdate validates an update of the status of a
// WorkspaceType.
func ValidateWorkspaceTypeStatusUpdate(newWT, oldWT *WorkspaceType) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newWT.ObjectMeta, &oldWT.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateWorkspaceTypeStatus(&newWT.Status, field.NewPath("status"))...)
	return allErrs
}

func validateWorkspaceTypeName(name string, prefix bool) []string {
	if prefix {
		// a generated name appends characters, so only the start matters
		if name != "" && !workspaceTypeNamePattern.MatchString(name[:1]) {
			return []string{workspaceTypeNameMessage}
		}
		return nil
	}
	if !workspaceTypeNamePattern.MatchString(name) {
		return []string{workspaceTypeNameMessage}
	}
	return nil
}

func validateWorkspaceTypeSpec(spec *WorkspaceTypeSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, validateWorkspaceTypeReferences(spec.Extend.With, fldPath.Child("extend", "with"))...)
	allErrs = append(allErrs, metav1validation.ValidateLabels(spec.AdditionalWorkspaceLabels, fldPath.Child("additionalWorkspaceLabels"))...)
	if spec.DefaultChildWorkspaceType != nil {
		allErrs = append(allErrs, ValidateWorkspaceTypeReference(*spec.DefaultChildWorkspaceType, fldPath.Child("defaultChildWorkspaceType"))...)
	}
	if spec.LimitAllowedChildren != nil {
		allErrs = append(allErrs, validateWorkspaceTypeSelector(spec.LimitAllowedChildren, fldPath.Child("limitAllowedChildren"))...)
	}
	if spec.LimitAllowedParents != nil {
		allErrs = append(allErrs, validateWorkspaceTypeSelector(spec.LimitAllowedParents, fldPath.Child("limitAllowedParents"))...)
	}
	for i, ref := range spec.DefaultAPIBindings {
		idxPath := fldPath.Child("defaultAPIBindings").Index(i)
		allErrs = append(allErrs, validateOptionalPath(ref.Path, idxPath.Child("path"))...)
		if ref.Export == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("export"), "the name of the APIExport"))
		} else {
			for _, msg := range validation.IsDNS1123Subdomain(ref.Export) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("export"), ref.Export, msg))
			}
		}
	}
	for i, ref := range spec.AuthenticationConfigurations {
		if ref.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("authenticationConfigurations").Index(i).Child("name"), ""))
		}
	}
	return allErrs
}

func validateWorkspaceTypeReferences(refs []WorkspaceTypeReference, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[WorkspaceTypeReference]()
	for i, ref := range refs {
		allErrs = append(allErrs, ValidateWorkspaceTypeReference(ref, fldPath.Index(i))...)
		if seen.Has(ref) {
			allErrs = append(allErrs, field.Duplicate(fldPath.Index(i), ref.String()))
		}
		seen.Insert(ref)
	}
	return allErrs
}

func validateWorkspaceTypeSelector(sel *WorkspaceTypeSelector, fldPath *field.Path) field.ErrorList {
	allErrs := validateWorkspaceTypeReferences(sel.Types, fldPath.Child("types"))
	if sel.None && len(sel.Types) > 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("types"), len(sel.Types), "must be empty when none is true"))
	}
	return allErrs
}

func validateWorkspaceTypeStatus(status *WorkspaceTypeStatus, fldPath *field.Path) field.ErrorList {
	allErrs := conditionsv1alpha1.ValidateConditions(status.Conditions, fldPath.Child("conditions"))
	for i, vw := range status.VirtualWorkspaces {
		idxPath := fldPath.Child("virtualWorkspaces").Index(i)
		if vw.URL == "" {
			allErrs = append(allErrs, field.Required(idxPath.Child("url"), ""))
		} else {
			allErrs = append(allErrs, corev1alpha1.ValidateURL(vw.URL, idxPath.Child("url"))...)
		}
		if vw.Type != "" && !validVirtualWorkspaceTypes.Has(vw.Type) {
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("type"), vw.Type, sets.List(validVirtualWorkspaceTypes)))
		}
	}
	return allErrs
}
