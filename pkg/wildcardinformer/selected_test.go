package wildcardinformer

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/core"

	kstorage "github.com/kplane-dev/kplane/pkg/storage"
)

// internalConfigMaps stands for the REST storage of config maps, whose
// watch cache holds internal objects.
type internalConfigMaps struct {
	mu     sync.Mutex
	cached []*core.ConfigMap
	opts   []*metainternalversion.ListOptions
}

func (s *internalConfigMaps) NewList() runtime.Object { return &core.ConfigMapList{} }

func (s *internalConfigMaps) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, errors.New("not implemented")
}

func (s *internalConfigMaps) List(_ context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts = append(s.opts, opts)
	// As the cacher lists: each item a struct of the list's own, its maps
	// the cached object's.
	list := &core.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}
	for _, o := range s.cached {
		list.Items = append(list.Items, *o)
	}
	return list, nil
}

func (s *internalConfigMaps) Watch(_ context.Context, opts *metainternalversion.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts = append(s.opts, opts)
	return watch.NewFakeWithChanSize(10, false), nil
}

// A shard's controllers select what they watch (the root CA config maps by
// name). The selected list/watch must stay in-process, or the informer takes
// the watch cache's maps for its own and shares their values in place:
// writes into the cache's maps while its watchers copy them, which killed
// a shard with "concurrent map iteration and map write".
func TestSelectedInProcessLeavesTheCachedMapsAlone(t *testing.T) {
	ca := "-----BEGIN CERTIFICATE-----\n" + strings.Repeat("selected", 16) + "\n-----END CERTIFICATE-----\n"
	kstorage.ShareValue(ca)
	cached := &core.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "default", ResourceVersion: "5",
			Annotations: map[string]string{"kcp.io/cluster": "a"}},
		Data: map[string]string{"ca.crt": strings.Clone(ca)},
	}
	value := unsafe.StringData(cached.Data["ca.crt"])
	s := &internalConfigMaps{cached: []*core.ConfigMap{cached}}
	all := InProcessInternal(corev1.SchemeGroupVersion.WithResource("configmaps"), corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		legacyscheme.Scheme, func() Storage { return s }, func(ctx context.Context, _ string) context.Context { return ctx })
	i := New(Selected(all, fields.OneTermEqualSelector("metadata.name", "kube-root-ca.crt")), &corev1.ConfigMap{}, "test")
	if !i.inProcess {
		t.Error("informer over a selected InProcessInternal does not know its objects are the watch cache's")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go i.Run(ctx)
	if err := WaitForSync(ctx, i); err != nil {
		t.Fatal(err)
	}
	obj, exists, _ := i.Get("a", "default", "kube-root-ca.crt")
	if !exists || obj.(*corev1.ConfigMap).Data["ca.crt"] != ca {
		t.Fatalf("informer holds %v (exists %v), want the config map", obj, exists)
	}
	if unsafe.StringData(cached.Data["ca.crt"]) != value {
		t.Fatal("the informer wrote into the watch cache's data map")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.opts) == 0 || s.opts[0].FieldSelector.String() != "metadata.name=kube-root-ca.crt" {
		t.Fatalf("the storage was listed with %+v, want the selector", s.opts)
	}
}

func TestSelectedWrapsOtherListWatches(t *testing.T) {
	var got []string
	lw := &cache.ListWatch{
		ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
			got = append(got, o.FieldSelector)
			return &corev1.ConfigMapList{}, nil
		},
		WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
			got = append(got, o.FieldSelector)
			return watch.NewFake(), nil
		},
	}
	if Selected(lw, fields.Everything()) != cache.ListerWatcher(lw) {
		t.Fatal("an empty selector wrapped the list/watch")
	}
	selected := Selected(lw, fields.OneTermEqualSelector("metadata.name", "x")).(cache.ListerWatcherWithContext)
	if _, err := selected.ListWithContext(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := selected.WatchWithContext(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	if len(got) != 2 || got[0] != "metadata.name=x" || got[1] != "metadata.name=x" {
		t.Fatalf("selectors passed: %q", got)
	}
}
