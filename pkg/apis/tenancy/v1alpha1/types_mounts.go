package v1alpha1

import conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"

// MountPhaseType is the phase a mount object reports in status.phase.
type MountPhaseType string

// The phases of a mount object, as kcp names them; only Ready serves.
const (
	MountPhaseInitializing MountPhaseType = "Initializing"
	MountPhaseConnecting   MountPhaseType = "Connecting"
	MountPhaseReady        MountPhaseType = "Ready"
	MountPhaseUnknown      MountPhaseType = "Unknown"
)

const (
	// MountConditionReady says whether the mount object of a mounted
	// workspace reports Ready.
	MountConditionReady conditionsv1alpha1.ConditionType = "WorkspaceMountReady"

	// MountObjectNotFoundReason: the object spec.mount.ref names does not
	// exist.
	MountObjectNotFoundReason = "MountObjectNotFound"
	// MountObjectNotReadyReason: the mount object reports no phase, or one
	// other than Ready.
	MountObjectNotReadyReason = "MountObjectNotReady"

	// IsMountAnnotationKey marks an object that implements a mount, as
	// kcp's documentation asks of mount objects; nothing requires it.
	IsMountAnnotationKey = "experimental.tenancy.kcp.io/is-mount"
)

// IsMounted tells whether the workspace is served by a mount object
// instead of a logical cluster.
func (s *WorkspaceSpec) IsMounted() bool { return s.Mount != nil }
