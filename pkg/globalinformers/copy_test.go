package globalinformers

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// fakeRoot is a source (the cache server) whose Shards can be listed, or not.
type fakeRoot struct {
	mu     sync.Mutex
	shards []string
	down   bool
}

func (f *fakeRoot) set(down bool, shards ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down, f.shards = down, shards
}

func (f *fakeRoot) listWatch() cache.ListerWatcher {
	return &cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.down {
				return nil, errors.New("connection refused")
			}
			list := &corev1alpha1.ShardList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}
			for _, name := range f.shards {
				list.Items = append(list.Items, corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{
					Name: name, Annotations: map[string]string{logicalcluster.AnnotationKey: "root"},
				}, Spec: corev1alpha1.ShardSpec{BaseURL: "https://" + name}})
			}
			return list, nil
		},
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.down {
				return nil, errors.New("connection refused")
			}
			return watch.NewFake(), nil
		},
	}
}

// startCopied runs an informer of Shards over root that keeps its copy in
// file, as a shard process does, until the returned stop is called.
func startCopied(t *testing.T, root *fakeRoot, file string) (*wildcardinformer.Informer, *copiedListWatch, context.CancelFunc) {
	t.Helper()
	lw := &copiedListWatch{
		ListerWatcher: root.listWatch(),
		file:          file,
		newList:       func() runtime.Object { return &corev1alpha1.ShardList{} },
		dirty:         make(chan struct{}, 1),
	}
	inf := wildcardinformer.New(lw, &corev1alpha1.Shard{}, "test-shards")
	lw.informer = inf
	inf.AddHandler(lw)
	ctx, cancel := context.WithCancel(context.Background())
	go inf.Run(ctx)
	go lw.keep(ctx)
	return inf, lw, cancel
}

func shardNames(inf *wildcardinformer.Informer) map[string]bool {
	objs, _ := inf.List(logicalcluster.Root, "")
	names := map[string]bool{}
	for _, o := range objs {
		names[o.(*corev1alpha1.Shard).Name] = true
	}
	return names
}

func TestCopyOfRootsObjectsServesWhileRootIsAway(t *testing.T) {
	file := filepath.Join(t.TempDir(), "copies", "shards.json")
	root := &fakeRoot{}

	// Root away and nothing copied yet: the informer never lists.
	root.set(true)
	_, lw, stop := startCopied(t, root, file)
	if _, err := lw.List(metav1.ListOptions{}); err == nil {
		t.Fatal("list with root away and no copy succeeded, want an error")
	}
	stop()

	// Root answers: the informer lists it and the copy is written.
	root.set(false, "root", "beta")
	_, lw, stop = startCopied(t, root, file)
	if err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		saved, err := lw.load()
		return err == nil && len(saved.(*corev1alpha1.ShardList).Items) == 2, nil
	}); err != nil {
		t.Fatalf("the copy never held both shards: %v", err)
	}
	stop()

	// A new process while root is away starts from the copy, and does not
	// watch before root has been listed again.
	root.set(true)
	inf, lw, stop := startCopied(t, root, file)
	defer stop()
	if err := wildcardinformer.WaitForSync(ctxTimeout(t), inf); err != nil {
		t.Fatalf("informer did not sync from the copy: %v", err)
	}
	if got := shardNames(inf); !got["root"] || !got["beta"] || len(got) != 2 {
		t.Fatalf("shards from the copy: %v, want root and beta", got)
	}
	if obj, _, _ := inf.Get(logicalcluster.Root, "", "beta"); obj.(*corev1alpha1.Shard).Spec.BaseURL != "https://beta" {
		t.Errorf("beta from the copy: %+v, want its baseURL", obj)
	}
	if _, err := lw.Watch(metav1.ListOptions{}); !errors.Is(err, errListSourceFirst) {
		t.Errorf("watch after a list of the copy: %v, want %v", err, errListSourceFirst)
	}
	// Relisting while root is still away keeps what the informer holds
	// instead of serving the copy again.
	if _, err := lw.List(metav1.ListOptions{}); err == nil {
		t.Errorf("second list with root away served the copy again, want root's error")
	}
	if _, err := lw.Watch(metav1.ListOptions{}); !errors.Is(err, errListSourceFirst) {
		t.Errorf("watch before root was listed: %v, want %v", err, errListSourceFirst)
	}

	// Root returns without beta: listing root again drops it.
	root.set(false, "root")
	list, err := lw.List(metav1.ListOptions{})
	if err != nil || len(list.(*corev1alpha1.ShardList).Items) != 1 {
		t.Fatalf("list after root returned: %v, %v; want root's one shard", list, err)
	}
	w, err := lw.Watch(metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch after root returned: %v", err)
	}
	w.Stop()
}

func ctxTimeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}
