// Package drain moves every workspace off a cordoned Shard that carries
// corev1alpha1.ShardDrainAnnotationKey (ours: kcp has no drain).
//
// Every shard runs the controller for itself: only a shard sees its own
// logical clusters (reads across clusters are system:masters' only). For
// each of them but root and the system's, it creates a
// LogicalClusterMigration in root, labelled with ShardLabel, to the shard
// the scheduler would place a new workspace on, at most max-moves at a
// time, and reports on its Shard with the Drained condition; True says
// that nothing is left and the Shard may be deleted.
package drain

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	migrationv1alpha1 "github.com/shardplane/shardplane/pkg/apis/migration/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/shardlookup"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// DefaultMaxMoves is how many moves a drain runs at once when its Shard
// does not say.
const DefaultMaxMoves = 4

// byShard indexes root's LogicalClusterMigrations by the shard whose drain
// created them (ShardLabel).
const byShard = "drain.shardplane.io/shard"

// Config is what the controller needs.
type Config struct {
	// ShardName is this shard, the one the controller drains.
	ShardName string
	// Shards are root's; ShardEvents is the informer behind them.
	Shards      shardlookup.Source
	ShardEvents *wildcardinformer.Informer
	// LogicalClusters are this shard's.
	LogicalClusters *wildcardinformer.Informer
	// Migrations are every shard's LogicalClusterMigrations, as the cache
	// server replicates them (the migration controller's informer).
	Migrations *wildcardinformer.Informer
	// Root writes into the root logical cluster on the root shard.
	Root *kcpclient.Client
	// MaxMoves is the default of ShardDrainMaxMovesAnnotationKey.
	MaxMoves int
}

// Controller drains its shard on request.
type Controller struct {
	cfg     Config
	loop    *loop.Loop
	created created
}

// New returns the controller and registers its handlers and index; call
// it before the informers run.
func New(cfg Config) (*Controller, error) {
	if cfg.MaxMoves <= 0 {
		cfg.MaxMoves = DefaultMaxMoves
	}
	c := &Controller{cfg: cfg}
	c.loop = loop.New("drain", c.reconcile)
	if err := cfg.Migrations.AddIndexers(cache.Indexers{byShard: drainIndex}); err != nil {
		return nil, err
	}
	// Any shard's change may make room for a move, or take it away.
	cfg.ShardEvents.AddHandler(c.loop.Handler(func(obj interface{}) (string, bool) {
		if s, ok := obj.(*corev1alpha1.Shard); ok && shardlookup.InRoot(s) {
			return cfg.ShardName, true
		}
		return "", false
	}))
	// A cluster leaving (or arriving) may end the drain or free a slot.
	cfg.LogicalClusters.AddHandler(c.loop.Handler(func(interface{}) (string, bool) { return cfg.ShardName, true }))
	// So may a move of this drain that progresses, ends or goes.
	cfg.Migrations.AddHandler(c.loop.Handler(func(obj interface{}) (string, bool) {
		if shards, _ := drainIndex(obj); len(shards) == 1 && shards[0] == cfg.ShardName {
			return cfg.ShardName, true
		}
		return "", false
	}))
	return c, nil
}

// drainIndex maps a migration in root to the shard whose drain created it.
func drainIndex(obj interface{}) ([]string, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(*migrationv1alpha1.LogicalClusterMigration)
	if !ok {
		return nil, nil
	}
	shard := m.Labels[ShardLabel]
	if cluster, _ := logicalcluster.ObjectCluster(m.Annotations); cluster != logicalcluster.Root || shard == "" {
		return nil, nil
	}
	return []string{shard}, nil
}

// Run works the queue until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers) }

func (c *Controller) reconcile(ctx context.Context, name string) error {
	shard, err := c.cfg.Shards.Get(name)
	if err != nil || shard == nil {
		return nil
	}
	if shard.Annotations[corev1alpha1.ShardDrainAnnotationKey] != "true" {
		if shard.Status.Conditions.Get(corev1alpha1.ShardDrained) == nil {
			return nil
		}
		// The drain was called off: its report goes; moves under way end.
		return c.setCondition(ctx, shard, nil)
	}
	if _, cordoned := shard.Annotations[corev1alpha1.ShardUnschedulableAnnotationKey]; !cordoned {
		return c.setCondition(ctx, shard, &conditionsv1alpha1.Condition{
			Type: corev1alpha1.ShardDrained, Status: corev1.ConditionFalse, Severity: conditionsv1alpha1.ConditionSeverityWarning,
			Reason:  corev1alpha1.ShardReasonDrainNotCordoned,
			Message: fmt.Sprintf("cordon the shard (annotation %s) to drain it: new workspaces would keep arriving", corev1alpha1.ShardUnschedulableAnnotationKey),
		})
	}
	maxMoves, err := maxMovesOf(shard, c.cfg.MaxMoves)
	if err != nil {
		return c.setCondition(ctx, shard, &conditionsv1alpha1.Condition{
			Type: corev1alpha1.ShardDrained, Status: corev1.ConditionFalse, Severity: conditionsv1alpha1.ConditionSeverityWarning,
			Reason: corev1alpha1.ShardReasonDrainBlocked, Message: err.Error(),
		})
	}

	objs, err := c.cfg.Migrations.ByIndex(byShard, name)
	if err != nil {
		return err
	}
	var seen []*migrationv1alpha1.LogicalClusterMigration
	for _, obj := range objs {
		seen = append(seen, obj.(*migrationv1alpha1.LogicalClusterMigration))
	}
	mine := c.created.merge(seen, time.Now())
	shards, err := c.cfg.Shards.List()
	if err != nil {
		return err
	}
	moves, cond := plan(name, c.residents(), mine, shards, maxMoves)
	for _, mv := range moves {
		m := &migrationv1alpha1.LogicalClusterMigration{
			TypeMeta: metav1.TypeMeta{APIVersion: migrationv1alpha1.SchemeGroupVersion.String(), Kind: "LogicalClusterMigration"},
			ObjectMeta: metav1.ObjectMeta{
				Name:   migrationName(name, mv.cluster, mv.attempt),
				Labels: map[string]string{ShardLabel: name, AttemptLabel: strconv.Itoa(mv.attempt)},
			},
			Spec: migrationv1alpha1.LogicalClusterMigrationSpec{LogicalCluster: string(mv.cluster), DestinationShard: mv.destination},
		}
		out := &migrationv1alpha1.LogicalClusterMigration{}
		if err := c.cfg.Root.Create(ctx, logicalcluster.Root, kcpclient.LogicalClusterMigrations, m, out); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create migration %s: %w", m.Name, err)
		}
		c.created.add(m, time.Now())
		klog.FromContext(ctx).Info("Draining: moving a logical cluster", "shard", name, "logicalCluster", mv.cluster, "destination", mv.destination, "attempt", mv.attempt)
	}
	return c.setCondition(ctx, shard, &cond)
}

// residents are the logical clusters a drain moves: this shard's, but
// root, the system's and copies of clusters moving in. A cluster that
// moved away but is not cleaned up yet is still here, leaving: the shard
// must run until its clean-up is done.
func (c *Controller) residents() []resident {
	var out []resident
	for _, obj := range c.cfg.LogicalClusters.Indexer().List() {
		lc, ok := obj.(*corev1alpha1.LogicalCluster)
		if !ok {
			continue
		}
		cluster, ok := logicalcluster.ObjectCluster(lc.Annotations)
		if !ok || cluster == logicalcluster.Root || cluster.IsSystem() {
			continue
		}
		// The origin's handed-over copy keeps its hold mark; a copy moving
		// in has none.
		leaving := lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] != "" && lc.Annotations[migrationv1alpha1.WritesHeldAnnotationKey] != ""
		if lc.Annotations[migrationv1alpha1.ServedElsewhereAnnotationKey] != "" && !leaving {
			continue
		}
		out = append(out, resident{cluster: cluster, deleting: lc.DeletionTimestamp != nil, leaving: leaving})
	}
	return out
}

// maxMovesOf reads ShardDrainMaxMovesAnnotationKey, def when unset.
func maxMovesOf(shard *corev1alpha1.Shard, def int) (int, error) {
	v, ok := shard.Annotations[corev1alpha1.ShardDrainMaxMovesAnnotationKey]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("annotation %s=%q is not a positive integer", corev1alpha1.ShardDrainMaxMovesAnnotationKey, v)
	}
	return n, nil
}

// setCondition writes the Drained condition (nil: removes it) on the
// Shard in root, read fresh: the shard's status reporter writes it too.
// Nothing is read or written when the informer's copy, cached, has it
// already: a later change of the Shard brings the drain back.
func (c *Controller) setCondition(ctx context.Context, cached *corev1alpha1.Shard, cond *conditionsv1alpha1.Condition) error {
	if !withDrained(cached.DeepCopy(), cond) {
		return nil
	}
	shard := &corev1alpha1.Shard{}
	if err := c.cfg.Root.Get(ctx, logicalcluster.Root, kcpclient.Shards, cached.Name, shard); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if !withDrained(shard, cond) {
		return nil
	}
	shard.APIVersion, shard.Kind = corev1alpha1.SchemeGroupVersion.String(), "Shard"
	return c.cfg.Root.Update(ctx, logicalcluster.Root, kcpclient.Shards, shard.Name, shard, &corev1alpha1.Shard{}, "status")
}

// withDrained sets the Drained condition (nil: removes it) on shard and
// tells whether that changed its status.
func withDrained(shard *corev1alpha1.Shard, cond *conditionsv1alpha1.Condition) bool {
	before := shard.Status.DeepCopy()
	if cond == nil {
		var kept conditionsv1alpha1.Conditions
		for _, c := range shard.Status.Conditions {
			if c.Type != corev1alpha1.ShardDrained {
				kept = append(kept, c)
			}
		}
		shard.SetConditions(kept)
	} else {
		conditionsv1alpha1.Set(shard, *cond)
	}
	return !apiequality.Semantic.DeepEqual(*before, shard.Status)
}
