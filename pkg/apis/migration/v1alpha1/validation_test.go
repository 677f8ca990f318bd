package v1alpha1

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
)

func migration(lc, shard string) *LogicalClusterMigration {
	return &LogicalClusterMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "move", ResourceVersion: "1"},
		Spec:       LogicalClusterMigrationSpec{LogicalCluster: lc, DestinationShard: shard},
	}
}

func TestValidateLogicalClusterMigrationCreate(t *testing.T) {
	for name, tc := range map[string]struct {
		m    *LogicalClusterMigration
		want string // substring of the error; empty for none
	}{
		"valid":                  {m: migration("2x9kq7z1", "shard-1")},
		"no logical cluster":     {m: migration("", "shard-1"), want: "spec.logicalCluster: Required value"},
		"a path, not a name":     {m: migration("root:org", "shard-1"), want: "spec.logicalCluster: Invalid value"},
		"root cannot move":       {m: migration("root", "shard-1"), want: "the root and system logical clusters cannot move"},
		"a system cluster":       {m: migration("system:admin", "shard-1"), want: "the root and system logical clusters cannot move"},
		"no destination":         {m: migration("2x9kq7z1", ""), want: "spec.destinationShard: Required value"},
		"destination not a name": {m: migration("2x9kq7z1", "Shard_1"), want: "spec.destinationShard: Invalid value"},
		"unknown phase": {m: func() *LogicalClusterMigration {
			m := migration("2x9kq7z1", "shard-1")
			m.Status.Phase = "Aborting"
			return m
		}(), want: "status.phase: Unsupported value"},
		"negative count": {m: func() *LogicalClusterMigration {
			m := migration("2x9kq7z1", "shard-1")
			m.Status.EntriesCopied = -1
			return m
		}(), want: "status.entriesCopied: Invalid value"},
		"a condition without status": {m: func() *LogicalClusterMigration {
			m := migration("2x9kq7z1", "shard-1")
			m.Status.Conditions = conditionsv1alpha1.Conditions{{Type: LCMigrationOriginReady}}
			return m
		}(), want: "status.conditions[0].status"},
	} {
		t.Run(name, func(t *testing.T) {
			errs := ValidateLogicalClusterMigrationCreate(tc.m)
			if tc.want == "" {
				if len(errs) != 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
				t.Fatalf("errors %v, want one with %q", errs, tc.want)
			}
		})
	}
}

func TestValidateLogicalClusterMigrationUpdateKeepsTheSpec(t *testing.T) {
	old := migration("2x9kq7z1", "shard-1")
	changed := migration("2x9kq7z1", "shard-2")
	if errs := ValidateLogicalClusterMigrationUpdate(changed, old); !strings.Contains(errs.ToAggregate().Error(), "the spec of a migration cannot change") {
		t.Fatalf("errors %v, want the spec to be immutable", errs)
	}
	labelled := migration("2x9kq7z1", "shard-1")
	labelled.Labels = map[string]string{"team": "a"}
	if errs := ValidateLogicalClusterMigrationUpdate(labelled, old); len(errs) != 0 {
		t.Fatalf("unexpected errors: %v", errs)
	}
}

func TestValidateLogicalClusterMigrationStatusUpdate(t *testing.T) {
	old := migration("2x9kq7z1", "shard-1")
	next := migration("2x9kq7z1", "shard-1")
	next.Status = LogicalClusterMigrationStatus{
		Phase: LogicalClusterMigrationPhaseMigrating, OriginShard: "root", EntriesCopied: 12,
		Conditions: conditionsv1alpha1.Conditions{{Type: LCMigrationOriginReady, Status: corev1.ConditionTrue}},
	}
	if errs := ValidateLogicalClusterMigrationStatusUpdate(next, old); len(errs) != 0 {
		t.Fatalf("unexpected errors: %v", errs)
	}
}
