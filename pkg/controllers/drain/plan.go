package drain

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/workspace"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// ShardLabel on a LogicalClusterMigration names the shard whose drain
// created it; AttemptLabel counts the drain's tries of its cluster.
const (
	ShardLabel   = "drain.shardplane.io/shard"
	AttemptLabel = "drain.shardplane.io/attempt"
)

// maxAttempts bounds the tries of one cluster's move: a failed move (a
// copy that changed under verification) is tried again, a move that keeps
// failing is left for the operator.
const maxAttempts = 3

// move is a migration a drain creates: cluster to destination, its
// attempt-th try.
type move struct {
	cluster     logicalcluster.Name
	destination string
	attempt     int
}

// attemptOf is the try a drain's migration is, 1 when unlabelled.
func attemptOf(m *migrationv1alpha1.LogicalClusterMigration) int {
	if n, err := strconv.Atoi(m.Labels[AttemptLabel]); err == nil && n > 0 {
		return n
	}
	return 1
}

// resident is a logical cluster on the drained shard.
type resident struct {
	cluster  logicalcluster.Name
	deleting bool
	// leaving: moved away, its clean-up under way.
	leaving bool
}

// plan decides the next moves of a drain of shard: for each resident
// cluster without a migration of this drain, one to the shard the
// scheduler's rules choose (workspace.ShardsTakingWorkspaces, least
// loaded first, moves planned now counted), while fewer than maxMoves of
// the drain's migrations run. It returns the moves and the Drained
// condition that reports the drain.
func plan(shard string, residents []resident, migrations []*migrationv1alpha1.LogicalClusterMigration, shards []*corev1alpha1.Shard, maxMoves int) ([]move, conditionsv1alpha1.Condition) {
	// The latest try of each cluster decides.
	byCluster := map[logicalcluster.Name]*migrationv1alpha1.LogicalClusterMigration{}
	for _, m := range migrations {
		cluster := logicalcluster.Name(m.Spec.LogicalCluster)
		if prev := byCluster[cluster]; prev == nil || attemptOf(m) > attemptOf(prev) {
			byCluster[cluster] = m
		}
	}
	sort.Slice(residents, func(i, j int) bool { return residents[i].cluster < residents[j].cluster })

	running, deleting := 0, 0
	// Moves under way count on their destinations: its reported count
	// has them only once a heartbeat after the copy, and a hard limit must
	// hold for the moves planned meanwhile.
	planned := map[string]int64{}
	var failed []string
	type next struct {
		cluster logicalcluster.Name
		attempt int
	}
	var waiting []next
	for _, r := range residents {
		m := byCluster[r.cluster]
		switch {
		case r.leaving:
			running++
		case r.deleting && (m == nil || m.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhaseFailed):
			// A cluster being deleted cannot move; it leaves by itself.
			deleting++
		case m == nil:
			waiting = append(waiting, next{r.cluster, 1})
		case m.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhaseFailed && attemptOf(m) < maxAttempts:
			waiting = append(waiting, next{r.cluster, attemptOf(m) + 1})
		case m.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhaseFailed:
			failed = append(failed, fmt.Sprintf("%s (%s)", r.cluster, failureOf(m)))
		default:
			// Still running, or Completed while this shard's copy is on
			// its way out.
			running++
			if m.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseCompleted {
				planned[m.Spec.DestinationShard]++
			}
		}
	}

	var others []*corev1alpha1.Shard
	for _, s := range shards {
		if s.Name != shard {
			others = append(others, s)
		}
	}
	var moves []move
	blocked := ""
	for _, w := range waiting {
		if running+len(moves) >= maxMoves {
			break
		}
		fitting, refused := workspace.ShardsTakingWorkspaces(others, planned)
		if len(fitting) == 0 {
			blocked = workspace.UnschedulableMessage(refused)
			break
		}
		dest := leastLoaded(fitting, planned)
		planned[dest]++
		moves = append(moves, move{cluster: w.cluster, destination: dest, attempt: w.attempt})
	}

	left := len(residents)
	if left == 0 {
		return moves, conditionsv1alpha1.Condition{Type: corev1alpha1.ShardDrained, Status: corev1.ConditionTrue}
	}
	msg := fmt.Sprintf("%d logical clusters left on the shard, %d moving", left, running+len(moves))
	if deleting > 0 {
		msg += fmt.Sprintf(", %d being deleted", deleting)
	}
	reason := corev1alpha1.ShardReasonDraining
	if blocked != "" {
		msg += "; " + blocked
		if running+len(moves) == 0 {
			reason = corev1alpha1.ShardReasonDrainBlocked
		}
	}
	if len(failed) > 0 {
		msg += fmt.Sprintf("; moves failed %d times (delete their migrations to try again): %s", maxAttempts, strings.Join(failed, ", "))
		if running+len(moves) == 0 && len(waiting) == 0 {
			reason = corev1alpha1.ShardReasonDrainBlocked
		}
	}
	return moves, conditionsv1alpha1.Condition{
		Type: corev1alpha1.ShardDrained, Status: corev1.ConditionFalse, Severity: conditionsv1alpha1.ConditionSeverityInfo,
		Reason: reason, Message: msg,
	}
}

// leastLoaded is the fitting shard with the fewest logical clusters,
// counting the moves planned onto it; ties go by name.
func leastLoaded(fitting []*corev1alpha1.Shard, planned map[string]int64) string {
	best := fitting[0]
	for _, s := range fitting[1:] {
		n, b := s.UsedWorkspaces()+planned[s.Name], best.UsedWorkspaces()+planned[best.Name]
		if n < b || (n == b && s.Name < best.Name) {
			best = s
		}
	}
	return best.Name
}

// failureOf is the message of the condition that failed a migration.
func failureOf(m *migrationv1alpha1.LogicalClusterMigration) string {
	for _, c := range m.Status.Conditions {
		if c.Status == corev1.ConditionFalse && c.Message != "" {
			return c.Message
		}
	}
	return "failed"
}

// migrationName is the name of the drain's attempt-th migration of
// cluster: one per shard, cluster and try, so that a restarted drain finds
// what it created.
func migrationName(shard string, cluster logicalcluster.Name, attempt int) string {
	name := "drain-" + shard + "-" + string(cluster)
	if attempt > 1 {
		name += "-" + strconv.Itoa(attempt)
	}
	return name
}
