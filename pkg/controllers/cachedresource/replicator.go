package cachedresource

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// replicator keeps the copies of one ClusterCachedResource's objects in
// step with the objects: an informer of the selected objects of the
// workspace, and a queue of object names to copy or to delete.
type replicator struct {
	// what it was started for; another spec starts another replicator.
	gvr      schema.GroupVersionResource
	selector string
	hash     string

	informer cache.SharedIndexInformer
	queue    workqueue.TypedRateLimitingInterface[string]
	cancel   context.CancelFunc
	done     chan struct{}
}

// replicatorConfig is what a replicator reads and writes.
type replicatorConfig struct {
	cluster  logicalcluster.Name
	name     string
	gvr      schema.GroupVersionResource
	selector string
	hash     string
	source   dynamic.NamespaceableResourceInterface
	cache    *cacheWriter
	// changed is called after each write, for the status counts.
	changed func()
}

func startReplicator(ctx context.Context, cfg replicatorConfig) *replicator {
	ctx, cancel := context.WithCancel(ctx)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = cfg.selector
			return cfg.source.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = cfg.selector
			return cfg.source.Watch(ctx, opts)
		},
	}
	r := &replicator{
		gvr: cfg.gvr, selector: cfg.selector, hash: cfg.hash,
		informer: cache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, cache.Indexers{}),
		queue:    workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		cancel:   cancel,
		done:     make(chan struct{}),
	}
	enqueue := func(obj interface{}) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			r.queue.Add(key)
		}
	}
	_, _ = r.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	go r.informer.RunWithContext(ctx)
	go func() {
		defer close(r.done)
		defer r.queue.ShutDown()
		if !cache.WaitForCacheSync(ctx.Done(), r.informer.HasSynced) {
			return
		}
		// Copies of objects deleted while nobody watched go now.
		r.removeOrphans(ctx, cfg)
		go func() {
			<-ctx.Done()
			r.queue.ShutDown()
		}()
		for r.next(ctx, cfg) {
		}
	}()
	return r
}

func (r *replicator) next(ctx context.Context, cfg replicatorConfig) bool {
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	obj, exists, err := r.informer.GetStore().GetByKey(key)
	if err == nil {
		if exists {
			err = cfg.cache.put(ctx, cfg.cluster, cfg.name, cfg.hash, cfg.gvr, obj.(*unstructured.Unstructured))
		} else {
			err = cfg.cache.delete(ctx, cfg.cluster, cfg.name, key)
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Copying an object to the cache server failed, retrying", "cluster", cfg.cluster, "cachedResource", cfg.name, "object", key, "err", err)
			r.queue.AddRateLimited(key)
		}
		return true
	}
	r.queue.Forget(key)
	cfg.changed()
	return true
}

// removeOrphans deletes the copies whose object is not selected any more.
func (r *replicator) removeOrphans(ctx context.Context, cfg replicatorConfig) {
	for ctx.Err() == nil {
		copies, err := cfg.cache.list(ctx, cfg.cluster, cfg.name)
		if err == nil {
			for i := range copies {
				if _, exists, _ := r.informer.GetStore().GetByKey(sourceName(&copies[i])); !exists {
					r.queue.Add(sourceName(&copies[i]))
				}
			}
			return
		}
		klog.FromContext(ctx).V(2).Info("Listing the copies in the cache server failed, retrying", "cluster", cfg.cluster, "cachedResource", cfg.name, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// local counts the selected objects; ok is false before the first list.
func (r *replicator) local() (int, bool) {
	if !r.informer.HasSynced() {
		return 0, false
	}
	return len(r.informer.GetStore().ListKeys()), true
}

func (r *replicator) stop() {
	r.cancel()
	<-r.done
}
