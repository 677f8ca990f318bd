// Package loop runs a controller's work queue: keys in, reconcile out, with
// rate-limited retries. Every controller of the shard is one Loop serving all
// logical clusters.
package loop

import (
	"context"
	"errors"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// RequeueAfter asks the loop to look at a key again after a delay without
// counting it as a failure.
type RequeueAfter time.Duration

func (r RequeueAfter) Error() string { return "requeue after " + time.Duration(r).String() }

// Loop is a named work queue with a reconcile function.
type Loop struct {
	name      string
	queue     workqueue.TypedRateLimitingInterface[string]
	reconcile func(ctx context.Context, key string) error
}

// New returns a loop; keys are wildcardinformer keys (cluster|ns/name).
func New(name string, reconcile func(ctx context.Context, key string) error) *Loop {
	return &Loop{
		name: name,
		// Per-key backoff only: the default controller limiter also caps all
		// retries at 10/s, which serializes a shard-wide burst of benign
		// update conflicts (thousands of workspaces) behind one bucket.
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 30*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name},
		),
		reconcile: reconcile,
	}
}

// Enqueue adds a key.
func (l *Loop) Enqueue(key string) { l.queue.Add(key) }

// EnqueueAfter adds a key after a delay.
func (l *Loop) EnqueueAfter(key string, d time.Duration) { l.queue.AddAfter(key, d) }

// Handler returns an informer handler that enqueues the key of every changed
// object, mapped through keyOf (nil: the object's own key).
func (l *Loop) Handler(keyOf func(obj interface{}) (string, bool)) wildcardinformer.Handler {
	return handler{l: l, keyOf: keyOf}
}

type handler struct {
	l     *Loop
	keyOf func(obj interface{}) (string, bool)
}

func (h handler) add(obj interface{}) {
	if h.keyOf != nil {
		if key, ok := h.keyOf(obj); ok {
			h.l.Enqueue(key)
		}
		return
	}
	if key, err := wildcardinformer.KeyFunc(obj); err == nil {
		h.l.Enqueue(key)
	}
}

func (h handler) OnAdd(obj interface{})       { h.add(obj) }
func (h handler) OnUpdate(_, obj interface{}) { h.add(obj) }
func (h handler) OnDelete(obj interface{})    { h.add(obj) }

// Run processes keys with the given number of workers until ctx is done.
func (l *Loop) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx).WithValues("controller", l.name)
	ctx = klog.NewContext(ctx, logger)
	go func() {
		<-ctx.Done()
		l.queue.ShutDown()
	}()
	for i := 0; i < workers; i++ {
		go func() {
			for l.next(ctx) {
			}
		}()
	}
	<-ctx.Done()
}

func (l *Loop) next(ctx context.Context) bool {
	key, quit := l.queue.Get()
	if quit {
		return false
	}
	defer l.queue.Done(key)
	err := l.reconcile(ctx, key)
	var after RequeueAfter
	switch {
	case err == nil:
		l.queue.Forget(key)
	case errors.As(err, &after):
		l.queue.Forget(key)
		l.queue.AddAfter(key, time.Duration(after))
	default:
		klog.FromContext(ctx).V(2).Info("reconcile failed, will retry", "key", key, "err", err)
		l.queue.AddRateLimited(key)
	}
	return true
}
