package migration

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
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
	annotations := map[string]string{}
	return &destinationReconciler{
		shardName:       "shard-1",
		advanceRevision: func(_ context.Context, above int64) (int64, error) { return above + 1, nil },
		movedIn:         func(logicalcluster.Name, uint64) {},
		dumpPage: func(_ context.Context, origin string, cluster logicalcluster.Name, cont string) ([]clustermove.Entry, string, int64, error) {
			if dumpErr != nil {
				return nil, "", 0, dumpErr
			}
			i := 0
			if cont != "" {
				i = int(cont[0] - '0')
			}
			next := ""
			if i+1 < len(pages) {
				next = string(rune('0' + i + 1))
			}
			return pages[i], next, 42, nil
		},
		sync: func(_ context.Context, _ logicalcluster.Name, entries []clustermove.Entry, rewrite func(clustermove.Entry) ([]byte, error)) (int64, error) {
			written = written[:0]
			for _, e := range entries {
				v, err := rewrite(e)
				if err != nil {
					return 0, err
				}
				written = append(written, clustermove.Entry{Key: e.Key, Value: v})
			}
			return 7, nil
		},
		readAt: func(_ context.Context, _ logicalcluster.Name, revision int64) ([]clustermove.Entry, error) {
			if revision != 7 {
				return nil, errors.New("read at another revision than the sync's")
			}
			return written, nil
		},
		setAnnotations: func(_ context.Context, _ logicalcluster.Name, values map[string]string) error {
			for k, v := range values {
				annotations[k] = v
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
	var advancedPast int64
	r.advanceRevision = func(_ context.Context, above int64) (int64, error) { advancedPast = above; return above + 1, nil }
	m := migrating()
	if !r.isDestination(m) {
		t.Fatal("shard-1 is not the destination")
	}
	if err := r.reconcile(context.Background(), claim, m); err != nil {
		t.Fatal(err)
	}
	// Before the hold, so that the cut-over advances only past what was
	// written since.
	if advancedPast != 42 {
		t.Errorf("the bulk copy advanced the revision past %d, want the dump's 42", advancedPast)
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
	calls := 0
	dump := r.dumpPage
	r.dumpPage = func(ctx context.Context, o string, c logicalcluster.Name, cont string) ([]clustermove.Entry, string, int64, error) {
		calls++
		return dump(ctx, o, c, cont)
	}
	if err := r.reconcile(context.Background(), claim, m); err != nil || calls != 0 {
		t.Fatalf("copied again before the writes were held: %v, %d dumps", err, calls)
	}
}

func TestCutOverVerifiesTheFinalCopyAndLetsItServe(t *testing.T) {
	pages := [][]clustermove.Entry{{
		{Key: "core/configmaps/movingcluster/default/a", Value: []byte("a")},
		{Key: "core.kcp.io/logicalclusters/movingcluster/cluster", Value: []byte(`{"metadata":{"name":"cluster"}}`)},
	}}
	r, _, _ := fakeDestination(pages, nil)
	var movedInAt uint64
	r.movedIn = func(_ logicalcluster.Name, at uint64) { movedInAt = at }
	var set []string
	r.setAnnotations = func(_ context.Context, _ logicalcluster.Name, values map[string]string) error {
		var write []string
		for k, v := range values {
			write = append(write, k+"="+v)
		}
		slices.Sort(write)
		set = append(set, strings.Join(write, ","))
		return nil
	}
	m := migrating()
	conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{Type: migrationv1alpha1.LCMigrationStarted, Status: corev1.ConditionTrue})
	conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{Type: migrationv1alpha1.LCMigrationWritesHeld, Status: corev1.ConditionTrue})
	if err := r.reconcile(context.Background(), claim, m); err != nil {
		t.Fatal(err)
	}
	if m.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseOriginCleanup || !m.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationDataCopied) {
		t.Fatalf("status %+v, want OriginCleanup with DataCopied", m.Status)
	}
	// Unmarked with where its own resource versions start, in one write.
	if want := migrationv1alpha1.MovedInAtAnnotationKey + "=43," + migrationv1alpha1.ServedElsewhereAnnotationKey + "="; len(set) != 1 || set[0] != want {
		t.Fatalf("annotations set %v, want [%s]", set, want)
	}
	if movedInAt != 43 {
		t.Fatalf("watches are told to relist below %d, want above the origin's revision 42", movedInAt)
	}

	m.Status.Phase = migrationv1alpha1.LogicalClusterMigrationPhaseDestinationFinalize
	if err := r.reconcile(context.Background(), claim, m); err != nil {
		t.Fatal(err)
	}
	if m.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseCompleted || !m.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationCompleted) ||
		set[len(set)-1] != migrationv1alpha1.MigratingAnnotationKey+"=" {
		t.Fatalf("status %+v, annotations set %v; want Completed without the claim", m.Status, set)
	}
}

func TestCutOverFailsWhenTheCopyDiffers(t *testing.T) {
	pages := [][]clustermove.Entry{{{Key: "core/configmaps/movingcluster/default/a", Value: []byte("a")}}}
	r, _, _ := fakeDestination(pages, nil)
	// Something changes the copy between the write and the check.
	r.readAt = func(context.Context, logicalcluster.Name, int64) ([]clustermove.Entry, error) {
		return []clustermove.Entry{{Key: "core/configmaps/movingcluster/default/a", Value: []byte("tampered")}}, nil
	}
	unmarked := false
	r.setAnnotations = func(context.Context, logicalcluster.Name, map[string]string) error { unmarked = true; return nil }
	m := migrating()
	conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{Type: migrationv1alpha1.LCMigrationStarted, Status: corev1.ConditionTrue})
	conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{Type: migrationv1alpha1.LCMigrationWritesHeld, Status: corev1.ConditionTrue})
	if err := r.reconcile(context.Background(), claim, m); err != nil {
		t.Fatal(err)
	}
	cond := m.Status.Conditions.Get(migrationv1alpha1.LCMigrationDataCopied)
	if m.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseFailed || cond == nil || cond.Reason != ReasonVerificationFailed ||
		!strings.Contains(cond.Message, "core/configmaps: 1 objects on both, but their contents differ") {
		t.Fatalf("status %+v, want Failed with VerificationFailed naming configmaps", m.Status)
	}
	if unmarked {
		t.Fatal("a copy that failed verification was let serve")
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

// A destination that restarted after it let its verified copy serve, but
// before it reported so, does not copy over it again.
func TestCutOverResumesWithoutCopyingOverAServingCopy(t *testing.T) {
	r, _, _ := fakeDestination(nil, errors.New("the origin holds the writes: no need to dump"))
	r.getLogicalCluster = func(logicalcluster.Name) *corev1alpha1.LogicalCluster {
		lc := readyLC()
		lc.Annotations[migrationv1alpha1.MigratingAnnotationKey] = claim
		lc.Annotations[migrationv1alpha1.MovedInAtAnnotationKey] = "43"
		return lc
	}
	r.sync = func(context.Context, logicalcluster.Name, []clustermove.Entry, func(clustermove.Entry) ([]byte, error)) (int64, error) {
		return 0, errors.New("copied over a serving copy")
	}
	m := migrating()
	conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{Type: migrationv1alpha1.LCMigrationStarted, Status: corev1.ConditionTrue})
	conditionsv1alpha1.Set(m, conditionsv1alpha1.Condition{Type: migrationv1alpha1.LCMigrationWritesHeld, Status: corev1.ConditionTrue})
	if err := r.reconcile(context.Background(), claim, m); err != nil {
		t.Fatal(err)
	}
	if m.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseOriginCleanup || !m.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationDataCopied) {
		t.Fatalf("status %+v, want OriginCleanup with DataCopied", m.Status)
	}
}

func TestTheCopyLeavesTheOriginsOwnMarksBehind(t *testing.T) {
	lc := `{"metadata":{"name":"cluster","annotations":{"` + migrationv1alpha1.WritesHeldAnnotationKey + `":"a:b","` + migrationv1alpha1.MovedInAtAnnotationKey + `":"7","kcp.io/path":"root:org"}}}`
	out, err := markServedElsewhere(clustermove.Entry{Key: "core.kcp.io/logicalclusters/movingcluster/cluster", Value: []byte(lc)})
	if err != nil {
		t.Fatal(err)
	}
	var got corev1alpha1.LogicalCluster
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	a := got.Annotations
	if a[migrationv1alpha1.WritesHeldAnnotationKey] != "" || a[migrationv1alpha1.MovedInAtAnnotationKey] != "" || a["kcp.io/path"] != "root:org" || a[migrationv1alpha1.ServedElsewhereAnnotationKey] == "" {
		t.Fatalf("annotations of the copy %v", a)
	}
}
