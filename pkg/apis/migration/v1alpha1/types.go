package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
)

// MigratingAnnotationKey on a LogicalCluster names the migration that moves
// it, as <cluster path of the migration>:<migration name>; one migration
// at a time may claim a logical cluster.
const MigratingAnnotationKey = "internal.kcp.io/migrating"

// ServedElsewhereAnnotationKey marks a shard's copy of a LogicalCluster
// that another shard serves during a move: the destination's copy until
// the cut-over, the origin's after it. Routing (the front-proxy's index)
// ignores marked copies, so exactly one shard serves the cluster at every
// moment but the cut-over, when both may and the origin holds writes.
// Ours: kcp bars access to a moving cluster instead.
const ServedElsewhereAnnotationKey = "internal.shardplane.io/served-elsewhere"

// WritesHeldAnnotationKey on the origin's LogicalCluster names the
// migration whose cut-over holds the cluster's writes. The shard holds
// them while it is set, from its start on, so that an origin restarted
// mid-cut-over admits no write its destination's final copy misses.
// Ours: kcp bars the cluster for the whole move instead.
const WritesHeldAnnotationKey = "internal.shardplane.io/writes-held"

// MovedInAtAnnotationKey on the destination's LogicalCluster is the first
// etcd revision of the destination's own resource versions of the cluster:
// a watch resuming from one below, the origin's, is told to relist, also
// after the destination restarted.
const MovedInAtAnnotationKey = "internal.shardplane.io/moved-in-at"

// WithChildrenAnnotationKey "true" on a LogicalClusterMigration moves the
// child workspaces of its logical cluster along, each by a migration of
// its own (<name>-<child workspace>) to the same destination that carries
// the annotation too, so the whole subtree moves. Ours: kcp moves one
// logical cluster.
const WithChildrenAnnotationKey = "migration.shardplane.io/with-children"

// LogicalClusterMigration asks to move a logical cluster, with everything
// stored in it, from the shard that hosts it to another shard.
//
// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=kcp
// +kubebuilder:printcolumn:name="Logical Cluster",type=string,JSONPath=`.spec.logicalCluster`,description="The logical cluster to move"
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`,description="How far the move has come"
// +kubebuilder:printcolumn:name="Destination",type=string,JSONPath=`.spec.destinationShard`,description="The shard the logical cluster moves to"
// +kubebuilder:printcolumn:name="Entries Copied",type=integer,JSONPath=`.status.entriesCopied`,description="Stored objects copied to the destination so far"
type LogicalClusterMigration struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec LogicalClusterMigrationSpec `json:"spec,omitempty"`
	// +optional
	Status LogicalClusterMigrationStatus `json:"status,omitempty"`
}

// LogicalClusterMigrationSpec names what moves and where to.
type LogicalClusterMigrationSpec struct {
	// logicalCluster is the name (not the path) of the logical cluster to move.
	//
	// +required
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	LogicalCluster string `json:"logicalCluster"`

	// destinationShard is the name of the Shard that is to host the logical
	// cluster afterwards.
	//
	// +required
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	DestinationShard string `json:"destinationShard"`
}

// LogicalClusterMigrationPhaseType is a step of a move.
//
// +kubebuilder:validation:Enum=Preparing;Migrating;OriginCleanup;DestinationFinalize;Completed;Failed
type LogicalClusterMigrationPhaseType string

// The phases of a migration, in the order a successful one passes them.
const (
	LogicalClusterMigrationPhasePreparing           LogicalClusterMigrationPhaseType = "Preparing"
	LogicalClusterMigrationPhaseMigrating           LogicalClusterMigrationPhaseType = "Migrating"
	LogicalClusterMigrationPhaseOriginCleanup       LogicalClusterMigrationPhaseType = "OriginCleanup"
	LogicalClusterMigrationPhaseDestinationFinalize LogicalClusterMigrationPhaseType = "DestinationFinalize"
	LogicalClusterMigrationPhaseCompleted           LogicalClusterMigrationPhaseType = "Completed"
	LogicalClusterMigrationPhaseFailed              LogicalClusterMigrationPhaseType = "Failed"
)

// LogicalClusterMigrationStatus is how far the move has come.
type LogicalClusterMigrationStatus struct {
	// phase is the step the move is in; empty until the origin picks it up.
	//
	// +optional
	// +kubebuilder:default=Preparing
	Phase LogicalClusterMigrationPhaseType `json:"phase,omitempty"`

	// originShard is the shard that hosted the logical cluster when the move
	// began, recorded by that shard first thing.
	//
	// +optional
	OriginShard string `json:"originShard,omitempty"`

	// entriesCopied counts the stored objects the destination has written.
	//
	// +optional
	EntriesCopied int64 `json:"entriesCopied,omitempty"`

	// dumpContinue is the continue token for the next page to fetch from
	// the origin shard, cleared once the copy is complete.
	//
	// +optional
	DumpContinue string `json:"dumpContinue,omitempty"`

	// conditions report each step's outcome, with a reason and message when
	// one fails.
	//
	// +optional
	Conditions conditionsv1alpha1.Conditions `json:"conditions,omitempty"`
}

// kcp's conditions of a LogicalClusterMigration.
const (
	// LCMigrationOriginPreparing: the origin is getting the cluster ready to move.
	LCMigrationOriginPreparing conditionsv1alpha1.ConditionType = "OriginPreparing"

	// LCMigrationOriginReady: the origin is ready, the destination may copy.
	LCMigrationOriginReady conditionsv1alpha1.ConditionType = "OriginReady"

	// LCMigrationStarted: the destination has begun to copy.
	LCMigrationStarted conditionsv1alpha1.ConditionType = "MigrationStarted"

	// LCMigrationDataCopied: the copy is complete and matches the origin.
	LCMigrationDataCopied conditionsv1alpha1.ConditionType = "DataCopied"

	// LCMigrationOriginCleaned: the origin holds nothing of the cluster anymore.
	LCMigrationOriginCleaned conditionsv1alpha1.ConditionType = "OriginCleaned"

	// LCMigrationCompleted: the destination serves the cluster.
	LCMigrationCompleted conditionsv1alpha1.ConditionType = "Completed"

	// LCMigrationAborted: the cluster's deletion ended the move before
	// its cut-over.
	LCMigrationAborted conditionsv1alpha1.ConditionType = "Aborted"

	// LCMigrationWritesHeld (ours, not kcp's): the origin holds the
	// cluster's writes for the cut-over, and every write it acknowledged
	// is stored; the destination takes its final copy.
	LCMigrationWritesHeld conditionsv1alpha1.ConditionType = "WritesHeld"
)

// SetConditions replaces the conditions of the migration.
func (in *LogicalClusterMigration) SetConditions(c conditionsv1alpha1.Conditions) {
	in.Status.Conditions = c
}

// GetConditions returns the conditions of the migration.
func (in *LogicalClusterMigration) GetConditions() conditionsv1alpha1.Conditions {
	return in.Status.Conditions
}

// LogicalClusterMigrationList is a list of LogicalClusterMigrations.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type LogicalClusterMigrationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []LogicalClusterMigration `json:"items"`
}
