package shard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/shardplane/shardplane/pkg/apiextensions"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// staticInformer is a synced wildcard informer of list's items.
func staticInformer(t *testing.T, example runtime.Object, list runtime.Object) *wildcardinformer.Informer {
	t.Helper()
	lw := &cache.ListWatch{
		ListWithContextFunc:  func(context.Context, metav1.ListOptions) (runtime.Object, error) { return list, nil },
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
	}
	inf := wildcardinformer.New(lw, example, "test")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go inf.Run(ctx)
	if err := wildcardinformer.WaitForSync(ctx, inf); err != nil {
		t.Fatal(err)
	}
	return inf
}

func TestVirtualResourcesGoToTheReplicationViewOfTheExportsSlice(t *testing.T) {
	inCluster := func(cluster string) metav1.ObjectMeta {
		return metav1.ObjectMeta{ResourceVersion: "1", Annotations: map[string]string{logicalcluster.AnnotationKey: cluster}}
	}
	binding := apisv1alpha2.APIBinding{ObjectMeta: inCluster("consumer"), Spec: apisv1alpha2.APIBindingSpec{Reference: apisv1alpha2.BindingReference{
		Export: &apisv1alpha2.ExportBindingReference{Path: "root:provider", Name: "cached"},
	}}, Status: apisv1alpha2.APIBindingStatus{APIExportClusterName: "provider"}}
	binding.Name = "cached"
	export := apisv1alpha2.APIExport{ObjectMeta: inCluster("provider"), Spec: apisv1alpha2.APIExportSpec{Resources: []apisv1alpha2.ResourceSchema{{
		Group: "machines.svm.io", Name: "instances", Storage: apisv1alpha2.ResourceSchemaStorage{Virtual: &apisv1alpha2.ResourceSchemaStorageVirtual{
			Reference: apisv1alpha2.TypedLocalObjectReference{APIGroup: ptr.To("cache.kcp.io"), Kind: "ClusterCachedResourceEndpointSlice", Name: "instances-slice"},
		}},
	}}}}
	export.Name = "cached"
	bindings := staticInformer(t, &apisv1alpha2.APIBinding{}, &apisv1alpha2.APIBindingList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []apisv1alpha2.APIBinding{binding}})
	exports := staticInformer(t, &apisv1alpha2.APIExport{}, &apisv1alpha2.APIExportList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []apisv1alpha2.APIExport{export}})

	var gotPath, gotUser string
	views := http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		gotPath = req.URL.Path
		if u, ok := apirequest.UserFrom(req.Context()); ok {
			gotUser = u.GetName()
		}
	})
	handler := virtualResources(bindings, exports, nil, views)
	req := httptest.NewRequest(http.MethodGet, "/clusters/consumer/apis/machines.svm.io/v1alpha1/instances?watch=true", nil)
	req = req.WithContext(apirequest.WithRequestInfo(req.Context(), &apirequest.RequestInfo{
		IsResourceRequest: true, Verb: "watch", APIGroup: "machines.svm.io", APIVersion: "v1alpha1", Resource: "instances",
	}))
	handler(httptest.NewRecorder(), req, "consumer", apiextensions.BoundResource{Binding: "cached", Virtual: true})
	if want := "/services/replication/provider/instances-slice/clusters/consumer/apis/machines.svm.io/v1alpha1/instances"; gotPath != want {
		t.Errorf("sent to %q, want %q", gotPath, want)
	}
	if gotUser != virtualResourcesUser.Name {
		t.Errorf("sent as %q, want the shard's %q", gotUser, virtualResourcesUser.Name)
	}

	gotPath = ""
	other := httptest.NewRequest(http.MethodGet, "/apis/machines.svm.io/v1alpha1/others", nil)
	other = other.WithContext(apirequest.WithRequestInfo(other.Context(), &apirequest.RequestInfo{
		IsResourceRequest: true, Verb: "list", APIGroup: "machines.svm.io", APIVersion: "v1alpha1", Resource: "others",
	}))
	w := httptest.NewRecorder()
	handler(w, other, "consumer", apiextensions.BoundResource{Binding: "cached", Virtual: true})
	if gotPath != "" || w.Code != http.StatusServiceUnavailable {
		t.Errorf("a resource the export does not serve virtually: sent to %q, answered %d, want 503", gotPath, w.Code)
	}
}
