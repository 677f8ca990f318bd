package logicalcluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// TestDeletedObjectRequeuesItsCluster: the deletion of an object that
// held its cluster's deletion (an APIBinding and its finalizer) looks at
// the cluster's LogicalCluster again; adding or changing one does not.
func TestDeletedObjectRequeuesItsCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keys := make(chan string, 10)
	c := &Controller{}
	c.loop = loop.New("test-logicalcluster", func(_ context.Context, key string) error {
		keys <- key
		return nil
	})
	bindings := wildcardinformer.New(&cache.ListWatch{}, &apisv1alpha2.APIBinding{}, "test-apibindings")
	c.requeueOnDeletionOf(bindings)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.loop.Run(ctx, 1)
	}()

	b := &apisv1alpha2.APIBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenancy.kcp.io-abcde", Annotations: map[string]string{logicalcluster.AnnotationKey: "c1"}}}
	h := requeueOnDelete{c}
	h.OnAdd(b)
	h.OnUpdate(b, b)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: wildcardinformer.Key("c2", "", "other"), Obj: b})
	h.OnDelete(b)
	for _, want := range []string{wildcardinformer.Key("c2", "", "cluster"), wildcardinformer.Key("c1", "", "cluster")} {
		select {
		case got := <-keys:
			if got != want {
				t.Errorf("reconciled %q, want %q", got, want)
			}
		case <-ctx.Done():
			t.Fatalf("%s was never reconciled", want)
		}
	}
	cancel()
	<-done
	if len(keys) > 0 {
		t.Errorf("more reconciles than deletions: %q", <-keys)
	}
}

// TestDeletedObjectRequeuesOnlyAClusterBeingDeleted: the namespaces of a
// new cluster come and go with its bootstrap; only a cluster being deleted
// waits for them.
func TestDeletedObjectRequeuesOnlyAClusterBeingDeleted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keys := make(chan string, 10)
	c := &Controller{logicalClusters: wildcardinformer.New(&cache.ListWatch{}, &corev1alpha1.LogicalCluster{}, "test-logicalclusters")}
	c.loop = loop.New("test-logicalcluster", func(_ context.Context, key string) error {
		keys <- key
		return nil
	})
	now := metav1.Now()
	for _, lc := range []*corev1alpha1.LogicalCluster{
		{ObjectMeta: metav1.ObjectMeta{Name: "cluster", Annotations: map[string]string{logicalcluster.AnnotationKey: "live"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "cluster", DeletionTimestamp: &now, Annotations: map[string]string{logicalcluster.AnnotationKey: "doomed"}}},
	} {
		if err := c.logicalClusters.Indexer().Add(lc); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.loop.Run(ctx, 1)
	}()
	ns := func(cluster string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Annotations: map[string]string{logicalcluster.AnnotationKey: cluster}}}
	}
	h := requeueOnDelete{c}
	h.OnDelete(ns("live"))
	h.OnDelete(ns("unknown"))
	h.OnDelete(ns("doomed"))
	select {
	case got := <-keys:
		if want := wildcardinformer.Key("doomed", "", "cluster"); got != want {
			t.Errorf("reconciled %q, want %q", got, want)
		}
	case <-ctx.Done():
		t.Fatalf("the cluster being deleted was never reconciled")
	}
	cancel()
	<-done
	if len(keys) > 0 {
		t.Errorf("a cluster not being deleted was reconciled: %q", <-keys)
	}
}
