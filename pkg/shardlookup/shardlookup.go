// Package shardlookup finds the Shard objects that workspaces are scheduled
// to, in the root logical cluster: the root shard reads its own, a shard
// without root reads an informer of the root shard's (pkg/rootshard), and
// later the cache server's replicated copies, through the same interface.
package shardlookup

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// Source finds shards by name and lists them all.
type Source interface {
	// Get returns the named shard, or nil when it is not known.
	Get(name string) (*corev1alpha1.Shard, error)
	// List returns every known shard.
	List() ([]*corev1alpha1.Shard, error)
}

// Root reads the Shard objects of the root logical cluster from an informer
// of Shards: the shard's wildcard informer, or one of the root shard.
type Root struct {
	Informer *wildcardinformer.Informer
}

// Get implements Source.
func (r Root) Get(name string) (*corev1alpha1.Shard, error) {
	obj, exists, err := r.Informer.Get(logicalcluster.Root, "", name)
	if err != nil || !exists {
		return nil, err
	}
	return obj.(*corev1alpha1.Shard), nil
}

// List implements Source.
func (r Root) List() ([]*corev1alpha1.Shard, error) {
	objs, err := r.Informer.List(logicalcluster.Root, "")
	if err != nil {
		return nil, err
	}
	shards := make([]*corev1alpha1.Shard, 0, len(objs))
	for _, o := range objs {
		shards = append(shards, o.(*corev1alpha1.Shard))
	}
	return shards, nil
}

// SkipStatusUpdates wraps an informer handler of Shards for consumers of
// their spec and metadata: it drops updates that change only the status,
// which every shard rewrites each heartbeat.
func SkipStatusUpdates(h wildcardinformer.Handler) wildcardinformer.Handler {
	return skipStatusUpdates{h}
}

type skipStatusUpdates struct{ wildcardinformer.Handler }

func (s skipStatusUpdates) OnUpdate(oldObj, newObj interface{}) {
	o, ok1 := oldObj.(*corev1alpha1.Shard)
	n, ok2 := newObj.(*corev1alpha1.Shard)
	if ok1 && ok2 && apiequality.Semantic.DeepEqual(o.Spec, n.Spec) && apiequality.Semantic.DeepEqual(o.Labels, n.Labels) &&
		apiequality.Semantic.DeepEqual(o.Annotations, n.Annotations) && o.DeletionTimestamp.Equal(n.DeletionTimestamp) {
		return
	}
	s.Handler.OnUpdate(oldObj, newObj)
}

// InRoot tells whether an informer's object is a Shard of the root logical
// cluster, the only Shards workspaces are placed on: a tenant that binds
// the shards export may keep Shards of its own elsewhere.
func InRoot(obj interface{}) bool {
	s, ok := obj.(*corev1alpha1.Shard)
	if !ok {
		return false
	}
	cluster, ok := logicalcluster.ObjectCluster(s.Annotations)
	return ok && cluster == logicalcluster.Root
}
