package shard

import (
	"context"
	"errors"
	"testing"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/loopback"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// logicalClusterStorage lists one LogicalCluster and records who asked.
type logicalClusterStorage struct {
	ctxs chan context.Context
}

func (s logicalClusterStorage) New() runtime.Object { return &corev1alpha1.LogicalCluster{} }

func (s logicalClusterStorage) Destroy() {}

func (s logicalClusterStorage) NewList() runtime.Object { return &corev1alpha1.LogicalClusterList{} }

func (s logicalClusterStorage) ConvertToTable(context.Context, runtime.Object, runtime.Object) (*metav1.Table, error) {
	return nil, errors.New("not implemented")
}

func (s logicalClusterStorage) List(ctx context.Context, _ *metainternalversion.ListOptions) (runtime.Object, error) {
	s.ctxs <- ctx
	lc := corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName, ResourceVersion: "3",
		Annotations: map[string]string{logicalcluster.AnnotationKey: "abc", logicalcluster.PathAnnotationKey: "root:abc"}}}
	return &corev1alpha1.LogicalClusterList{ListMeta: metav1.ListMeta{ResourceVersion: "3"}, Items: []corev1alpha1.LogicalCluster{lc}}, nil
}

func (s logicalClusterStorage) Watch(ctx context.Context, _ *metainternalversion.ListOptions) (watch.Interface, error) {
	return watch.NewFake(), nil
}

func TestKCPInformersListTheInstalledStorageOfAllClustersAsTheShard(t *testing.T) {
	storages := &inProcessStorage{}
	i, err := newKCPInformers(storages)
	if err != nil {
		t.Fatal(err)
	}
	storage := logicalClusterStorage{ctxs: make(chan context.Context, 10)}
	storages.install(func(gvr schema.GroupVersionResource) rest.Storage {
		if gvr == kcpclient.LogicalClusters {
			return storage
		}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go i.logicalClusters.Run(ctx)
	if err := wildcardinformer.WaitForSync(ctx, i.logicalClusters); err != nil {
		t.Fatal(err)
	}
	listed := <-storage.ctxs
	if cluster, _ := logicalcluster.ClusterFromContext(listed); cluster != logicalcluster.Wildcard {
		t.Fatalf("listed in cluster %q, want all", cluster)
	}
	if u, ok := genericapirequest.UserFrom(listed); !ok || u.GetName() != loopback.ShardUser.GetName() {
		t.Fatalf("listed as %v, want the shard", u)
	}
	if info, ok := genericapirequest.RequestInfoFrom(listed); !ok || info.Verb != "list" || info.Resource != "logicalclusters" {
		t.Fatalf("request info %+v, want a list of logicalclusters", info)
	}
	if got, ok := i.resolvePath("root:abc"); !ok || got != "abc" {
		t.Fatalf("resolvePath(root:abc) = %q, %v; want abc from the listed LogicalCluster", got, ok)
	}
}
