package v1alpha1

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

var (
	// apiVersionPattern is group/version or a bare version.
	apiVersionPattern = regexp.MustCompile(`^([^/]+/)?[^/]+$`)
	// lifecycleNamePattern spells an initializer or terminator of a
	// WorkspaceType: "<cluster or path>:<type name>".
	lifecycleNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(:[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$`)
	// systemLifecycleNamePrefix starts the initializers and terminators of
	// the system itself, such as "system:apibindings".
	systemLifecycleNamePrefix = "system:"
)

var validPhases = sets.New(
	LogicalClusterPhaseScheduling,
	LogicalClusterPhaseInitializing,
	LogicalClusterPhaseReady,
	LogicalClusterPhaseUnavailable,
	LogicalClusterPhaseTerminating,
	LogicalClusterPhaseDeleting,
)

// ValidateLogicalClusterCreate validates a new LogicalCluster.
func ValidateLogicalClusterCreate(lc *LogicalCluster) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&lc.ObjectMeta, false, validateLogicalClusterName, field.NewPath("metadata"))
	allErrs = append(allErrs, validateLogicalClusterSpec(&lc.Spec, field.NewPath("spec"))...)
	allErrs = append(allErrs, validateLogicalClusterStatus(&lc.Status, field.NewPath("status"))...)
	return allErrs
}

// ValidateLogicalClusterUpdate validates an update of a LogicalCluster. The
// initializers and terminators of the spec are fixed at creation.
func ValidateLogicalClusterUpdate(newLC, oldLC *LogicalCluster) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newLC.ObjectMeta, &oldLC.ObjectMeta, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, validateLogicalClusterSpec(&newLC.Spec, specPath)...)
	if !apiequality.Semantic.DeepEqual(newLC.Spec.Initializers, oldLC.Spec.Initializers) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("initializers"), newLC.Spec.Initializers, "field is immutable"))
	}
	if !apiequality.Semantic.DeepEqual(newLC.Spec.Terminators, oldLC.Spec.Terminators) {
		allErrs = append(allErrs, field.Invalid(specPath.Child("terminators"), newLC.Spec.Terminators, "field is immutable"))
	}
	allErrs = append(allErrs, validateLogicalClusterStatus(&newLC.Status, field.NewPath("status"))...)
	return allErrs
}

// ValidateLogicalClusterStatusUpdate validates an update of the status of a
// LogicalCluster.
func ValidateLogicalClusterStatusUpdate(newLC, oldLC *LogicalCluster) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newLC.ObjectMeta, &oldLC.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateLogicalClusterStatus(&newLC.Status, field.NewPath("status"))...)
	return allErrs
}

func validateLogicalClusterName(name string, prefix bool) []string {
	if prefix {
		return []string{fmt.Sprintf("generateName is not supported: a LogicalCluster is always named %q", LogicalClusterName)}
	}
	if name != LogicalClusterName {
		return []string{fmt.Sprintf("must be %q", LogicalClusterName)}
	}
	return nil
}

func validateLogicalClusterSpec(spec *LogicalClusterSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Owner != nil {
		allErrs = append(allErrs, validateOwner(spec.Owner, fldPath.Child("owner"))...)
	}
	allErrs = append(allErrs, ValidateInitializers(spec.Initializers, fldPath.Child("initializers"))...)
	allErrs = append(allErrs, ValidateTerminators(spec.Terminators, fldPath.Child("terminators"))...)
	return allErrs
}

func validateOwner(owner *LogicalClusterOwner, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if owner.APIVersion == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("apiVersion"), ""))
	} else if !apiVersionPattern.MatchString(owner.APIVersion) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("apiVersion"), owner.APIVersion, "must be <group>/<version> or <version>"))
	}
	if owner.Resource == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("resource"), ""))
	}
	if owner.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), ""))
	}
	if owner.Cluster == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("cluster"), ""))
	} else if err := logicalcluster.ValidateName(owner.Cluster); err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("cluster"), owner.Cluster, err.Error()))
	}
	if owner.UID == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("uid"), ""))
	}
	return allErrs
}

func validateLogicalClusterStatus(status *LogicalClusterStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if status.URL != "" {
		allErrs = append(allErrs, ValidateURL(status.URL, fldPath.Child("URL"))...)
	}
	allErrs = append(allErrs, ValidatePhase(status.Phase, fldPath.Child("phase"))...)
	allErrs = append(allErrs, conditionsv1alpha1.ValidateConditions(status.Conditions, fldPath.Child("conditions"))...)
	allErrs = append(allErrs, ValidateInitializers(status.Initializers, fldPath.Child("initializers"))...)
	allErrs = append(allErrs, ValidateTerminators(status.Terminators, fldPath.Child("terminators"))...)
	return allErrs
}

// ValidatePhase accepts the empty phase (defaulted to Scheduling) and the
// known phases.
func ValidatePhase(phase LogicalClusterPhaseType, fldPath *field.Path) field.ErrorList {
	if phase == "" || validPhases.Has(phase) {
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, phase, sets.List(validPhases))}
}

// ValidateInitializers checks that every initializer is spelled
// "<cluster>:<type>" or "system:<name>", and that none appears twice.
func ValidateInitializers(initializers []LogicalClusterInitializer, fldPath *field.Path) field.ErrorList {
	return validateLifecycleNames(initializers, fldPath)
}

// ValidateTerminators checks terminators as ValidateInitializers checks
// initializers.
func ValidateTerminators(terminators []LogicalClusterTerminator, fldPath *field.Path) field.ErrorList {
	return validateLifecycleNames(terminators, fldPath)
}

func validateLifecycleNames[T ~string](names []T, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[T]()
	for i, name := range names {
		idxPath := fldPath.Index(i)
		s := string(name)
		switch {
		case s == "":
			allErrs = append(allErrs, field.Required(idxPath, ""))
		case strings.HasPrefix(s, systemLifecycleNamePrefix):
			if len(s) == len(systemLifecycleNamePrefix) {
				allErrs = append(allErrs, field.Invalid(idxPath, s, "must name something after \"system:\""))
			}
		case !lifecycleNamePattern.MatchString(s):
			allErrs = append(allErrs, field.Invalid(idxPath, s, "must be \"<workspace path>:<type name>\" of lower-case alphanumerics and '-', or \"system:<name>\""))
		}
		if seen.Has(name) {
			allErrs = append(allErrs, field.Duplicate(idxPath, s))
		}
		seen.Insert(name)
	}
	return allErrs
}

// ValidateShardCreate validates a new Shard.
func ValidateShardCreate(shard *Shard) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&shard.ObjectMeta, false, apimachineryvalidation.NameIsDNSLabel, field.NewPath("metadata"))
	allErrs = append(allErrs, validateShardSpec(&shard.Spec, field.NewPath("spec"))...)
	allErrs = append(allErrs, validateShardStatus(&shard.Status, field.NewPath("status"))...)
	return allErrs
}

// ValidateShardUpdate validates an update of a Shard.
func ValidateShardUpdate(newShard, oldShard *Shard) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newShard.ObjectMeta, &oldShard.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateShardSpec(&newShard.Spec, field.NewPath("spec"))...)
	allErrs = append(allErrs, validateShardStatus(&newShard.Status, field.NewPath("status"))...)
	return allErrs
}

// ValidateShardStatusUpdate validates an update of the status of a Shard.
func ValidateShardStatusUpdate(newShard, oldShard *Shard) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newShard.ObjectMeta, &oldShard.ObjectMeta, field.NewPath("metadata"))
	allErrs = append(allErrs, validateShardStatus(&newShard.Status, field.NewPath("status"))...)
	return allErrs
}

func validateShardSpec(spec *ShardSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.BaseURL == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("baseURL"), "the address under which other components reach the shard"))
	} else {
		allErrs = append(allErrs, ValidateURL(spec.BaseURL, fldPath.Child("baseURL"))...)
	}
	if spec.ExternalURL != "" {
		allErrs = append(allErrs, ValidateURL(spec.ExternalURL, fldPath.Child("externalURL"))...)
	}
	if spec.VirtualWorkspaceURL != "" {
		allErrs = append(allErrs, ValidateURL(spec.VirtualWorkspaceURL, fldPath.Child("virtualWorkspaceURL"))...)
	}
	if l := spec.ResourceLimits; l != nil {
		allErrs = append(allErrs, validateWorkspaceCounts(l.Soft, fldPath.Child("resourceLimits", "soft"))...)
		allErrs = append(allErrs, validateWorkspaceCounts(l.Hard, fldPath.Child("resourceLimits", "hard"))...)
	}
	return allErrs
}

// validateWorkspaceCounts accepts only whole, non-negative numbers of
// workspaces. kcp accepts any resource and reports a negative limit as
// disabled; a typo here is refused instead of silently lifting a limit.
func validateWorkspaceCounts(list corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(list)) {
		q, p := list[name], fldPath.Key(string(name))
		switch {
		case name != ResourceWorkspaces:
			allErrs = append(allErrs, field.NotSupported(p, string(name), []string{string(ResourceWorkspaces)}))
		case q.Sign() < 0:
			allErrs = append(allErrs, field.Invalid(p, q.String(), "must not be negative (0 means unlimited)"))
		case q.MilliValue()%1000 != 0:
			allErrs = append(allErrs, field.Invalid(p, q.String(), "must be a whole number of workspaces"))
		}
	}
	return allErrs
}

func validateShardStatus(status *ShardStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for name, q := range status.Capacity {
		if q.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("capacity").Key(string(name)), q.String(), "must not be negative"))
		}
	}
	for name, q := range status.Used {
		if q.Sign() < 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("used").Key(string(name)), q.String(), "must not be negative"))
		}
	}
	allErrs = append(allErrs, conditionsv1alpha1.ValidateConditions(status.Conditions, fldPath.Child("conditions"))...)
	return allErrs
}

// ValidateURL checks that s is an absolute http or https URL with a host.
func ValidateURL(s string, fldPath *field.Path) field.ErrorList {
	u, err := url.Parse(s)
	if err != nil {
		return field.ErrorList{field.Invalid(fldPath, s, fmt.Sprintf("must be a URL: %v", err))}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return field.ErrorList{field.Invalid(fldPath, s, "must be an absolute URL with scheme http or https")}
	}
	if u.Host == "" {
		return field.ErrorList{field.Invalid(fldPath, s, "must have a host")}
	}
	return nil
}
