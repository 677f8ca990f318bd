package migration

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
)

func TestChildMigrationsMoveTheSubtreeAlong(t *testing.T) {
	now := metav1.Now()
	child := func(name, cluster, shard string) *tenancyv1alpha1.Workspace {
		return &tenancyv1alpha1.Workspace{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{corev1alpha1.ShardAnnotationKey: shard}},
			Spec:       tenancyv1alpha1.WorkspaceSpec{Cluster: cluster},
		}
	}
	deleting := child("deleting", "c4", "root")
	deleting.DeletionTimestamp = &now
	m := moveTo("shard-1")
	m.Annotations = map[string]string{migrationv1alpha1.WithChildrenAnnotationKey: "true"}
	got, err := childMigrations(m, []*tenancyv1alpha1.Workspace{
		child("a", "c1", "root"),
		child("scheduling", "", ""),
		child("there", "c3", "shard-1"),
		deleting,
		child("b", "c2", "shard-2"),
	})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range got {
		names = append(names, c.Name+"="+c.Spec.LogicalCluster+"->"+c.Spec.DestinationShard)
		if c.Annotations[migrationv1alpha1.WithChildrenAnnotationKey] != "true" {
			t.Errorf("migration %s does not take its own children along", c.Name)
		}
	}
	if want := "move-a=c1->shard-1 move-b=c2->shard-1"; strings.Join(names, " ") != want {
		t.Errorf("child migrations %v, want %s", names, want)
	}

	m.Name = strings.Repeat("x", 250)
	if _, err := childMigrations(m, []*tenancyv1alpha1.Workspace{child("long", "c1", "root")}); err == nil {
		t.Error("a child migration name over 253 characters was accepted")
	}
}
