package e2esystem

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/clustermove"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	kstorage "github.com/shardplane/shardplane/pkg/storage"
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

// migrationOf reads a migration as the admin through the front-proxy.
func migrationOf(ctx context.Context, t *testing.T, cluster logicalcluster.Name, name string) (*migrationv1alpha1.LogicalClusterMigration, error) {
	t.Helper()
	m := &migrationv1alpha1.LogicalClusterMigration{}
	return m, kcp(t, sys.AdminConfig(t, "")).Get(ctx, cluster, kcpclient.LogicalClusterMigrations, name, m)
}

// claimOf is the migrating annotation of a cluster's LogicalCluster.
func claimOf(ctx context.Context, t *testing.T, cluster logicalcluster.Name) (string, error) {
	t.Helper()
	lc := &corev1alpha1.LogicalCluster{}
	if err := kcp(t, sys.AdminConfig(t, "")).Get(ctx, cluster, kcpclient.LogicalClusters, corev1alpha1.LogicalClusterName, lc); err != nil {
		return "", err
	}
	return lc.Annotations[migrationv1alpha1.MigratingAnnotationKey], nil
}

// TestMigrationCanBeCancelledBeforeTheCutOver follows kcp's
// TestMigrationAbortOnWorkspaceDeletion: a migration to a shard that does
// not exist stalls in Migrating once the origin has recorded itself
// (status.originShard, OriginReady True) and claimed the logical cluster
// (internal.kcp.io/migrating). Deliberately different: kcp bars access to
// the cluster from Preparing on and aborts by deleting the workspace; ours
// serves reads and writes until the cut-over, and deleting the migration
// cancels it, after which the origin serves as before without the claim.
func TestMigrationCanBeCancelledBeforeTheCutOver(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	org := readyWorkspace(ctx, t, "root", uniqueName("migrate-cancel"), "organization", "")
	orgCluster := logicalcluster.Name(org.Spec.Cluster)
	ws := readyWorkspace(ctx, t, org.Spec.Cluster, "moving", "", "")
	cluster := logicalcluster.Name(ws.Spec.Cluster)
	cms := kube(t, sys.AdminConfig(t, ws.Spec.Cluster)).CoreV1().ConfigMaps("default")
	for i := range 3 {
		// A new workspace's path may reach the front-proxy's index and the
		// shard's caches a moment after it is Ready.
		framework.Eventually(t, func(ctx context.Context) error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("abort-test-cm-%d", i)}}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		}, "creating a configmap in %s", ws.Spec.Cluster)
	}
	bindMigrationAPI(ctx, t, orgCluster)

	admin := kcp(t, sys.AdminConfig(t, ""))
	m := newMigration("abort-test-migration", string(cluster), "non-existent-shard-for-abort-test")
	framework.Eventually(t, func(ctx context.Context) error {
		return admin.Create(ctx, orgCluster, kcpclient.LogicalClusterMigrations, m, &migrationv1alpha1.LogicalClusterMigration{})
	}, "create the migration")
	framework.Eventually(t, func(ctx context.Context) error {
		got, err := migrationOf(ctx, t, orgCluster, m.Name)
		if err != nil {
			return err
		}
		if got.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseMigrating {
			return fmt.Errorf("phase %q, conditions %+v", got.Status.Phase, got.Status.Conditions)
		}
		if got.Status.OriginShard != shardOf(ws) || !got.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationOriginReady) {
			return fmt.Errorf("origin %q (want %q), conditions %+v", got.Status.OriginShard, shardOf(ws), got.Status.Conditions)
		}
		return nil
	}, "the migration never reached Migrating")
	want := string(orgCluster) + ":" + m.Name
	if got, err := claimOf(ctx, t, cluster); err != nil || got != want {
		t.Fatalf("the logical cluster's claim is %q (%v), want %q", got, err, want)
	}

	// Before the cut-over the workspace serves as before.
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written-while-preparing"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("write while the move waits for its destination: %v", err)
	}

	if err := admin.Delete(ctx, orgCluster, kcpclient.LogicalClusterMigrations, m.Name, nil); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		got, err := claimOf(ctx, t, cluster)
		if err != nil {
			return err
		}
		if got != "" {
			return fmt.Errorf("claim %q", got)
		}
		return nil
	}, "the cancelled migration's claim was never removed")
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) < 4 {
		t.Fatalf("after the cancel: %v configmaps, %v; want all 4", len(list.Items), err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "written-after-cancel"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("write after the cancel: %v", err)
	}
}

// TestWorkspaceBeingDeletedCannotBeMoved: a migration of a logical
// cluster whose deletion a finalizer holds fails at once, says why in
// OriginReady, and leaves the cluster unclaimed. Ours: kcp starts such a
// move (and aborts it when the workspace goes).
func TestWorkspaceBeingDeletedCannotBeMoved(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	org := readyWorkspace(ctx, t, "root", uniqueName("migrate-deleting"), "organization", "")
	orgCluster := logicalcluster.Name(org.Spec.Cluster)
	ws := readyWorkspace(ctx, t, org.Spec.Cluster, "leaving", "", "")
	cluster := logicalcluster.Name(ws.Spec.Cluster)
	bindMigrationAPI(ctx, t, orgCluster)

	const hold = "e2e.shardplane.io/hold"
	cms := kube(t, sys.AdminConfig(t, ws.Spec.Cluster)).CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{hold}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = cms.Patch(context.Background(), "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	admin := kcp(t, sys.AdminConfig(t, ""))
	if err := admin.Delete(ctx, orgCluster, workspacesGVR, ws.Name, nil); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		lc := &corev1alpha1.LogicalCluster{}
		if err := admin.Get(ctx, cluster, kcpclient.LogicalClusters, corev1alpha1.LogicalClusterName, lc); err != nil {
			return err
		}
		if lc.DeletionTimestamp == nil {
			return fmt.Errorf("not deleting yet")
		}
		return nil
	}, "the logical cluster never started deleting")

	destination := "root"
	if shardOf(ws) == "root" {
		destination = "shard-1"
	}
	m := newMigration("too-late", string(cluster), destination)
	if err := admin.Create(ctx, orgCluster, kcpclient.LogicalClusterMigrations, m, &migrationv1alpha1.LogicalClusterMigration{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		got, err := migrationOf(ctx, t, orgCluster, m.Name)
		if err != nil {
			return err
		}
		cond := got.Status.Conditions.Get(migrationv1alpha1.LCMigrationOriginReady)
		if got.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseFailed || cond == nil ||
			cond.Reason != "LogicalClusterDeleting" || !strings.Contains(cond.Message, "is being deleted and cannot be moved") {
			return fmt.Errorf("status %+v", got.Status)
		}
		return nil
	}, "the migration of a deleting workspace never failed")
	if got, err := claimOf(ctx, t, cluster); err != nil || got != "" {
		t.Fatalf("the deleting cluster was claimed: %q, %v", got, err)
	}
}

// TestMigrationMovesAWorkspaceWhileClientsWork is kcp's TestFullMigration
// (and TestFullMigrationAPIBindings) through the front-proxy, with a
// client-go writer and an informer running all along: the migration
// reaches Completed with status.entriesCopied positive; every ConfigMap,
// the one written before, those written during the move and one after, is
// served, from the destination, and so are a custom resource, an object
// of a bound API and a service account whose token, issued before the
// move, still authenticates; the origin
// holds nothing of the cluster; its kcp.io/path is unchanged; the informer
// started before the move sees what is written after it. Deliberately
// more than kcp: no write fails (the cut-over answers 429 with
// Retry-After, which client-go retries), and the informer lists at most
// twice (its first list and one relist).
func TestMigrationMovesAWorkspaceWhileClientsWork(t *testing.T) {
	if shards < 2 {
		t.Skip("needs a second shard (SHARDPLANE_E2E_SYSTEM_SHARDS >= 2)")
	}
	t.Parallel()
	ctx := testContext(t)
	org := readyWorkspace(ctx, t, "root", uniqueName("migrate-live"), "organization", "")
	orgCluster := logicalcluster.Name(org.Spec.Cluster)
	ws := readyWorkspace(ctx, t, org.Spec.Cluster, "moving", "", "root")
	cluster := logicalcluster.Name(ws.Spec.Cluster)
	path := org.Spec.Cluster + ":moving"
	pathBefore := pathOf(ctx, t, cluster)
	cms := kube(t, sys.AdminConfig(t, path)).CoreV1().ConfigMaps("default")
	for i := range 5 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("test-cm-%d", i)}, Data: map[string]string{"index": fmt.Sprint(i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Besides built-ins: a CRD and its object, an object of a bound API
	// (its export on shard-1) and a service account with a token.
	crds := apiextensionsclient.NewForConfigOrDie(sys.AdminConfig(t, path)).ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, freeFormCRD("moves.e2e.shardplane.io", "sheriffs", "Sheriff"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(sys.AdminConfig(t, path))
	if err != nil {
		t.Fatal(err)
	}
	sheriffs := dyn.Resource(schema.GroupVersionResource{Group: "moves.e2e.shardplane.io", Version: "v1", Resource: "sheriffs"}).Namespace("default")
	sheriff := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "moves.e2e.shardplane.io/v1", "kind": "Sheriff", "metadata": map[string]any{"name": "wyatt"}, "spec": map[string]any{"town": "tombstone"}}}
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := sheriffs.Create(ctx, sheriff, metav1.CreateOptions{})
		return err
	}, "create a custom resource in %s", path)
	provider := readyWorkspace(ctx, t, org.Spec.Cluster, "provider", "", "shard-1")
	publishCowboysOn(ctx, t, logicalcluster.Name(provider.Spec.Cluster), "moves.wildwest.dev")
	cowboys := bindCowboysOn(ctx, t, cluster, logicalcluster.Name(provider.Spec.Cluster), "moves.wildwest.dev")
	cowboy, err := cowboys.Create(ctx, newCowboy("moves.wildwest.dev", "ride"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wsAdmin := kube(t, sys.AdminConfig(t, path))
	if _, err := wsAdmin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var token string
	framework.Eventually(t, func(ctx context.Context) error {
		tr, err := wsAdmin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		token = tr.Status.Token
		return nil
	}, "a token of default/robot")
	robot := rest.AnonymousClientConfig(sys.AdminConfig(t, path))
	robot.BearerToken = token
	whoami := func(ctx context.Context) (string, error) {
		review, err := kube(t, robot).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return review.Status.UserInfo.Username, nil
	}
	robotName, err := whoami(ctx)
	if err != nil {
		t.Fatalf("the service account's token before the move: %v", err)
	}

	// An informer through the front-proxy, counting its successful lists.
	var lists atomic.Int32
	store, controller := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: &cache.ListWatch{
			ListFunc: func(options metav1.ListOptions) (runtime.Object, error) {
				list, err := cms.List(ctx, options)
				if err == nil {
					lists.Add(1)
				}
				return list, err
			},
			WatchFunc: func(options metav1.ListOptions) (watch.Interface, error) { return cms.Watch(ctx, options) },
		},
		ObjectType: &corev1.ConfigMap{},
		Handler:    cache.ResourceEventHandlerFuncs{},
	})
	informerCtx, stopInformer := context.WithCancel(ctx)
	defer stopInformer()
	go controller.Run(informerCtx.Done())
	framework.Eventually(t, func(context.Context) error {
		if !controller.HasSynced() {
			return fmt.Errorf("not synced")
		}
		return nil
	}, "the informer never synced")

	// A writer through the front-proxy for the whole move.
	var failed []error
	var written []string
	writerDone := make(chan struct{})
	writerCtx, stopWriter := context.WithCancel(ctx)
	go func() {
		defer close(writerDone)
		for i := 0; writerCtx.Err() == nil; i++ {
			name := fmt.Sprintf("during-%d", i)
			_, err := cms.Create(writerCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			switch {
			case err == nil:
				written = append(written, name)
			case writerCtx.Err() == nil:
				failed = append(failed, err)
			}
		}
	}()

	bindMigrationAPI(ctx, t, orgCluster)
	admin := kcp(t, sys.AdminConfig(t, ""))
	m := newMigration("test-migration", string(cluster), "shard-1")
	if err := admin.Create(ctx, orgCluster, kcpclient.LogicalClusterMigrations, m, &migrationv1alpha1.LogicalClusterMigration{}); err != nil {
		t.Fatal(err)
	}
	var completed *migrationv1alpha1.LogicalClusterMigration
	framework.Eventually(t, func(ctx context.Context) error {
		got, err := migrationOf(ctx, t, orgCluster, m.Name)
		if err != nil {
			return err
		}
		if got.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseCompleted {
			return fmt.Errorf("phase %q, conditions %+v", got.Status.Phase, got.Status.Conditions)
		}
		completed = got
		return nil
	}, "the migration never completed")
	stopWriter()
	<-writerDone
	if len(failed) > 0 {
		t.Errorf("%d of the writer's requests failed during the move, first: %v", len(failed), failed[0])
	}
	if len(written) == 0 {
		t.Error("the writer wrote nothing during the move")
	}
	if completed.Status.EntriesCopied <= 0 || !completed.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationCompleted) {
		t.Errorf("completed status %+v, want entriesCopied and Completed", completed.Status)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "post-migration-informer-cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("write after the move: %v", err)
	}

	// Everything is on the destination, served through the front-proxy.
	want := append([]string{"post-migration-informer-cm"}, written...)
	for i := range 5 {
		want = append(want, fmt.Sprintf("test-cm-%d", i))
	}
	onDestination := kube(t, sys.ShardAdminConfig(t, "shard-1", ws.Spec.Cluster)).CoreV1().ConfigMaps("default")
	for name, list := range map[string]func(context.Context) (*corev1.ConfigMapList, error){
		"the destination": func(ctx context.Context) (*corev1.ConfigMapList, error) {
			return onDestination.List(ctx, metav1.ListOptions{})
		},
		"the front-proxy": func(ctx context.Context) (*corev1.ConfigMapList, error) { return cms.List(ctx, metav1.ListOptions{}) },
	} {
		got, err := list(ctx)
		if err != nil {
			t.Fatalf("list on %s: %v", name, err)
		}
		have := map[string]bool{}
		for _, cm := range got.Items {
			have[cm.Name] = true
		}
		for _, w := range want {
			if !have[w] {
				t.Errorf("%s lacks %s, an acknowledged write", name, w)
			}
		}
	}
	if got, err := sheriffs.Get(ctx, "wyatt", metav1.GetOptions{}); err != nil || got.Object["spec"].(map[string]any)["town"] != "tombstone" {
		t.Errorf("the custom resource after the move: %v %v", got, err)
	}
	if _, err := cowboys.Get(ctx, cowboy.GetName(), metav1.GetOptions{}); err != nil {
		t.Errorf("the bound API's object after the move: %v", err)
	}
	if name, err := whoami(ctx); err != nil || name != robotName {
		t.Errorf("the token issued before the move authenticates as %q (%v), want %q", name, err, robotName)
	}
	// Held from the cut-over on, the migration is free to go once done.
	framework.Eventually(t, func(ctx context.Context) error {
		got, err := migrationOf(ctx, t, orgCluster, m.Name)
		if err != nil {
			return err
		}
		if len(got.Finalizers) > 0 {
			return fmt.Errorf("finalizers %v", got.Finalizers)
		}
		return nil
	}, "the completed migration kept its finalizer")
	if err := admin.Delete(ctx, orgCluster, kcpclient.LogicalClusterMigrations, m.Name, nil); err != nil {
		t.Errorf("delete the completed migration: %v", err)
	}

	// The parent's Workspace names the destination and mirrors its
	// LogicalCluster again.
	framework.Eventually(t, func(ctx context.Context) error {
		got := &tenancyv1alpha1.Workspace{}
		if err := admin.Get(ctx, orgCluster, workspacesGVR, ws.Name, got); err != nil {
			return err
		}
		if shardOf(got) != "shard-1" || got.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
			return fmt.Errorf("workspace on %q, phase %q", shardOf(got), got.Status.Phase)
		}
		return nil
	}, "the moved workspace never named its new shard")
	originLCs := kcp(t, sys.ShardAdminConfig(t, "root", ""))
	if err := originLCs.Get(ctx, cluster, kcpclient.LogicalClusters, corev1alpha1.LogicalClusterName, &corev1alpha1.LogicalCluster{}); !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) && !apierrors.IsTooManyRequests(err) {
		t.Errorf("the origin still has the LogicalCluster: %v", err)
	}
	if got := pathOf(ctx, t, cluster); got != pathBefore {
		t.Errorf("kcp.io/path is %q after the move, was %q", got, pathBefore)
	}
	if claim, err := claimOf(ctx, t, cluster); err != nil || claim != "" {
		t.Errorf("claim after the move %q (%v), want none", claim, err)
	}

	framework.Eventually(t, func(context.Context) error {
		for _, w := range want {
			if _, exists, _ := store.GetByKey("default/" + w); !exists {
				return fmt.Errorf("the informer lacks %s", w)
			}
		}
		return nil
	}, "the informer started before the move missed objects")
	if n := lists.Load(); n > 2 {
		t.Errorf("the informer listed %d times, want its first list and at most one relist", n)
	}
}

// pathOf is the kcp.io/path of a cluster's LogicalCluster.
func pathOf(ctx context.Context, t *testing.T, cluster logicalcluster.Name) string {
	t.Helper()
	lc := &corev1alpha1.LogicalCluster{}
	if err := kcp(t, sys.AdminConfig(t, "")).Get(ctx, cluster, kcpclient.LogicalClusters, corev1alpha1.LogicalClusterName, lc); err != nil {
		t.Fatal(err)
	}
	return lc.Annotations[logicalcluster.PathAnnotationKey]
}

// TestDeletingAWorkspaceMidMoveAbortsTheMove is kcp's
// TestMigrationAbortOnWorkspaceDeletion: a migration stalled in Migrating
// (its destination shard does not exist) fails with Aborted True once the
// workspace is deleted, the workspace goes away and its path serves
// nothing. Deliberately different: deleting a workspace aborts a move only
// before its cut-over; from the cut-over on (MigrationStarted True) the
// deletion waits for the move to end, the Workspace Terminating with
// WorkspaceContentDeleted False LogicalClusterMoving, and then deletes the
// cluster on the destination (unit-tested in pkg/controllers/workspace:
// a cut-over cannot be stalled from outside). kcp also reports
// OriginCleaned True on the aborted migration; ours deletes the origin's
// copy through the workspace's ordinary deletion instead.
func TestDeletingAWorkspaceMidMoveAbortsTheMove(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	org := readyWorkspace(ctx, t, "root", uniqueName("migrate-abort"), "organization", "")
	orgCluster := logicalcluster.Name(org.Spec.Cluster)
	ws := readyWorkspace(ctx, t, org.Spec.Cluster, "aborted", "", "")
	cluster := logicalcluster.Name(ws.Spec.Cluster)
	path := pathOf(ctx, t, cluster)
	cms := kube(t, sys.AdminConfig(t, path)).CoreV1().ConfigMaps("default")
	for i := range 3 {
		// A new workspace's path may reach the front-proxy's index and the
		// shard's caches a moment after it is Ready.
		framework.Eventually(t, func(ctx context.Context) error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("abort-test-cm-%d", i)}}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		}, "creating a configmap in %s", path)
	}
	bindMigrationAPI(ctx, t, orgCluster)

	admin := kcp(t, sys.AdminConfig(t, ""))
	m := newMigration("abort-test-migration", string(cluster), "non-existent-shard-for-abort-test")
	framework.Eventually(t, func(ctx context.Context) error {
		return admin.Create(ctx, orgCluster, kcpclient.LogicalClusterMigrations, m, &migrationv1alpha1.LogicalClusterMigration{})
	}, "create the migration")
	framework.Eventually(t, func(ctx context.Context) error {
		got, err := migrationOf(ctx, t, orgCluster, m.Name)
		if err != nil {
			return err
		}
		if got.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseMigrating {
			return fmt.Errorf("phase %q, conditions %+v", got.Status.Phase, got.Status.Conditions)
		}
		return nil
	}, "the migration never reached Migrating")
	got, err := migrationOf(ctx, t, orgCluster, m.Name)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.OriginShard != shardOf(ws) || !got.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationOriginReady) {
		t.Fatalf("origin %q (want %q), conditions %+v; want OriginReady True", got.Status.OriginShard, shardOf(ws), got.Status.Conditions)
	}

	framework.Eventually(t, func(ctx context.Context) error {
		if err := admin.Delete(ctx, orgCluster, workspacesGVR, ws.Name, nil); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	}, "delete the workspace")
	framework.Eventually(t, func(ctx context.Context) error {
		got, err := migrationOf(ctx, t, orgCluster, m.Name)
		if err != nil {
			return err
		}
		if got.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseFailed || !got.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationAborted) {
			return fmt.Errorf("phase %q, conditions %+v", got.Status.Phase, got.Status.Conditions)
		}
		return nil
	}, "the migration never failed with Aborted")
	framework.Eventually(t, func(ctx context.Context) error {
		err := admin.Get(ctx, orgCluster, workspacesGVR, ws.Name, &tenancyv1alpha1.Workspace{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("workspace still there: %v", err)
		}
		return nil
	}, "the workspace was never deleted")
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := cms.List(ctx, metav1.ListOptions{})
		if !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
			return fmt.Errorf("list configmaps of the deleted workspace: %v, want NotFound or Forbidden", err)
		}
		return nil
	}, "the deleted workspace's data is still reachable")
}

// TestMigrationWithChildrenMovesTheSubtree: ours, kcp moves one logical
// cluster. A migration annotated migration.shardplane.io/with-children
// creates, beside itself, one migration per child workspace (named
// <migration>-<child>) to the same destination; every one reaches
// Completed, every Workspace of the subtree names the destination, and
// each serves its content by its unchanged path through the front-proxy.
func TestMigrationWithChildrenMovesTheSubtree(t *testing.T) {
	if shards < 2 {
		t.Skip("needs a second shard (SHARDPLANE_E2E_SYSTEM_SHARDS >= 2)")
	}
	t.Parallel()
	ctx := testContext(t)
	org := readyWorkspace(ctx, t, "root", uniqueName("migrate-subtree"), "organization", corev1alpha1.RootShard)
	orgCluster := logicalcluster.Name(org.Spec.Cluster)
	parent := readyWorkspace(ctx, t, org.Spec.Cluster, "parent", "", "shard-1")
	children := []*tenancyv1alpha1.Workspace{
		readyWorkspace(ctx, t, parent.Spec.Cluster, "child-a", "", "shard-1"),
		readyWorkspace(ctx, t, parent.Spec.Cluster, "child-b", "", "shard-1"),
	}
	type moved struct {
		in        logicalcluster.Name
		ws        *tenancyv1alpha1.Workspace
		migration string
		path      string
	}
	subtree := []moved{{in: orgCluster, ws: parent, migration: "subtree"}}
	for _, c := range children {
		subtree = append(subtree, moved{in: logicalcluster.Name(parent.Spec.Cluster), ws: c, migration: "subtree-" + c.Name})
	}
	for i := range subtree {
		subtree[i].path = pathOf(ctx, t, logicalcluster.Name(subtree[i].ws.Spec.Cluster))
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before-move"}}
		cms := kube(t, sys.AdminConfig(t, subtree[i].path)).CoreV1().ConfigMaps("default")
		framework.Eventually(t, func(ctx context.Context) error {
			_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		}, "creating a configmap in %s", subtree[i].path)
	}
	bindMigrationAPI(ctx, t, orgCluster)

	admin := kcp(t, sys.AdminConfig(t, ""))
	m := newMigration("subtree", parent.Spec.Cluster, corev1alpha1.RootShard)
	m.Annotations = map[string]string{migrationv1alpha1.WithChildrenAnnotationKey: "true"}
	framework.Eventually(t, func(ctx context.Context) error {
		return admin.Create(ctx, orgCluster, kcpclient.LogicalClusterMigrations, m, &migrationv1alpha1.LogicalClusterMigration{})
	}, "create the migration")
	for _, s := range subtree {
		framework.Eventually(t, func(ctx context.Context) error {
			got, err := migrationOf(ctx, t, orgCluster, s.migration)
			if err != nil {
				return err
			}
			if got.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseCompleted {
				return fmt.Errorf("phase %q, conditions %+v", got.Status.Phase, got.Status.Conditions)
			}
			return nil
		}, "migration %s never Completed", s.migration)
	}
	for _, s := range subtree {
		framework.Eventually(t, func(ctx context.Context) error {
			got := &tenancyv1alpha1.Workspace{}
			if err := admin.Get(ctx, s.in, workspacesGVR, s.ws.Name, got); err != nil {
				return err
			}
			if shard := shardOf(got); shard != corev1alpha1.RootShard {
				return fmt.Errorf("workspace %s names shard %q", s.ws.Name, shard)
			}
			return nil
		}, "workspace %s never named root", s.ws.Name)
		if got := pathOf(ctx, t, logicalcluster.Name(s.ws.Spec.Cluster)); got != s.path {
			t.Errorf("workspace %s's path is %q after the move, want %q", s.ws.Name, got, s.path)
		}
		if _, err := kube(t, sys.AdminConfig(t, s.path)).CoreV1().ConfigMaps("default").Get(ctx, "before-move", metav1.GetOptions{}); err != nil {
			t.Errorf("workspace %s by its path %s after the move: %v", s.ws.Name, s.path, err)
		}
	}
}

// TestMigrationFailsVerificationAndLeavesTheOriginServing: while a
// workspace moves, something else writes objects of its logical cluster
// straight into the destination's etcd, as a stray writer of the shared
// storage would; the cut-over's final copy then differs from the origin
// when it is verified. The move fails with DataCopied False, reason
// VerificationFailed; the origin serves reads and writes through the
// front-proxy as before, with everything written before; the destination
// holds nothing of the cluster. Ours: kcp verifies no copy.
func TestMigrationFailsVerificationAndLeavesTheOriginServing(t *testing.T) {
	if shards < 2 {
		t.Skip("needs a second shard (SHARDPLANE_E2E_SYSTEM_SHARDS >= 2)")
	}
	t.Parallel()
	ctx := testContext(t)
	// The migration lives on the destination, beside the copy: the stray
	// writer below sees in that etcd when the move has ended.
	const destination = "shard-1"
	org := readyWorkspace(ctx, t, "root", uniqueName("migrate-verify"), "organization", destination)
	orgCluster := logicalcluster.Name(org.Spec.Cluster)
	ws := readyWorkspace(ctx, t, org.Spec.Cluster, "tampered", "", "root")
	cluster := logicalcluster.Name(ws.Spec.Cluster)
	cms := kube(t, sys.AdminConfig(t, ws.Spec.Cluster)).CoreV1().ConfigMaps("default")
	for i := range 20 {
		framework.Eventually(t, func(ctx context.Context) error {
			_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("before-%d", i)}}, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		}, "create a configmap in %s", cluster)
	}
	bindMigrationAPI(ctx, t, orgCluster)

	etcd, err := clientv3.New(clientv3.Config{Endpoints: []string{sys.ShardEtcdURL(t, destination)}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	admin := kcp(t, sys.AdminConfig(t, ""))
	m := newMigration("tampered", string(cluster), destination)
	framework.Eventually(t, func(ctx context.Context) error {
		return admin.Create(ctx, orgCluster, kcpclient.LogicalClusterMigrations, m, &migrationv1alpha1.LogicalClusterMigration{})
	}, "create the migration")

	// The stray writer adds a ConfigMap of the cluster to the destination's
	// copy whenever the copy is there, until the move has ended: the final
	// copy's sync removes those it saw, but not those written meanwhile.
	// Each write is conditional on the migration being unchanged since it
	// was read unended, so that none lands after the failed move's clean-up.
	lcKey := "/registry/" + kstorage.ResourcePrefix(corev1alpha1.Resource("logicalclusters")) + "/" + string(cluster) + "/" + corev1alpha1.LogicalClusterName
	migrationKey := "/registry/" + kstorage.ResourcePrefix(migrationv1alpha1.Resource("logicalclustermigrations")) + "/" + string(orgCluster) + "/" + m.Name
	const intrudersPerWrite = 50
	intruders := 0
	framework.EventuallyEvery(t, time.Millisecond, framework.EventuallyTimeout, func(ctx context.Context) error {
		for range 100 {
			stored, err := etcd.Get(ctx, migrationKey)
			if err != nil {
				return err
			}
			if len(stored.Kvs) != 1 {
				return fmt.Errorf("no %s in the destination's etcd", migrationKey)
			}
			var got migrationv1alpha1.LogicalClusterMigration
			if err := json.Unmarshal(stored.Kvs[0].Value, &got); err != nil {
				t.Fatalf("the stored migration is not JSON: %v", err)
			}
			if got.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhaseCompleted || got.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhaseFailed {
				return nil
			}
			// Many at once: the final sync then has many to delete, and
			// writes landing while it does are there when it reads back.
			var puts []clientv3.Op
			for i := intruders; i < intruders+intrudersPerWrite; i++ {
				name := fmt.Sprintf("intruder-%d", i)
				value := fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":"default","uid":"00000000-0000-0000-0000-%012d","creationTimestamp":"2026-01-01T00:00:00Z"}}`, name, i)
				puts = append(puts, clientv3.OpPut("/registry/core/configmaps/"+string(cluster)+"/default/"+name, value))
			}
			txn, err := etcd.Txn(ctx).If(
				clientv3.Compare(clientv3.ModRevision(migrationKey), "=", stored.Kvs[0].ModRevision),
				clientv3.Compare(clientv3.CreateRevision(lcKey), ">", 0),
			).Then(puts...).Commit()
			if err != nil {
				return err
			}
			if txn.Succeeded {
				intruders += intrudersPerWrite
			}
		}
		return fmt.Errorf("the migration has not ended")
	}, "the migration never ended")
	t.Logf("%d objects written into the destination's copy behind its back", intruders)
	final, err := migrationOf(ctx, t, orgCluster, m.Name)
	if err != nil {
		t.Fatal(err)
	}

	cond := final.Status.Conditions.Get(migrationv1alpha1.LCMigrationDataCopied)
	if final.Status.Phase != migrationv1alpha1.LogicalClusterMigrationPhaseFailed || cond == nil || cond.Reason != "VerificationFailed" ||
		!strings.Contains(cond.Message, "core/configmaps") {
		t.Fatalf("the move of a copy that differs: %+v, want Failed with DataCopied False, reason VerificationFailed, naming core/configmaps", final.Status)
	}

	// The origin serves as before, through the front-proxy.
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-the-failed-move"}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}, "write to %s after the failed move", cluster)
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, cm := range list.Items {
		names[cm.Name] = true
	}
	for i := range 20 {
		if !names[fmt.Sprintf("before-%d", i)] {
			t.Errorf("before-%d is gone after the failed move", i)
		}
	}
	for name := range names {
		if strings.HasPrefix(name, "intruder-") {
			t.Errorf("the origin serves %s, written only into the destination's copy", name)
		}
	}
	if got, err := claimOf(ctx, t, cluster); err != nil || got != "" {
		t.Errorf("the failed move's claim is still there: %q, %v", got, err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		left, _, err := clustermove.DumpAll(ctx, etcd, "/registry", cluster)
		if err != nil {
			return err
		}
		if len(left) > 0 {
			return fmt.Errorf("%d keys, the first %s", len(left), left[0].Key)
		}
		return nil
	}, "the destination still holds objects of %s", cluster)
}
