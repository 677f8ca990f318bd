package logicalclustermigration

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
)

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := migrationv1alpha1.Install(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

func newMigration() *migrationv1alpha1.LogicalClusterMigration {
	return &migrationv1alpha1.LogicalClusterMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "move", ResourceVersion: "1"},
		Spec:       migrationv1alpha1.LogicalClusterMigrationSpec{LogicalCluster: "2x9kq7z1", DestinationShard: "shard-1"},
	}
}

func TestCreateAndUpdateLeaveTheStatusToTheSubresource(t *testing.T) {
	strategy := NewStrategy(newScheme(t))
	m := newMigration()
	m.Status.Phase = migrationv1alpha1.LogicalClusterMigrationPhaseCompleted
	strategy.PrepareForCreate(context.Background(), m)
	if m.Status.Phase != "" {
		t.Fatalf("a created migration has phase %q, want none", m.Status.Phase)
	}

	old := newMigration()
	old.Status.Phase = migrationv1alpha1.LogicalClusterMigrationPhaseMigrating
	next := newMigration()
	next.Status.Phase = migrationv1alpha1.LogicalClusterMigrationPhaseCompleted
	strategy.PrepareForUpdate(context.Background(), next, old)
	if next.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseMigrating {
		t.Fatalf("an update of the main resource changed the phase to %q", next.Status.Phase)
	}

	statusStrategy := NewStatusStrategy(strategy)
	next = newMigration()
	next.Spec.DestinationShard = "elsewhere"
	next.Status.Phase = migrationv1alpha1.LogicalClusterMigrationPhaseOriginCleanup
	statusStrategy.PrepareForUpdate(context.Background(), next, old)
	if next.Spec.DestinationShard != "shard-1" || next.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseOriginCleanup {
		t.Fatalf("a status update gave spec %+v and phase %q", next.Spec, next.Status.Phase)
	}
}

func TestTableColumnsAreKcps(t *testing.T) {
	var names []string
	for _, c := range TableColumns {
		names = append(names, c.Name)
	}
	want := []string{"Logical Cluster", "Phase", "Destination", "Entries Copied"}
	if len(names) != len(want) {
		t.Fatalf("columns %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("columns %v, want %v", names, want)
		}
	}
}
