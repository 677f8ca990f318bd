package wildcardinformer

import (
	"context"
	"strings"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/apis/core"

	kstorage "github.com/shardplane/shardplane/pkg/storage"
)

// A shard's controllers select what they watch (the root CA config maps and
// default service accounts by name). The selected list/watch must stay
// in-process, or the informer takes the watch cache's maps for its own and
// shares their values in place: writes into the cache's maps while its
// watchers copy them, which killed a shard with "concurrent map iteration
// and map write".
func TestSelectedInProcessLeavesTheCachedMapsAlone(t *testing.T) {
	owner := `{"username":"selected-test"}`
	// Another object kept the value first: sharing makes the cached
	// object's value that object's string.
	kstorage.ShareValues(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"owner": strings.Clone(owner), "x": "y"}}})
	cached := &core.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "token", Namespace: "default", ResourceVersion: "5",
			Annotations: map[string]string{"kcp.io/cluster": "a", "owner": strings.Clone(owner)}},
		Type: core.SecretTypeServiceAccountToken,
	}
	value := unsafe.StringData(cached.Annotations["owner"])
	s := &internalSecrets{cached: []*core.Secret{cached}}
	i := New(Selected(internalSecretsLW(s).(cache.ListerWatcher), fields.OneTermEqualSelector("type", string(core.SecretTypeServiceAccountToken))), &corev1.Secret{}, "test")
	if !i.inProcess {
		t.Error("informer over a selected InProcessInternal does not know its objects are the watch cache's")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go i.Run(ctx)
	if err := WaitForSync(ctx, i); err != nil {
		t.Fatal(err)
	}
	obj, exists, _ := i.Get("a", "default", "token")
	if !exists || obj.(*corev1.Secret).Annotations["owner"] != owner {
		t.Fatalf("informer holds %v (exists %v), want the secret", obj, exists)
	}
	if unsafe.StringData(cached.Annotations["owner"]) != value {
		t.Fatal("the informer wrote into the watch cache's annotations")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.opts) == 0 || s.opts[0].FieldSelector.String() != "type=kubernetes.io/service-account-token" {
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
