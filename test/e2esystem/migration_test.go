package e2esystem

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

// bindMigrationAPI binds root's migration.kcp.io in cluster as the admin,
// as kcp's e2e tests do before they create a migration there.
func bindMigrationAPI(ctx context.Context, t *testing.T, cluster logicalcluster.Name) {
	t.Helper()
	admin := kcp(t, sys.AdminConfig(t, ""))
	binding := &apisv1alpha2.APIBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "migration"},
		Spec: apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{
			Export: &apisv1alpha2.ExportBindingReference{Path: "root", Name: "migration.kcp.io"},
		}},
	}
	if err := admin.Create(ctx, cluster, bindingsGVR, binding, &apisv1alpha2.APIBinding{}); err != nil {
		t.Fatalf("bind migration.kcp.io in %s: %v", cluster, err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		got := &apisv1alpha2.APIBinding{}
		if err := admin.Get(ctx, cluster, bindingsGVR, binding.Name, got); err != nil {
			return err
		}
		if got.Status.Phase != apisv1alpha2.APIBindingPhaseBound {
			return fmt.Errorf("phase %q", got.Status.Phase)
		}
		return nil
	}, "migration APIBinding in %s never Bound", cluster)
}

func newMigration(name, cluster, shard string) *migrationv1alpha1.LogicalClusterMigration {
	return &migrationv1alpha1.LogicalClusterMigration{
		TypeMeta:   metav1.TypeMeta{APIVersion: migrationv1alpha1.SchemeGroupVersion.String(), Kind: "LogicalClusterMigration"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       migrationv1alpha1.LogicalClusterMigrationSpec{LogicalCluster: cluster, DestinationShard: shard},
	}
}

// TestMigrationAPIIsServedWhereKcpServesIt follows kcp's
// TestMigrationAPIBindingUnprivileged and the set-up of its TestFullMigration:
// root binds migration.kcp.io, another workspace has the kind only once an
// admin binds it there, a workspace admin cannot bind it (403), the
// migration is replicated to the cache server, as kcp replicates every
// one, and kubectl prints kcp's columns. Deliberately more than kcp: a
// migration's names are validated (kcp's schema only asks for non-empty
// strings) and its spec cannot change.
func TestMigrationAPIIsServedWhereKcpServesIt(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	admin := kcp(t, sys.AdminConfig(t, ""))

	var rootBinding apisv1alpha2.APIBinding
	framework.Eventually(t, func(ctx context.Context) error {
		if err := admin.Get(ctx, logicalcluster.Root, bindingsGVR, "migration.kcp.io", &rootBinding); err != nil {
			return err
		}
		if rootBinding.Status.Phase != apisv1alpha2.APIBindingPhaseBound {
			return fmt.Errorf("phase %q", rootBinding.Status.Phase)
		}
		return nil
	}, "root's binding of migration.kcp.io never Bound")

	org := readyWorkspace(ctx, t, "root", uniqueName("migrate-api"), "organization", "")
	cluster := logicalcluster.Name(org.Spec.Cluster)
	m := newMigration("move", "2x9kq7z1", "no-such-shard")

	// Not bound: the kind is not there.
	err := admin.Create(ctx, cluster, kcpclient.LogicalClusterMigrations, m, &migrationv1alpha1.LogicalClusterMigration{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("create a migration where migration.kcp.io is not bound: %v, want 404", err)
	}

	// A workspace admin who is nobody in root may not bind it.
	framework.Grant(ctx, t, kube(t, sys.AdminConfig(t, org.Spec.Cluster)), "user-1-admin", "user-1",
		rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
		rbacv1.PolicyRule{Verbs: []string{"access"}, NonResourceURLs: []string{"/"}})
	user := kcp(t, sys.UserConfig(t, "user-1", ""))
	binding := &apisv1alpha2.APIBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: apisv1alpha2.SchemeGroupVersion.String(), Kind: "APIBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "migration"},
		Spec:       apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: "root", Name: "migration.kcp.io"}}},
	}
	framework.Eventually(t, func(ctx context.Context) error {
		err := user.Create(ctx, cluster, bindingsGVR, binding, &apisv1alpha2.APIBinding{})
		if !apierrors.IsForbidden(err) {
			return fmt.Errorf("user-1 binds migration.kcp.io: %v, want 403", err)
		}
		return nil
	}, "an unprivileged binding of migration.kcp.io is refused")

	bindMigrationAPI(ctx, t, cluster)
	var created migrationv1alpha1.LogicalClusterMigration
	framework.Eventually(t, func(ctx context.Context) error {
		return admin.Create(ctx, cluster, kcpclient.LogicalClusterMigrations, m, &created)
	}, "create a migration in %s", cluster)
	if created.Status.Phase != "" {
		t.Errorf("a new migration has phase %q, want none until a shard picks it up", created.Status.Phase)
	}

	for name, tc := range map[string]struct {
		m    *migrationv1alpha1.LogicalClusterMigration
		want string
	}{
		"a path":        {m: newMigration("bad-path", "root:org", "shard-1"), want: "spec.logicalCluster: Invalid value"},
		"root":          {m: newMigration("bad-root", "root", "shard-1"), want: "cannot move"},
		"no shard":      {m: newMigration("bad-shard", "2x9kq7z1", ""), want: "spec.destinationShard: Required value"},
		"no such shard": {m: newMigration("bad-shard-name", "2x9kq7z1", "Shard_1"), want: "spec.destinationShard: Invalid value"},
	} {
		err := admin.Create(ctx, cluster, kcpclient.LogicalClusterMigrations, tc.m, &migrationv1alpha1.LogicalClusterMigration{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want 422 with %q", name, err, tc.want)
		}
	}
	changed := created.DeepCopy()
	changed.Spec.DestinationShard = "elsewhere"
	if err := admin.Update(ctx, cluster, kcpclient.LogicalClusterMigrations, changed.Name, changed, &migrationv1alpha1.LogicalClusterMigration{}); !apierrors.IsInvalid(err) {
		t.Errorf("change the destination of a migration: %v, want 422", err)
	}

	// kcp replicates every migration: the shards a move concerns read it
	// from the cache server.
	cacheCfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(sys.CacheDir(), "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cacheCfg.Host = cacheclient.URL(sys.CacheURL(t), cacheclient.Shard(shardOf(org)), cluster)
	cache, err := dynamic.NewForConfig(cacheCfg)
	if err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		got, err := cache.Resource(kcpclient.LogicalClusterMigrations).Get(ctx, "move", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if dest, _, _ := unstructured.NestedString(got.Object, "spec", "destinationShard"); dest != "no-such-shard" {
			return fmt.Errorf("replica's destination %q", dest)
		}
		return nil
	}, "the migration is replicated to the cache server")

	out := kubectl(ctx, t, sys.AdminConfig(t, org.Spec.Cluster).Host, "get", "logicalclustermigrations")
	for _, column := range []string{"LOGICAL CLUSTER", "PHASE", "DESTINATION", "ENTRIES COPIED", "2x9kq7z1", "no-such-shard"} {
		if !strings.Contains(out, column) {
			t.Errorf("kubectl get logicalclustermigrations:\n%s\nlacks %q", out, column)
		}
	}
}
