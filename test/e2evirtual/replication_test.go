package e2evirtual

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/system"
	"github.com/shardplane/shardplane/test/framework"
)

// TestReplicationViewOfTheVirtualWorkspacesServer: with the views in
// their own processes, the endpoint slice of a ClusterCachedResource on
// the second shard names that shard's views behind the front-proxy, and
// its virtual-workspaces server (reading the cache server through
// --cache-kubeconfig) lists the copies, follows a deletion and refuses
// writes, as kcp's replication virtual workspace.
func TestReplicationViewOfTheVirtualWorkspacesServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	second := system.ShardName(1)
	cluster := organization(ctx, t, "replication", second)
	admin := kcpClient(t, sys.AdminConfig(t, ""))
	instances := framework.InstallInstances(ctx, t, sys.AdminConfig(t, string(cluster)))
	for i := 1; i <= 3; i++ {
		if _, err := instances.Create(ctx, framework.Instance(fmt.Sprintf("vm-%d", i), "basic", nil), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create instance: %v", err)
		}
	}
	cr := &cachev1alpha1.ClusterCachedResource{
		TypeMeta:   metav1.TypeMeta{APIVersion: cachev1alpha1.SchemeGroupVersion.String(), Kind: "ClusterCachedResource"},
		ObjectMeta: metav1.ObjectMeta{Name: "instances"},
		Spec: cachev1alpha1.ClusterCachedResourceSpec{GroupVersionResource: cachev1alpha1.GroupVersionResource{
			Group: framework.InstancesGVR.Group, Version: framework.InstancesGVR.Version, Resource: framework.InstancesGVR.Resource,
		}},
	}
	if err := admin.Create(ctx, cluster, kcpclient.ClusterCachedResources, cr, &cachev1alpha1.ClusterCachedResource{}); err != nil {
		t.Fatalf("create ClusterCachedResource: %v", err)
	}
	slice := &cachev1alpha1.ClusterCachedResourceEndpointSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: cachev1alpha1.SchemeGroupVersion.String(), Kind: "ClusterCachedResourceEndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: "instances"},
		Spec: cachev1alpha1.ClusterCachedResourceEndpointSliceSpec{
			ClusterCachedResource: cachev1alpha1.ClusterCachedResourceReference{Name: "instances"},
			APIExport:             cachev1alpha1.ExportBindingReference{Name: "compute"},
		},
	}
	if err := admin.Create(ctx, cluster, kcpclient.ClusterCachedResourceEndpointSlices, slice, &cachev1alpha1.ClusterCachedResourceEndpointSlice{}); err != nil {
		t.Fatalf("create endpoint slice: %v", err)
	}
	wantURL := sys.URL(t) + "/shards/" + second + "/services/replication/" + string(cluster) + "/instances"
	framework.Eventually(t, func(ctx context.Context) error {
		if err := admin.Get(ctx, cluster, kcpclient.ClusterCachedResourceEndpointSlices, "instances", slice); err != nil {
			return err
		}
		if eps := slice.Status.ClusterCachedResourceEndpoints; len(eps) != 1 || eps[0].URL != wantURL {
			return fmt.Errorf("status %+v", slice.Status)
		}
		return nil
	}, "endpoint slice lists %s", wantURL)

	cfg := rest.CopyConfig(sys.AdminConfig(t, ""))
	cfg.Host = wantURL
	view := dynamic.NewForConfigOrDie(cfg).Resource(framework.InstancesGVR)
	count := func(n int) {
		t.Helper()
		framework.Eventually(t, func(ctx context.Context) error {
			list, err := view.List(ctx, metav1.ListOptions{})
			if err != nil {
				return err
			}
			if len(list.Items) != n {
				return fmt.Errorf("%d instances", len(list.Items))
			}
			return nil
		}, "the view lists %d instances", n)
	}
	count(3)
	if err := instances.Delete(ctx, "vm-2", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete instance: %v", err)
	}
	count(2)
	if err := view.Delete(ctx, "vm-1", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("delete through the view: %v, want 403", err)
	}
}
