// Package migration moves logical clusters between shards, driven by kcp's
// LogicalClusterMigration (migration.kcp.io).
//
// Every shard runs the controller and sees every migration through the
// cache server, where the shard hosting a migration replicates it, as in
// kcp. The shard that serves the logical cluster is its origin: it records
// itself, claims the cluster with kcp's internal.kcp.io/migrating
// annotation (Preparing) and hands over to the destination (Migrating). A
// migration deleted before the cut-over, or one that failed, gives the
// cluster back: the origin removes its claim and serves as before. Status
// is written to the shard that hosts the migration: in-process when that
// is this shard, through its base URL as system:kcp:logical-cluster-admin
// otherwise.
//
// The destination then copies the cluster from the origin (a
// LogicalClusterDump per page, pkg/clustermove) into its own etcd, with
// its LogicalCluster marked served elsewhere so that nothing routes to the
// copy (MigrationStarted, status.entriesCopied); a failed or cancelled
// move removes the copy.
//
// Cut-over (ours; kcp bars the cluster for the whole move instead): the
// origin holds the cluster's writes (429 + Retry-After, pkg/clusterhold)
// and waits for those in flight (WritesHeld); the destination takes a
// final copy, verifies it against the origin's dump (object count and
// content hash per resource) and lets its copy serve (DataCopied,
// OriginCleanup), which the front-proxies switch to at once (a copy that
// serves beats a held one); a mismatch fails the move and the origin
// serves on. The origin then marks its own copy served elsewhere, ends
// the cluster's watches, answers 429 to whatever still
// reaches it and deletes the cluster from its etcd (OriginCleaned,
// DestinationFinalize); the destination drops the claim (Completed).
//
// Every step is resumed from what is stored, so that any of the shards may
// be killed at any phase: the origin's hold is marked on its LogicalCluster
// (internal.shardplane.io/writes-held) before WritesHeld is reported, and a
// restarted shard holds from the mark before it serves; the destination
// stores where its own resource versions start with the unmarking of its
// copy, and does not copy again over a copy that serves.
package migration

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/clusterhold"
	"github.com/shardplane/shardplane/pkg/clustermove"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/shardlookup"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// byClaim indexes LogicalClusters by the migration that claims them.
const byClaim = "migrationClaim"

// Config is what the controller needs.
type Config struct {
	// ShardName is this shard.
	ShardName string
	// Migrations are every shard's LogicalClusterMigrations, as
	// replicated to the cache server.
	Migrations *wildcardinformer.Informer
	// LogicalClusters are this shard's.
	LogicalClusters *wildcardinformer.Informer
	// Workspaces are this shard's: a moved cluster's Workspace, in its
	// parent, names the destination once the move completed.
	Workspaces *wildcardinformer.Informer
	// Local writes to this shard.
	Local *kcpclient.Client
	// Shards finds the shard that hosts a migration.
	Shards shardlookup.Source
	// ShardClient returns a client of another shard.
	ShardClient func(*corev1alpha1.Shard) (*kcpclient.Client, error)
	// Etcd is this shard's etcd, below EtcdPrefix, which the copy of a
	// moving cluster is written to directly; nil: this shard cannot be a
	// destination.
	Etcd       clientv3.KV
	EtcdPrefix string
	// Holds holds the writes to clusters moving away from this shard.
	Holds *clusterhold.Registry
}

// Controller runs the shard's part of every migration.
type Controller struct {
	cfg         Config
	loop        *loop.Loop
	origin      *originReconciler
	destination *destinationReconciler
}

// New returns the controller. It registers handlers and an index on the
// informers: call it before they run.
func New(cfg Config) (*Controller, error) {
	c := &Controller{cfg: cfg}
	c.loop = loop.New("migration", c.reconcile)
	holds := cfg.Holds
	if holds == nil {
		holds = clusterhold.New()
	}
	c.origin = &originReconciler{
		shardName:         cfg.ShardName,
		getLogicalCluster: c.logicalCluster,
		setAnnotations:    c.setAnnotations,
		setServedElsewhere: func(ctx context.Context, cluster logicalcluster.Name) error {
			return c.setAnnotation(ctx, cluster, migrationv1alpha1.ServedElsewhereAnnotationKey, "true")
		},
		hold:        holds.Hold,
		releaseHold: holds.Release,
		deleteAll: func(ctx context.Context, cluster logicalcluster.Name) error {
			if cfg.Etcd == nil {
				return fmt.Errorf("shard %s cannot write its storage directly", cfg.ShardName)
			}
			_, err := clustermove.DeleteAll(ctx, cfg.Etcd, cfg.EtcdPrefix, cluster)
			return err
		},
	}
	c.destination = &destinationReconciler{
		shardName:         cfg.ShardName,
		getLogicalCluster: c.logicalCluster,
		dumpPage:          c.dumpPage,
		sync: func(ctx context.Context, cluster logicalcluster.Name, entries []clustermove.Entry, rewrite func(clustermove.Entry) ([]byte, error)) (int64, error) {
			if cfg.Etcd == nil {
				return 0, fmt.Errorf("shard %s cannot write its storage directly", cfg.ShardName)
			}
			res, err := clustermove.Sync(ctx, cfg.Etcd, cfg.EtcdPrefix, cluster, entries, rewrite)
			return res.Revision, err
		},
		readAt: func(ctx context.Context, cluster logicalcluster.Name, revision int64) ([]clustermove.Entry, error) {
			entries, _, err := clustermove.DumpAllAt(ctx, cfg.Etcd, cfg.EtcdPrefix, cluster, revision)
			return entries, err
		},
		setAnnotations: c.setAnnotations,
		advanceRevision: func(ctx context.Context, above int64) (int64, error) {
			return clustermove.AdvanceRevision(ctx, cfg.Etcd, cfg.EtcdPrefix, above)
		},
		movedIn: holds.MovedIn,
		deleteAll: func(ctx context.Context, cluster logicalcluster.Name) error {
			if cfg.Etcd == nil {
				return nil
			}
			_, err := clustermove.DeleteAll(ctx, cfg.Etcd, cfg.EtcdPrefix, cluster)
			return err
		},
	}
	if err := cfg.LogicalClusters.AddIndexers(cache.Indexers{byClaim: claimIndex}); err != nil {
		return nil, err
	}
	if cfg.Workspaces != nil {
		if err := cfg.Workspaces.AddIndexers(cache.Indexers{byCluster: workspaceClusterIndex}); err != nil {
			return nil, err
		}
	}
	cfg.Migrations.AddHandler(c.loop.Handler(nil))
	// A claimed cluster's changes, and a claim left by a migration that
	// is gone, bring its migration back.
	cfg.LogicalClusters.AddHandler(c.loop.Handler(func(obj interface{}) (string, bool) {
		keys, _ := claimIndex(obj)
		if len(keys) == 0 {
			return "", false
		}
		return keys[0], true
	}))
	return c, nil
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers) }

// Claim is the value of the migrating annotation for a migration: its
// cluster and name, as kcp writes it.
func Claim(cluster logicalcluster.Name, name string) string {
	return cluster.Path().Join(name).String()
}

// claimIndex maps a LogicalCluster to the key of the migration claiming it.
func claimIndex(obj interface{}) ([]string, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	lc, ok := obj.(*corev1alpha1.LogicalCluster)
	if !ok {
		return nil, nil
	}
	p := logicalcluster.Path(lc.Annotations[migrationv1alpha1.MigratingAnnotationKey])
	parent, ok := p.Parent()
	if !ok {
		return nil, nil
	}
	cluster, ok := parent.Name()
	if !ok {
		return nil, nil
	}
	return []string{wildcardinformer.Key(cluster, "", p.Base())}, nil
}

func (c *Controller) reconcile(ctx context.Context, key string) error {
	cluster, _, name, ok := wildcardinformer.SplitKey(key)
	if !ok {
		return nil
	}
	claim := Claim(cluster, name)
	obj, exists, err := c.cfg.Migrations.Get(cluster, "", name)
	if err != nil {
		return err
	}
	if !exists {
		return c.cancel(ctx, key, claim)
	}
	replica := obj.(*migrationv1alpha1.LogicalClusterMigration)
	client, err := c.clientOf(replica)
	if err != nil {
		return err
	}
	// The replica may lag behind: act on the migration as its shard has it.
	live := &migrationv1alpha1.LogicalClusterMigration{}
	if err := client.Get(ctx, cluster, kcpclient.LogicalClusterMigrations, name, live); err != nil {
		if apierrors.IsNotFound(err) {
			return c.cancel(ctx, key, claim)
		}
		return err
	}
	ended := live.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhaseCompleted || live.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhaseFailed
	if live.Status.OriginShard == c.cfg.ShardName {
		// From the cut-over on, deleting the migration waits for its end:
		// half a move cannot be undone.
		// The replica does not change with the finalizers: go on with the
		// patched migration.
		switch {
		case !ended && live.Status.Conditions.IsTrue(migrationv1alpha1.LCMigrationStarted) && !hasFinalizer(live):
			if live, err = c.setFinalizer(ctx, client, cluster, live, true); err != nil {
				return err
			}
		case ended && hasFinalizer(live):
			if live, err = c.setFinalizer(ctx, client, cluster, live, false); err != nil {
				return err
			}
		}
	}
	if live.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhaseCompleted {
		// Also after a restart the origin holds what moved away: a
		// front-proxy still routing here is answered 429, not 403.
		if moved := logicalcluster.Name(live.Spec.LogicalCluster); live.Status.OriginShard == c.cfg.ShardName && c.logicalCluster(moved) == nil {
			c.origin.hold(moved)
		}
		return c.repointWorkspaces(ctx, live)
	}
	if live.Annotations[migrationv1alpha1.WithChildrenAnnotationKey] == "true" && c.origin.isOrigin(live) &&
		(live.Status.Phase == "" || live.Status.Phase == migrationv1alpha1.LogicalClusterMigrationPhasePreparing) {
		if err := c.moveChildren(ctx, client, cluster, live); err != nil {
			return err
		}
	}
	next := live.DeepCopy()
	var reconcileErr error
	switch {
	case c.origin.isOrigin(live):
		reconcileErr = c.origin.reconcile(ctx, claim, next)
	case c.destination.isDestination(live):
		reconcileErr = c.destination.reconcile(ctx, claim, next)
	default:
		return nil
	}
	if !apiequality.Semantic.DeepEqual(live.Status, next.Status) {
		next.APIVersion, next.Kind = migrationv1alpha1.SchemeGroupVersion.String(), "LogicalClusterMigration"
		if err := client.Update(ctx, cluster, kcpclient.LogicalClusterMigrations, name, next, &migrationv1alpha1.LogicalClusterMigration{}, "status"); err != nil {
			return fmt.Errorf("status of migration %s: %w", claim, err)
		}
		klog.FromContext(ctx).V(2).Info("Migration moved on", "migration", claim, "phase", next.Status.Phase)
	}
	return reconcileErr
}

// cancel gives back the clusters a deleted migration claimed here.
func (c *Controller) cancel(ctx context.Context, key, claim string) error {
	objs, err := c.cfg.LogicalClusters.ByIndex(byClaim, key)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		lc := obj.(*corev1alpha1.LogicalCluster)
		cluster, ok := logicalcluster.ObjectCluster(lc.Annotations)
		if !ok {
			continue
		}
		if err := c.origin.release(ctx, claim, cluster); err != nil {
			return err
		}
		if err := c.destination.release(ctx, claim, cluster); err != nil {
			return err
		}
		klog.FromContext(ctx).Info("Migration cancelled; the origin serves the logical cluster as before", "migration", claim, "logicalCluster", cluster)
	}
	return nil
}

// CutOverFinalizer keeps a migration from going away between the start of
// its cut-over and its end.
const CutOverFinalizer = "migration.shardplane.io/cut-over"

func hasFinalizer(m *migrationv1alpha1.LogicalClusterMigration) bool {
	for _, f := range m.Finalizers {
		if f == CutOverFinalizer {
			return true
		}
	}
	return false
}

// setFinalizer adds or removes CutOverFinalizer, at the migration's
// resource version.
func (c *Controller) setFinalizer(ctx context.Context, client *kcpclient.Client, cluster logicalcluster.Name, m *migrationv1alpha1.LogicalClusterMigration, on bool) (*migrationv1alpha1.LogicalClusterMigration, error) {
	finalizers := []string{}
	for _, f := range m.Finalizers {
		if f != CutOverFinalizer {
			finalizers = append(finalizers, f)
		}
	}
	if on {
		finalizers = append(finalizers, CutOverFinalizer)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": finalizers, "resourceVersion": m.ResourceVersion}})
	if err != nil {
		return nil, err
	}
	out := &migrationv1alpha1.LogicalClusterMigration{}
	if err := client.Patch(ctx, cluster, kcpclient.LogicalClusterMigrations, m.Name, types.MergePatchType, patch, out); err != nil {
		return nil, fmt.Errorf("finalizer of migration %s: %w", m.Name, err)
	}
	return out, nil
}

// byCluster indexes Workspaces by the logical cluster they point at.
const byCluster = "migrationCluster"

func workspaceClusterIndex(obj interface{}) ([]string, error) {
	ws, ok := obj.(*tenancyv1alpha1.Workspace)
	if !ok || ws.Spec.Cluster == "" {
		return nil, nil
	}
	return []string{ws.Spec.Cluster}, nil
}

// repointWorkspaces records the destination of a completed move on the
// moved cluster's Workspace, if its parent is on this shard: the
// workspace controller reads the LogicalCluster where it names.
func (c *Controller) repointWorkspaces(ctx context.Context, m *migrationv1alpha1.LogicalClusterMigration) error {
	if c.cfg.Workspaces == nil {
		return nil
	}
	objs, err := c.cfg.Workspaces.ByIndex(byCluster, m.Spec.LogicalCluster)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		ws := obj.(*tenancyv1alpha1.Workspace)
		parent, ok := logicalcluster.ObjectCluster(ws.Annotations)
		if !ok || ws.Annotations[corev1alpha1.ShardAnnotationKey] == m.Spec.DestinationShard {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{corev1alpha1.ShardAnnotationKey: m.Spec.DestinationShard}}})
		if err != nil {
			return err
		}
		if err := c.cfg.Local.Patch(ctx, parent, kcpclient.Workspaces, ws.Name, types.MergePatchType, patch, &tenancyv1alpha1.Workspace{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("point workspace %s at shard %s: %w", parent.Path().Join(ws.Name), m.Spec.DestinationShard, err)
		}
	}
	return nil
}

// dumpPage reads a page of a cluster's storage from its origin shard.
func (c *Controller) dumpPage(ctx context.Context, origin string, cluster logicalcluster.Name, continueFrom string) ([]clustermove.Entry, string, int64, error) {
	shard, err := c.cfg.Shards.Get(origin)
	if err != nil {
		return nil, "", 0, fmt.Errorf("origin shard %s: %w", origin, err)
	}
	client, err := c.cfg.ShardClient(shard)
	if err != nil {
		return nil, "", 0, err
	}
	dump := &migrationv1alpha1.LogicalClusterDump{
		TypeMeta: metav1.TypeMeta{APIVersion: migrationv1alpha1.SchemeGroupVersion.String(), Kind: "LogicalClusterDump"},
		Spec:     migrationv1alpha1.LogicalClusterDumpSpec{Continue: continueFrom},
	}
	out := &migrationv1alpha1.LogicalClusterDump{}
	if err := client.Create(ctx, cluster, kcpclient.LogicalClusterDumps, dump, out); err != nil {
		return nil, "", 0, err
	}
	entries := make([]clustermove.Entry, 0, len(out.Status.Entries))
	for _, e := range out.Status.Entries {
		entries = append(entries, clustermove.Entry{Key: e.Key, Value: e.Value})
	}
	revision, err := strconv.ParseInt(out.ResourceVersion, 10, 64)
	if err != nil {
		return nil, "", 0, fmt.Errorf("the origin's dump has no revision: %q", out.ResourceVersion)
	}
	return entries, out.Status.Continue, revision, nil
}

// clientOf returns a client of the shard that hosts a migration, named by
// its replica.
func (c *Controller) clientOf(replica *migrationv1alpha1.LogicalClusterMigration) (*kcpclient.Client, error) {
	name := replica.Annotations[cacheclient.ShardAnnotationKey]
	if name == "" || name == c.cfg.ShardName {
		return c.cfg.Local, nil
	}
	shard, err := c.cfg.Shards.Get(name)
	if err != nil {
		return nil, fmt.Errorf("shard %s of migration %s: %w", name, replica.Name, err)
	}
	return c.cfg.ShardClient(shard)
}

func (c *Controller) logicalCluster(cluster logicalcluster.Name) *corev1alpha1.LogicalCluster {
	obj, exists, err := c.cfg.LogicalClusters.Get(cluster, "", corev1alpha1.LogicalClusterName)
	if err != nil || !exists {
		return nil
	}
	return obj.(*corev1alpha1.LogicalCluster)
}

// setAnnotation patches an annotation of a LogicalCluster of this shard;
// "" removes it.
func (c *Controller) setAnnotation(ctx context.Context, cluster logicalcluster.Name, key, value string) error {
	return c.setAnnotations(ctx, cluster, map[string]string{key: value})
}

// setAnnotations patches annotations of a LogicalCluster of this shard in
// one write; a value "" removes its key.
func (c *Controller) setAnnotations(ctx context.Context, cluster logicalcluster.Name, values map[string]string) error {
	annotations := make(map[string]any, len(values))
	for k, v := range values {
		if v == "" {
			annotations[k] = nil
		} else {
			annotations[k] = v
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	return c.cfg.Local.Patch(ctx, cluster, kcpclient.LogicalClusters, corev1alpha1.LogicalClusterName, types.MergePatchType, patch, &corev1alpha1.LogicalCluster{})
}
