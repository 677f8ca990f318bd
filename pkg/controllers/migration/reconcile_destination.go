package migration

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/clustermove"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	kstorage "github.com/shardplane/shardplane/pkg/storage"
)

// ReasonCopyFailed is kcp's: the destination could not copy.
const ReasonCopyFailed = "CopyFailed"

// destinationReconciler is the destination shard's part of a move: it
// copies the cluster from the origin into its own etcd, with its
// LogicalCluster marked served elsewhere so that nothing routes to the
// copy yet; a failed or cancelled move removes the copy.
type destinationReconciler struct {
	shardName string
	// dumpPage reads one page of the cluster's stored objects from the
	// origin shard.
	dumpPage func(ctx context.Context, origin string, cluster logicalcluster.Name, continueFrom string) ([]clustermove.Entry, string, error)
	// sync makes this shard's etcd hold exactly entries of the cluster.
	sync func(ctx context.Context, cluster logicalcluster.Name, entries []clustermove.Entry, rewrite func(clustermove.Entry) ([]byte, error)) error
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
			// The bulk copy is done; the cut-over is not built yet.
			return nil
		}
		entries, err := r.dumpAll(ctx, m.Status.OriginShard, cluster)
		if err == nil {
			err = r.sync(ctx, cluster, entries, markServedElsewhere)
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

	case migrationv1alpha1.LogicalClusterMigrationPhaseFailed:
		return r.release(ctx, claim, cluster)
	}
	return nil
}

// dumpAll reads every page of the cluster from the origin.
func (r *destinationReconciler) dumpAll(ctx context.Context, origin string, cluster logicalcluster.Name) ([]clustermove.Entry, error) {
	var all []clustermove.Entry
	next := ""
	for {
		entries, cont, err := r.dumpPage(ctx, origin, cluster, next)
		if err != nil {
			return nil, fmt.Errorf("dump logical cluster %s on shard %s: %w", cluster, origin, err)
		}
		all = append(all, entries...)
		if cont == "" {
			return all, nil
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
// JSON, so that nothing routes to the destination before the cut-over.
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
	return json.Marshal(obj)
}
