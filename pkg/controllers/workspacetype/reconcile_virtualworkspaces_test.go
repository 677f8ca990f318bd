package workspacetype

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

func shard(name, baseURL, vwURL string) *corev1alpha1.Shard {
	return &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1alpha1.ShardSpec{BaseURL: baseURL, VirtualWorkspaceURL: vwURL}}
}

func TestVirtualWorkspaceURLsOfEveryShard(t *testing.T) {
	shards := []*corev1alpha1.Shard{
		shard("shard-2", "https://s2:6443", ""),
		shard("root", "https://root:6443", "https://vw.root:6444/"),
	}
	for _, tc := range []struct {
		name                    string
		initializer, terminator bool
		want                    []tenancyv1alpha1.VirtualWorkspace
	}{
		{"neither", false, false, nil},
		{"initializer", true, false, []tenancyv1alpha1.VirtualWorkspace{
			{URL: "https://vw.root:6444/services/initializingworkspaces/abc:mine", Type: tenancyv1alpha1.VirtualWorkspaceTypeInitializing},
			{URL: "https://s2:6443/services/initializingworkspaces/abc:mine", Type: tenancyv1alpha1.VirtualWorkspaceTypeInitializing},
		}},
		{"both", true, true, []tenancyv1alpha1.VirtualWorkspace{
			{URL: "https://vw.root:6444/services/initializingworkspaces/abc:mine", Type: tenancyv1alpha1.VirtualWorkspaceTypeInitializing},
			{URL: "https://vw.root:6444/services/terminatingworkspaces/abc:mine", Type: tenancyv1alpha1.VirtualWorkspaceTypeTerminating},
			{URL: "https://s2:6443/services/initializingworkspaces/abc:mine", Type: tenancyv1alpha1.VirtualWorkspaceTypeInitializing},
			{URL: "https://s2:6443/services/terminatingworkspaces/abc:mine", Type: tenancyv1alpha1.VirtualWorkspaceTypeTerminating},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wt := &tenancyv1alpha1.WorkspaceType{
				ObjectMeta: metav1.ObjectMeta{Name: "mine", Annotations: map[string]string{logicalcluster.AnnotationKey: "abc"}},
				Spec:       tenancyv1alpha1.WorkspaceTypeSpec{Initializer: tc.initializer, Terminator: tc.terminator},
			}
			virtualWorkspacesReconciler{listShards: func() ([]*corev1alpha1.Shard, error) { return slices.Clone(shards), nil }}.reconcile(wt)
			if !slices.Equal(wt.Status.VirtualWorkspaces, tc.want) {
				t.Errorf("virtualWorkspaces %+v, want %+v", wt.Status.VirtualWorkspaces, tc.want)
			}
			if c := wt.Status.Conditions.Get(tenancyv1alpha1.WorkspaceTypeVirtualWorkspaceURLsReady); c == nil || c.Status != corev1.ConditionTrue {
				t.Errorf("condition %+v, want VirtualWorkspaceURLsReady=True", c)
			}
		})
	}
}

func TestVirtualWorkspaceURLsWithoutShardsAreNotReady(t *testing.T) {
	for name, list := range map[string]func() ([]*corev1alpha1.Shard, error){
		"none":  func() ([]*corev1alpha1.Shard, error) { return nil, nil },
		"error": func() ([]*corev1alpha1.Shard, error) { return nil, errors.New("boom") },
	} {
		wt := &tenancyv1alpha1.WorkspaceType{ObjectMeta: metav1.ObjectMeta{Name: "mine"}, Spec: tenancyv1alpha1.WorkspaceTypeSpec{Initializer: true}}
		virtualWorkspacesReconciler{listShards: list}.reconcile(wt)
		c := wt.Status.Conditions.Get(tenancyv1alpha1.WorkspaceTypeVirtualWorkspaceURLsReady)
		if c == nil || c.Status != corev1.ConditionFalse || c.Reason != tenancyv1alpha1.ErrorGeneratingURLsReason {
			t.Errorf("%s: condition %+v, want False %s", name, c, tenancyv1alpha1.ErrorGeneratingURLsReason)
		}
	}
}

func TestShardChangesRequeueEveryWorkspaceType(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	types := wildcardinformer.New(&cache.ListWatch{}, &tenancyv1alpha1.WorkspaceType{}, "test-workspacetypes")
	shards := wildcardinformer.New(&cache.ListWatch{}, &corev1alpha1.Shard{}, "test-shards")
	c := New(Config{WorkspaceTypes: types, Shards: shards})
	keys := make(chan string, 10)
	c.loop = loop.New("test-workspacetype", func(_ context.Context, key string) error {
		keys <- key
		return nil
	})
	for _, cluster := range []string{"a", "b"} {
		wt := &tenancyv1alpha1.WorkspaceType{ObjectMeta: metav1.ObjectMeta{Name: "t", Annotations: map[string]string{logicalcluster.AnnotationKey: cluster}}}
		if err := types.Indexer().Add(wt); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.loop.Run(ctx, 1)
	}()
	requeueAll{c: c, workspaceTypes: types}.OnUpdate(shard("root", "https://a", ""), shard("root", "https://b", ""))
	var got []string
	for len(got) < 2 {
		select {
		case k := <-keys:
			got = append(got, k)
		case <-ctx.Done():
			t.Fatalf("requeued %v, want both types", got)
		}
	}
	slices.Sort(got)
	if want := []string{wildcardinformer.Key("a", "", "t"), wildcardinformer.Key("b", "", "t")}; !slices.Equal(got, want) {
		t.Errorf("requeued %v, want %v", got, want)
	}
	cancel()
	<-done
}
