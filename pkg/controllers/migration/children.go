package migration

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// childMigrations are the migrations that move the child workspaces of
// m's cluster along (WithChildrenAnnotationKey): one per child that has a
// logical cluster, is not being deleted and is not on the destination
// already.
func childMigrations(m *migrationv1alpha1.LogicalClusterMigration, children []*tenancyv1alpha1.Workspace) ([]*migrationv1alpha1.LogicalClusterMigration, error) {
	var out []*migrationv1alpha1.LogicalClusterMigration
	for _, ws := range children {
		if ws.Spec.Cluster == "" || ws.Spec.Mount != nil || ws.DeletionTimestamp != nil ||
			ws.Annotations[corev1alpha1.ShardAnnotationKey] == m.Spec.DestinationShard {
			continue
		}
		name := m.Name + "-" + ws.Name
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return nil, fmt.Errorf("migration of child workspace %s: name %q: %v", ws.Name, name, errs)
		}
		out = append(out, &migrationv1alpha1.LogicalClusterMigration{
			TypeMeta: metav1.TypeMeta{APIVersion: migrationv1alpha1.SchemeGroupVersion.String(), Kind: "LogicalClusterMigration"},
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{migrationv1alpha1.WithChildrenAnnotationKey: "true"},
			},
			Spec: migrationv1alpha1.LogicalClusterMigrationSpec{LogicalCluster: ws.Spec.Cluster, DestinationShard: m.Spec.DestinationShard},
		})
	}
	return out, nil
}

// moveChildren creates, beside m in cluster, the migrations of the child
// workspaces of the logical cluster m moves; the origin hosts their
// Workspace objects.
func (c *Controller) moveChildren(ctx context.Context, client *kcpclient.Client, cluster logicalcluster.Name, m *migrationv1alpha1.LogicalClusterMigration) error {
	if c.cfg.Workspaces == nil {
		return nil
	}
	objs, err := c.cfg.Workspaces.List(logicalcluster.Name(m.Spec.LogicalCluster), "")
	if err != nil {
		return err
	}
	var children []*tenancyv1alpha1.Workspace
	for _, obj := range objs {
		if ws, ok := obj.(*tenancyv1alpha1.Workspace); ok {
			children = append(children, ws)
		}
	}
	ms, err := childMigrations(m, children)
	if err != nil {
		return err
	}
	for _, child := range ms {
		if err := client.Create(ctx, cluster, kcpclient.LogicalClusterMigrations, child, &migrationv1alpha1.LogicalClusterMigration{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create migration %s of a child workspace: %w", child.Name, err)
		}
	}
	return nil
}
