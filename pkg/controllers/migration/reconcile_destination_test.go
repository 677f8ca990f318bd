package migration

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/clustermove"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// fakeDestination is shard "shard-1" copying from an origin whose dump
// has pages; written records what sync wrote.
func fakeDestination(pages [][]clustermove.Entry, dumpErr error) (*destinationReconciler, *[]clustermove.Entry, *bool) {
	var written []clustermove.Entry
	deleted := false
	return &destinationReconciler{
		shardName: "shard-1",
		dumpPage: func(_ context.Context, origin string, cluster logicalcluster.Name, cont string) ([]clustermove.Entry, string, error) {
			if dumpErr != nil {
				return nil, "", dumpErr
			}
			i := 0
			if cont != "" {
				i = int(cont[0] - '0')
			}
			next := ""
			if i+1 < len(pages) {
				next = string(rune('0' + i + 1))
			}
			return pages[i], next, nil
		},
		sync: func(_ context.Context, _ logicalcluster.Name, entries []clustermove.Entry, rewrite func(clustermove.Entry) ([]byte, error)) error {
			for _, e := range entries {
				v, err := rewrite(e)
				if err != nil {
					return err
				}
				written = append(written, clustermove.Entry{Key: e.Key, Value: v})
			}
			return nil
		},
		deleteAll: func(context.Context, logicalcluster.Name) error { deleted = true; return nil },
		getLogicalCluster: func(logicalcluster.Name) *corev1alpha1.LogicalCluster {
			lc := readyLC()
			lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] = claim
			lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] = "true"
			return lc
		},
	}, &written, &deleted
}

func migrating() *migrationv1alpha1.LogicalClusterMigration {
	m := moveTo("shard-1")
	m.Status.Phase, m.Status.OriginShard = migrationv1alpha1.LogicalClusterMigrationPhaseMigrating, "root"
	return m
}

func TestDestinationCopiesEveryPageWithTheLogicalClusterMarked(t *testing.T) {
	lcKey := "core.kcp.io/logicalclusters/movingcluster/cluster"
	pages := [][]clustermove.Entry{
		{{Key: "core/configmaps/movingcluster/default/a", Value: []byte("a")}},
		{{Key: lcKey, Value: []byte(`{"kind":"LogicalCluster","metadata":{"name":"cluster"}}`)}},
	}
	r, written, _ := fakeDestination(pages, nil)
	m := migrating()
	if !r.isDestination(m) {
		t.Fatal("shard-1 is not the destination")
	}
	if err := r.reconcile(context.Background(), claim, m); err != nil {
		t.Fatal(err)
	}
	if m.Status.EntriesCopied != 2 || !m.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationStarted) {
		t.Fatalf("status %+v, want 2 entries copied and MigrationStarted", m.Status)
	}
	if len(*written) != 2 || string((*written)[0].Value) != "a" {
		t.Fatalf("written %v", *written)
	}
	var lc corev1alpha1.LogicalCluster
	if err := json.Unmarshal((*written)[1].Value, &lc); err != nil || lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] == "" {
		t.Fatalf("the copied LogicalCluster %s is not marked served elsewhere (%v)", (*written)[1].Value, err)
	}
	// Copied once: the next look waits for the cut-over.
	if err := r.reconcile(context.Background(), claim, m); err != nil || len(*written) != 2 {
		t.Fatalf("copied again: %v, %d written", err, len(*written))
	}
}

func TestDestinationReportsACopyFailureAndCleansUpWhenTheMoveFails(t *testing.T) {
	r, _, deleted := fakeDestination(nil, errors.New("origin unreachable"))
	m := migrating()
	if err := r.reconcile(context.Background(), claim, m); err == nil {
		t.Fatal("a failed dump was not retried")
	}
	cond := m.Status.Conditions.Get(migrationv1alpha1.LCMigrationDataCopied)
	if cond == nil || cond.Reason != ReasonCopyFailed || cond.Message == "" {
		t.Fatalf("conditions %+v, want DataCopied False with reason %s", m.Status.Conditions, ReasonCopyFailed)
	}
	m.Status.Phase = migrationv1alpha1.LogicalClusterMigrationPhaseFailed
	if err := r.reconcile(context.Background(), claim, m); err != nil || !*deleted {
		t.Fatalf("a failed move left the copy: %v", err)
	}
	// The origin's own, serving, cluster is never removed.
	*deleted = false
	r.getLogicalCluster = func(logicalcluster.Name) *corev1alpha1.LogicalCluster {
		lc := readyLC()
		lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] = claim
		return lc
	}
	if err := r.release(context.Background(), claim, "movingcluster"); err != nil || *deleted {
		t.Fatalf("a serving cluster was removed: %v", err)
	}
}
