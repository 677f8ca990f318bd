package workspace

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
)

// noShardsMessage is kcp's WorkspaceScheduled message when no shard takes
// the workspace; ours goes on with why each candidate does not.
const noShardsMessage = "No available shards to schedule the workspace"

// shardFit tells why a shard takes no new workspace ("" when it takes
// one) and whether it is under its soft limit. usedOn returns the number
// of logical clusters it holds, as far as this shard knows; it is called
// only for a shard with limits.
func shardFit(s *corev1alpha1.Shard, usedOn func(*corev1alpha1.Shard) int64) (reason string, underSoft bool) {
	if _, cordoned := s.Annotations[corev1alpha1.ShardUnschedulableAnnotationKey]; cordoned {
		return fmt.Sprintf("cordoned (%s)", corev1alpha1.ShardUnschedulableAnnotationKey), false
	}
	if ready := s.Status.Conditions.Get(corev1alpha1.ShardReady); ready != nil && ready.Status == corev1.ConditionFalse {
		if ready.Message != "" {
			return "not ready: " + ready.Message, false
		}
		return "not ready", false
	}
	soft, hard := s.WorkspaceLimits()
	if soft == 0 && hard == 0 {
		return "", true
	}
	used := usedOn(s)
	if hard > 0 && used >= hard {
		return fmt.Sprintf("at its hard limit of %d workspaces", hard), false
	}
	return "", soft == 0 || used < soft
}

// rankShards splits the candidates into those that take a new workspace,
// preferring the ones under their soft limit (kcp's tiers): preferred, or
// when there are none, the ones at or over it. refused names why each
// other candidate takes none. usedOn is what a shard holds.
func rankShards(candidates []*corev1alpha1.Shard, usedOn func(*corev1alpha1.Shard) int64) (fitting []*corev1alpha1.Shard, refused map[string]string) {
	var preferred, overSoft []*corev1alpha1.Shard
	refused = map[string]string{}
	for _, s := range candidates {
		reason, underSoft := shardFit(s, usedOn)
		switch {
		case reason != "":
			refused[s.Name] = reason
		case underSoft:
			preferred = append(preferred, s)
		default:
			overSoft = append(overSoft, s)
		}
	}
	if len(preferred) > 0 {
		return preferred, refused
	}
	return overSoft, refused
}

// ShardsTakingWorkspaces returns the shards among candidates that take a
// new workspace by the scheduler's rules (not cordoned, not unready, under
// their hard limit; those under their soft limit if there are any), by
// the counts they report plus planned, and why each other one does not:
// moves of existing workspaces (a drain) place them as new ones are placed.
func ShardsTakingWorkspaces(candidates []*corev1alpha1.Shard, planned map[string]int64) (fitting []*corev1alpha1.Shard, refused map[string]string) {
	return rankShards(candidates, func(s *corev1alpha1.Shard) int64 { return s.UsedWorkspaces() + planned[s.Name] })
}

// UnschedulableMessage says why no shard takes a workspace, naming each
// refusing shard's reason.
func UnschedulableMessage(refused map[string]string) string { return unschedulableMessage(refused) }

// unschedulableMessage is the WorkspaceScheduled message of a workspace no
// shard takes: kcp's, then each refusing shard's reason, by name.
func unschedulableMessage(refused map[string]string) string {
	names := make([]string, 0, len(refused))
	for name := range refused {
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("shard %q is %s", name, refused[name]))
	}
	if len(parts) == 0 {
		return noShardsMessage
	}
	return noShardsMessage + ": " + strings.Join(parts, "; ")
}

// noShardError is a workspace that no shard takes now; its message is the
// WorkspaceScheduled condition's.
type noShardError struct{ message string }

func (e noShardError) Error() string { return e.message }
