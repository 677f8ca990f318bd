package v1alpha1

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

var validPhases = sets.New(
	LogicalClusterMigrationPhasePreparing,
	LogicalClusterMigrationPhaseMigrating,
	LogicalClusterMigrationPhaseOriginCleanup,
	LogicalClusterMigrationPhaseDestinationFinalize,
	LogicalClusterMigrationPhaseCompleted,
	LogicalClusterMigrationPhaseFailed,
)

// ValidateLogicalClusterMigrationCreate validates a new migration.
func ValidateLogicalClusterMigrationCreate(m *LogicalClusterMigration) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMeta(&m.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	allErrs = append(allErrs, validateSpec(&m.Spec, field.NewPath("spec"))...)
	return append(allErrs, validateStatus(&m.Status, field.NewPath("status"))...)
}

// ValidateLogicalClusterMigrationUpdate validates an update of a migration.
// The spec cannot change: a move under way has claimed its logical cluster
// and its destination (kcp leaves the spec mutable; a changed destination
// mid-copy would leave data behind on the first one).
func ValidateLogicalClusterMigrationUpdate(newM, oldM *LogicalClusterMigration) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newM.ObjectMeta, &oldM.ObjectMeta, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	allErrs = append(allErrs, validateSpec(&newM.Spec, specPath)...)
	if !apiequality.Semantic.DeepEqual(newM.Spec, oldM.Spec) {
		allErrs = append(allErrs, field.Forbidden(specPath, "the spec of a migration cannot change; delete the migration and create another"))
	}
	return append(allErrs, validateStatus(&newM.Status, field.NewPath("status"))...)
}

// ValidateLogicalClusterMigrationStatusUpdate validates an update of the
// status subresource.
func ValidateLogicalClusterMigrationStatusUpdate(newM, oldM *LogicalClusterMigration) field.ErrorList {
	allErrs := apimachineryvalidation.ValidateObjectMetaUpdate(&newM.ObjectMeta, &oldM.ObjectMeta, field.NewPath("metadata"))
	return append(allErrs, validateStatus(&newM.Status, field.NewPath("status"))...)
}

func validateSpec(spec *LogicalClusterMigrationSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	lcPath := fldPath.Child("logicalCluster")
	switch {
	case spec.LogicalCluster == "":
		allErrs = append(allErrs, field.Required(lcPath, "the name of the logical cluster to move"))
	case logicalcluster.ValidateName(spec.LogicalCluster) != nil:
		allErrs = append(allErrs, field.Invalid(lcPath, spec.LogicalCluster, logicalcluster.ValidateName(spec.LogicalCluster).Error()))
	case logicalcluster.Name(spec.LogicalCluster).IsSystem() || logicalcluster.Name(spec.LogicalCluster) == logicalcluster.Root:
		allErrs = append(allErrs, field.Invalid(lcPath, spec.LogicalCluster, "the root and system logical clusters cannot move"))
	}
	shardPath := fldPath.Child("destinationShard")
	if spec.DestinationShard == "" {
		allErrs = append(allErrs, field.Required(shardPath, "the name of the shard to move to"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(spec.DestinationShard) {
			allErrs = append(allErrs, field.Invalid(shardPath, spec.DestinationShard, msg))
		}
	}
	return allErrs
}

func validateStatus(status *LogicalClusterMigrationStatus, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if status.Phase != "" && !validPhases.Has(status.Phase) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("phase"), status.Phase, sets.List(validPhases)))
	}
	if status.EntriesCopied < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("entriesCopied"), status.EntriesCopied, "must not be negative"))
	}
	return append(allErrs, conditionsv1alpha1.ValidateConditions(status.Conditions, fldPath.Child("conditions"))...)
}
