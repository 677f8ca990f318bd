package cachedresource

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

func exportsInformer(t *testing.T, exports ...apisv1alpha2.APIExport) *wildcardinformer.Informer {
	t.Helper()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &apisv1alpha2.APIExportList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: exports}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}
	inf := wildcardinformer.New(lw, &apisv1alpha2.APIExport{}, "test-apiexports")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go inf.Run(ctx)
	if err := wildcardinformer.WaitForSync(ctx, inf); err != nil {
		t.Fatal(err)
	}
	return inf
}

func exportServing(cluster, name, kind, slice string) apisv1alpha2.APIExport {
	return apisv1alpha2.APIExport{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1", Annotations: map[string]string{logicalcluster.AnnotationKey: cluster}},
		Spec: apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{Group: "machines.svm.io", Name: "instances",
			Storage: apisv1alpha2.ResourceSchemaStorage{Virtual: &apisv1alpha2.ResourceSchemaStorageVirtual{
				Reference: apisv1alpha2.TypedLocalObjectReference{APIGroup: ptr.To(cachev1alpha1.GroupName), Kind: kind, Name: slice},
			}},
		}}},
	}
}

func TestExportReferencesTheSliceAsKcpsAPIExportValid(t *testing.T) {
	c := &Controller{cfg: Config{APIExports: []*wildcardinformer.Informer{exportsInformer(t,
		exportServing("provider", "good", "ClusterCachedResourceEndpointSlice", "instances"),
		exportServing("provider", "other-slice", "ClusterCachedResourceEndpointSlice", "others"),
		exportServing("provider", "other-kind", "CachedResourceEndpointSlice", "instances"),
		exportServing("elsewhere", "good", "ClusterCachedResourceEndpointSlice", "instances"),
	)}}}
	for _, tc := range []struct {
		export cachev1alpha1.ExportBindingReference
		want   bool
	}{
		{cachev1alpha1.ExportBindingReference{Name: "good"}, true},
		{cachev1alpha1.ExportBindingReference{Path: "provider", Name: "good"}, true},
		{cachev1alpha1.ExportBindingReference{Name: "missing"}, false},
		{cachev1alpha1.ExportBindingReference{Name: "other-slice"}, false},
		{cachev1alpha1.ExportBindingReference{Name: "other-kind"}, false},
		// An export elsewhere cannot name this workspace's slice.
		{cachev1alpha1.ExportBindingReference{Path: "elsewhere", Name: "good"}, false},
	} {
		slice := &cachev1alpha1.ClusterCachedResourceEndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "instances"}, Spec: cachev1alpha1.ClusterCachedResourceEndpointSliceSpec{APIExport: tc.export}}
		if got, msg := c.exportReferences("provider", slice); got != tc.want {
			t.Errorf("export %+v: valid %v (%s), want %v", tc.export, got, msg, tc.want)
		}
	}
}
