// Package partitionset generates the Partitions of PartitionSets: one per
// combination of the set's dimensions (shard label keys) over the labels
// of root's Shards that its shardSelector selects, kept in step as shards
// come, go and change their labels, as kcp's partitionset controller does.
package partitionset

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	topologyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/topology/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/shardlookup"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Config is what the controller reads and writes.
type Config struct {
	// PartitionSets and Partitions are the shard's wildcard informers.
	PartitionSets, Partitions *wildcardinformer.Informer
	// Shards is an informer of root's Shards (the shard's own or the cache
	// server's replicas).
	Shards *wildcardinformer.Informer
	// KCP writes Partitions and the sets' status, as the system.
	KCP *kcpclient.Client
}

// Controller reconciles every PartitionSet of the shard.
type Controller struct {
	loop       *loop.Loop
	getSet     func(cluster logicalcluster.Name, name string) (*topologyv1alpha1.PartitionSet, error)
	updateSet  func(ctx context.Context, cluster logicalcluster.Name, set *topologyv1alpha1.PartitionSet) error
	partitions *partitionsReconciler
	sets       *wildcardinformer.Informer
}

// New returns the controller and registers its handlers; call before the
// informers run.
func New(c Config) *Controller {
	shards := shardlookup.Root{Informer: c.Shards}
	ctrl := &Controller{
		sets: c.PartitionSets,
		getSet: func(cluster logicalcluster.Name, name string) (*topologyv1alpha1.PartitionSet, error) {
			obj, exists, err := c.PartitionSets.Get(cluster, "", name)
			if err != nil || !exists {
				return nil, err
			}
			return obj.(*topologyv1alpha1.PartitionSet), nil
		},
		updateSet: func(ctx context.Context, cluster logicalcluster.Name, set *topologyv1alpha1.PartitionSet) error {
			set.APIVersion, set.Kind = topologyv1alpha1.SchemeGroupVersion.String(), "PartitionSet"
			return c.KCP.Update(ctx, cluster, kcpclient.PartitionSets, set.Name, set, &topologyv1alpha1.PartitionSet{}, "status")
		},
		partitions: &partitionsReconciler{
			listShards: func(selector labels.Selector) ([]*corev1alpha1.Shard, error) {
				all, err := shards.List()
				if err != nil {
					return nil, err
				}
				var out []*corev1alpha1.Shard
				for _, s := range all {
					if selector.Matches(labels.Set(s.Labels)) {
						out = append(out, s)
					}
				}
				return out, nil
			},
			listPartitions: func(ctx context.Context, cluster logicalcluster.Name) ([]topologyv1alpha1.Partition, error) {
				list := &topologyv1alpha1.PartitionList{}
				if err := c.KCP.List(ctx, cluster, kcpclient.Partitions, list); err != nil {
					return nil, fmt.Errorf("list partitions: %w", err)
				}
				return list.Items, nil
			},
			createPartition: func(ctx context.Context, cluster logicalcluster.Name, p *topologyv1alpha1.Partition) error {
				return c.KCP.Create(ctx, cluster, kcpclient.Partitions, p, &topologyv1alpha1.Partition{})
			},
			deletePartition: func(ctx context.Context, cluster logicalcluster.Name, name string) error {
				return c.KCP.Delete(ctx, cluster, kcpclient.Partitions, name, &metav1.DeleteOptions{})
			},
		},
	}
	ctrl.loop = loop.New("partitionset", ctrl.reconcile)
	c.PartitionSets.AddHandler(ctrl.loop.Handler(nil))
	// A generated Partition changed or went: look at its set again.
	c.Partitions.AddHandler(ctrl.loop.Handler(func(obj interface{}) (string, bool) {
		p, ok := obj.(*topologyv1alpha1.Partition)
		if !ok {
			return "", false
		}
		cluster, ok := logicalcluster.ObjectCluster(p.Annotations)
		if !ok {
			return "", false
		}
		for _, o := range p.OwnerReferences {
			if o.Kind == "PartitionSet" {
				return wildcardinformer.Key(cluster, "", o.Name), true
			}
		}
		return "", false
	}))
	// Shards change the partitions of every set; sets are few.
	c.Shards.AddHandler(shardlookup.SkipStatusUpdates(ctrl.loop.Handler(func(obj interface{}) (string, bool) {
		if shardlookup.InRoot(obj) {
			ctrl.enqueueAll()
		}
		return "", false
	})))
	return ctrl
}

func (c *Controller) enqueueAll() {
	for _, key := range c.sets.Indexer().ListKeys() {
		c.loop.Enqueue(key)
	}
}

// Run runs the workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) { c.loop.Run(ctx, workers) }

func (c *Controller) reconcile(ctx context.Context, key string) error {
	cluster, _, name, ok := wildcardinformer.SplitKey(key)
	if !ok {
		return nil
	}
	set, err := c.getSet(cluster, name)
	if err != nil || set == nil || set.DeletionTimestamp != nil {
		return err
	}
	set = set.DeepCopy()
	old := set.Status.DeepCopy()
	reconcileErr := c.partitions.reconcile(ctx, cluster, set)
	if !apiequality.Semantic.DeepEqual(*old, set.Status) {
		if err := c.updateSet(ctx, cluster, set); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return reconcileErr
}
