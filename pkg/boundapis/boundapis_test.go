package boundapis

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// bindingsInformer returns a synced wildcard informer over bindings.
func bindingsInformer(t *testing.T, bindings ...apisv1alpha2.APIBinding) *wildcardinformer.Informer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &apisv1alpha2.APIBindingList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: bindings}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}
	inf := wildcardinformer.New(lw, &apisv1alpha2.APIBinding{}, "test-apibindings")
	go inf.Run(ctx)
	if err := wildcardinformer.WaitForSync(ctx, inf); err != nil {
		t.Fatal(err)
	}
	return inf
}

func binding(cluster, name, exportCluster string, resources ...schema.GroupResource) apisv1alpha2.APIBinding {
	b := apisv1alpha2.APIBinding{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1", Annotations: map[string]string{logicalcluster.AnnotationKey: cluster}}}
	b.Status.APIExportClusterName = exportCluster
	for _, gr := range resources {
		b.Status.BoundResources = append(b.Status.BoundResources, apisv1alpha2.BoundAPIResource{Group: gr.Group, Resource: gr.Resource})
	}
	return b
}

func TestAdmissionSourceIsTheExportsClusterForBoundResources(t *testing.T) {
	cowboys := schema.GroupResource{Group: "wildwest.dev", Resource: "cowboys"}
	source := AdmissionSource(bindingsInformer(t,
		binding("consumer", "cowboys", "provider", cowboys),
		binding("other", "cowboys", "rival", cowboys),
	))
	for _, tc := range []struct {
		cluster logicalcluster.Name
		gr      schema.GroupResource
		want    logicalcluster.Name
	}{
		{"consumer", cowboys, "provider"},
		{"other", cowboys, "rival"},
		{"consumer", schema.GroupResource{Resource: "configmaps"}, "consumer"},
		{"unbound", cowboys, "unbound"},
	} {
		if got := source(tc.cluster, tc.gr); got != tc.want {
			t.Errorf("%s in %s is judged in %s, want %s", tc.gr, tc.cluster, got, tc.want)
		}
	}
}
