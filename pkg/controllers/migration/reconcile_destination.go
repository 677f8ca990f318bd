package migration

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/clustermove"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	kstorage "github.com/shardplane/shardplane/pkg/storage"
)

// Reasons of the conditions the destination sets.
const (
	// ReasonCopyFailed is kcp's: the destination could not copy.
	ReasonCopyFailed = "CopyFailed"
	// ReasonVerificationFailed: the final copy differs from the origin.
	ReasonVerificationFailed = "VerificationFailed"
)

// destinationReconciler is the destination shard's part of a move: it
// copies the cluster from the origin into its own etcd, with its
// LogicalCluster marked served elsewhere so that nothing routes to the
// copy yet; a failed or cancelled move removes the copy.
type destinationReconciler struct {
	shardName string
	// dumpPage reads one page of the cluster's stored objects from the
	// origin shard, and the origin's etcd revision it read at.
	dumpPage func(ctx context.Context, origin string, cluster logicalcluster.Name, continueFrom string) ([]clustermove.Entry, string, int64, error)
	// advanceRevision moves this shard's etcd revision above a revision
	// of the origin's and returns it; movedIn tells the shard's handlers
	// from which revision on the cluster's resource versions are its own.
	advanceRevision func(ctx context.Context, above int64) (int64, error)
	movedIn         func(cluster logicalcluster.Name, at uint64)
	// sync makes this shard's etcd hold exactly entries of the cluster,
	// and returns the revision right after.
	sync func(ctx context.Context, cluster logicalcluster.Name, entries []clustermove.Entry, rewrite func(clustermove.Entry) ([]byte, error)) (int64, error)
	// readAt reads the cluster's objects from this shard's etcd at a
	// revision.
	readAt func(ctx context.Context, cluster logicalcluster.Name, revision int64) ([]clustermove.Entry, error)
	// setAnnotations sets annotations of the cluster's LogicalCluster on
	// this shard in one write; a value "" removes its key.
	setAnnotations func(ctx context.Context, cluster logicalcluster.Name, values map[string]string) error
	// deleteAll removes the cluster's objects from this shard's etcd.
	deleteAll         func(ctx context.Context, cluster logicalcluster.Name) error
	getLogicalCluster func(cluster logicalcluster.Name) *corev1alpha1.LogicalCluster
}

func (r *destinationReconciler) isDestination(m *migrationv1alpha1.LogicalClusterMigration) bool {
	return m.Spec.DestinationShard == r.shardName && m.Status.OriginShard != "" && m.Status.OriginShard != r.shardName
}

func (r *destinationReconciler) reconcile(ctx context.Context, claim string, m *migrationv1alpha1.LogicalClusterMigration) error {
	cluster := logicalcluster.Name(m.Spec.LogicalCluster)
	switch m.Status.Phase {
	case migrationv1alpha1.LogicalClusterMigrationPhaseMigrating:
		if m.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationStarted) {
			if !m.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationWritesHeld) || m.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationDataCopied) {
				return nil
			}
			return r.cutOver(ctx, claim, cluster, m)
		}
		entries, originRevision, err := r.dumpAll(ctx, m.Status.OriginShard, cluster)
		if err == nil {
			_, err = r.sync(ctx, cluster, entries, markServedElsewhere)
		}
		if err == nil {
			// Most of the way now, while writes go on: the cut-over then
			// advances only past what the origin wrote since.
			_, err = r.advanceRevision(ctx, originRevision)
		}
		if err != nil {
			conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{
				Type: migrationv1alpha1.LCMigrationDataCopied, Status: corev1.ConditionFalse, Severity: conditionsv1alpha1.ConditionSeverityError,
				Reason: ReasonCopyFailed, Message: err.Error(),
			})
			return err
		}
		m.Status.EntriesCopied = int64(len(entries))
		if c := m.Status.Conditions.Get(migrationv1alpha1.LCMigrationDataCopied); c != nil && c.Reason == ReasonCopyFailed {
			// A copy that worked on retry clears the earlier failure.
			conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{Type: migrationv1alpha1.LCMigrationDataCopied, Status: corev1.ConditionUnknown, Reason: "CutOverPending", Message: "the bulk copy is done; the cut-over waits"})
		}
		conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{Type: migrationv1alpha1.LCMigrationStarted, Status: corev1.ConditionTrue})
		return nil

	case migrationv1alpha1.LogicalClusterMigrationPhaseDestinationFinalize:
		// The origin is clean: the claim has done its work.
		if err := r.setAnnotations(ctx, cluster, map[string]string{migrationv1alpha1.MigratingAnnotationKey: ""}); err != nil {
			return fmt.Errorf("finalize logical cluster %s: %w", cluster, err)
		}
		conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{Type: migrationv1alpha1.LCMigrationCompleted, Status: corev1.ConditionTrue})
		m.Status.Phase = migrationv1alpha1.LogicalClusterMigrationPhaseCompleted
		return nil

	case migrationv1alpha1.LogicalClusterMigrationPhaseFailed:
		return r.release(ctx, claim, cluster)
	}
	return nil
}

// cutOver takes the final copy while the origin holds the writes,
// verifies it (object count and content hash per resource), and lets the
// copy serve: a mismatch fails the move and the origin serves on.
func (r *destinationReconciler) cutOver(ctx context.Context, claim string, cluster logicalcluster.Name, m *migrationv1alpha1.LogicalClusterMigration) error {
	// A copy that serves was verified before it was let serve, by this
	// shard before it restarted: copying again could undo what was
	// written to it since.
	if lc := r.getLogicalCluster(cluster); lc != nil && lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] == claim &&
		lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] == "" && lc.Annotations[migrationv1alpha1.MovedInAtAnnotationKey] != "" {
		conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{Type: migrationv1alpha1.LCMigrationDataCopied, Status: corev1.ConditionTrue})
		m.Status.Phase = migrationv1alpha1.LogicalClusterMigrationPhaseOriginCleanup
		return nil
	}
	entries, originRevision, err := r.dumpAll(ctx, m.Status.OriginShard, cluster)
	if err != nil {
		return err
	}
	// The origin issued no resource version of the cluster above the final
	// dump's (it holds reads too): from above it on, the versions are ours,
	// and a watch resuming from below is told to relist. Advanced while the
	// copy is written and verified.
	advanced := make(chan error, 1)
	go func() {
		_, err := r.advanceRevision(ctx, originRevision)
		advanced <- err
	}()
	if err := r.writeAndVerify(ctx, cluster, entries, m); err != nil {
		<-advanced
		return err
	}
	if err := <-advanced; err != nil {
		return err
	}
	if m.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhaseFailed {
		return nil
	}
	// Stored with the unmarking: a restarted destination still tells
	// the origin's resource versions apart.
	r.movedIn(cluster, uint64(originRevision)+1)
	if err := r.setAnnotations(ctx, cluster, map[string]string{
		migrationv1alpha1.ServedElsewhereAnnotationKey: "",
		migrationv1alpha1.MovedInAtAnnotationKey:       strconv.FormatInt(originRevision+1, 10),
	}); err != nil {
		return fmt.Errorf("let the copy of logical cluster %s serve: %w", cluster, err)
	}
	conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{Type: migrationv1alpha1.LCMigrationDataCopied, Status: corev1.ConditionTrue})
	m.Status.Phase = migrationv1alpha1.LogicalClusterMigrationPhaseOriginCleanup
	return nil
}

// writeAndVerify writes the final copy and compares it with the origin's
// entries; a mismatch fails m.
func (r *destinationReconciler) writeAndVerify(ctx context.Context, cluster logicalcluster.Name, entries []clustermove.Entry, m *migrationv1alpha1.LogicalClusterMigration) error {
	revision, err := r.sync(ctx, cluster, entries, markServedElsewhere)
	if err != nil {
		return err
	}
	// Compared as written: the copied LogicalCluster is marked.
	want := make([]clustermove.Entry, 0, len(entries))
	for _, e := range entries {
		v, err := markServedElsewhere(e)
		if err != nil {
			return err
		}
		want = append(want, clustermove.Entry{Key: e.Key, Value: v})
	}
	// Read at the sync's revision: this shard's controllers may write to
	// the copy right after, which is theirs to do.
	have, err := r.readAt(ctx, cluster, revision)
	if err != nil {
		return err
	}
	if err := verify(want, have); err != nil {
		fail(m, migrationv1alpha1.LCMigrationDataCopied, ReasonVerificationFailed, "%v", err)
		return nil
	}
	m.Status.EntriesCopied = int64(len(entries))
	return nil
}

// verify compares the digests of the origin's and the destination's
// entries.
func verify(origin, destination []clustermove.Entry) error {
	want, err := clustermove.Digest(origin)
	if err != nil {
		return err
	}
	got, err := clustermove.Digest(destination)
	if err != nil {
		return err
	}
	if err := clustermove.Verify(want, got); err != nil {
		return fmt.Errorf("%w (first differing keys: %s)", err, strings.Join(clustermove.DifferingKeys(origin, destination, 3), ", "))
	}
	return nil
}

// dumpAll reads every page of the cluster from the origin, and the
// origin's revision it read at.
func (r *destinationReconciler) dumpAll(ctx context.Context, origin string, cluster logicalcluster.Name) ([]clustermove.Entry, int64, error) {
	var all []clustermove.Entry
	next := ""
	for {
		entries, cont, revision, err := r.dumpPage(ctx, origin, cluster, next)
		if err != nil {
			return nil, 0, fmt.Errorf("dump logical cluster %s on shard %s: %w", cluster, origin, err)
		}
		all = append(all, entries...)
		if cont == "" {
			return all, revision, nil
		}
		next = cont
	}
}

// release removes this shard's copy of a cluster for a failed or
// cancelled move: only a copy that is served elsewhere and claimed by it.
func (r *destinationReconciler) release(ctx context.Context, claim string, cluster logicalcluster.Name) error {
	lc := r.getLogicalCluster(cluster)
	if lc == nil || lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] != claim ||
		lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] == "" {
		return nil
	}
	if err := r.deleteAll(ctx, cluster); err != nil {
		return fmt.Errorf("remove the copy of logical cluster %s: %w", cluster, err)
	}
	return nil
}

// markServedElsewhere marks the copied LogicalCluster, which is stored as
// JSON, so that nothing routes to the destination before the cut-over,
// and drops the origin's marks of its own moves (its hold, an earlier
// move-in), which are not the copy's.
func markServedElsewhere(e clustermove.Entry) ([]byte, error) {
	k, ok := kstorage.SplitClusterKey(e.Key)
	if !ok || k.Resource != kstorage.ResourcePrefix(corev1alpha1.Resource("logicalclusters")) || k.Object != corev1alpha1.LogicalClusterName {
		return e.Value, nil
	}
	var obj map[string]any
	if err := json.Unmarshal(e.Value, &obj); err != nil {
		return nil, fmt.Errorf("the LogicalCluster of %s is not stored as JSON: %w", k.Cluster, err)
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	annotations, _ := meta["annotations"].(map[string]any)
	if annotations == nil {
		annotations = map[string]any{}
		meta["annotations"] = annotations
	}
	annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] = "true"
	delete(annotations, migrationv1alpha1.WritesHeldAnnotationKey)
	delete(annotations, migrationv1alpha1.MovedInAtAnnotationKey)
	return json.Marshal(obj)
}
