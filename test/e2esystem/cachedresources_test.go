package e2esystem

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	cachev1alpha1 "github.com/shardplane/shardplane/pkg/apis/cache/v1alpha1"
	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/system"
	"github.com/shardplane/shardplane/test/framework"
)

// TestClusterCachedResourcesReplicateFromEveryShard is kcp's
// TestReplicationWithWildcardListing on two shards, every request through
// the front-proxy: two workspaces, one on each shard, publish their
// instances under one identity (the same secret key), so the cache server
// holds both sets of copies, below each workspace's shard and logical
// cluster, with one identity hash; each ClusterCachedResource counts its
// own (7/7), the second shard's endpoint slice names its view behind the
// front-proxy, where the copies are read; and deleting that
// ClusterCachedResource takes its copies, and only its, out of the cache.
func TestClusterCachedResourcesReplicateFromEveryShard(t *testing.T) {
	if shards < 2 {
		t.Skip("needs two shards")
	}
	t.Parallel()
	ctx := testContext(t)
	admin := kcp(t, sys.AdminConfig(t, ""))
	identity := "identity-" + uniqueName("shared")
	selected := map[string]string{framework.InstancesPartOfLabel: "instances"}
	clusters := map[string]logicalcluster.Name{}
	var hash string
	for _, shard := range []string{system.ShardName(0), system.ShardName(1)} {
		ws := readyWorkspace(ctx, t, "root", uniqueName("cached-"+shard), "organization", shard)
		if got := shardOf(ws); got != shard {
			t.Fatalf("workspace on %q, want %q", got, shard)
		}
		cluster := logicalcluster.Name(ws.Spec.Cluster)
		clusters[shard] = cluster
		instances := framework.InstallInstances(ctx, t, sys.AdminConfig(t, string(cluster)))
		for i := 1; i <= 7; i++ {
			if _, err := instances.Create(ctx, framework.Instance(fmt.Sprintf("web-server-%d", i), "basic", selected), metav1.CreateOptions{}); err != nil {
				t.Fatalf("create instance on %s: %v", shard, err)
			}
		}
		if _, err := kube(t, sys.AdminConfig(t, string(cluster))).CoreV1().Secrets("default").Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "identity"}, StringData: map[string]string{"key": identity},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create identity secret: %v", err)
		}
		cr := &cachev1alpha1.ClusterCachedResource{
			TypeMeta:   metav1.TypeMeta{APIVersion: cachev1alpha1.SchemeGroupVersion.String(), Kind: "ClusterCachedResource"},
			ObjectMeta: metav1.ObjectMeta{Name: "instances"},
			Spec: cachev1alpha1.ClusterCachedResourceSpec{
				GroupVersionResource: cachev1alpha1.GroupVersionResource{Group: framework.InstancesGVR.Group, Version: framework.InstancesGVR.Version, Resource: framework.InstancesGVR.Resource},
				Identity:             &cachev1alpha1.Identity{SecretRef: &cachev1alpha1.SecretReference{Name: "identity", Namespace: "default"}},
				LabelSelector:        &metav1.LabelSelector{MatchLabels: selected},
			},
		}
		if err := admin.Create(ctx, cluster, kcpclient.ClusterCachedResources, cr, &cachev1alpha1.ClusterCachedResource{}); err != nil {
			t.Fatalf("create ClusterCachedResource on %s: %v", shard, err)
		}
		framework.Eventually(t, func(ctx context.Context) error {
			if err := admin.Get(ctx, cluster, kcpclient.ClusterCachedResources, "instances", cr); err != nil {
				return err
			}
			if c := cr.Status.ResourceCounts; c == nil || c.Local != 7 || c.Cache != 7 || !cr.Status.Conditions.IsTrue(cachev1alpha1.ReplicationStarted) {
				return fmt.Errorf("status %+v", cr.Status)
			}
			return nil
		}, "ClusterCachedResource on %s counts 7 and 7", shard)
		if hash != "" && cr.Status.IdentityHash != hash {
			t.Errorf("identity hash on %s %q, want the other shard's %q: same key", shard, cr.Status.IdentityHash, hash)
		}
		hash = cr.Status.IdentityHash
	}

	// Across shards and workspaces, the cache server holds 14 copies under
	// the one identity, each below its own shard and cluster.
	wildcard := cacheCopies(t, cacheclient.WildcardShard, logicalcluster.Wildcard)
	list, err := wildcard.List(ctx, metav1.ListOptions{LabelSelector: cacheclient.CachedResourceLabel + "=instances"})
	if err != nil {
		t.Fatalf("wildcard list of copies: %v", err)
	}
	perShard := map[string]int{}
	for _, item := range list.Items {
		if item.GetAnnotations()[cacheclient.IdentityHashAnnotation] != hash {
			continue
		}
		for shard, cluster := range clusters {
			if item.GetAnnotations()[cacheclient.ShardAnnotationKey] == shard && logicalcluster.Name(item.GetAnnotations()[logicalcluster.AnnotationKey]) == cluster {
				perShard[shard]++
			}
		}
	}
	if perShard[system.ShardName(0)] != 7 || perShard[system.ShardName(1)] != 7 {
		t.Errorf("copies under identity %s per shard %v, want 7 from each", hash, perShard)
	}

	// The second shard's view, behind the front-proxy, serves its copies.
	second, secondCluster := system.ShardName(1), clusters[system.ShardName(1)]
	slice := &cachev1alpha1.ClusterCachedResourceEndpointSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: cachev1alpha1.SchemeGroupVersion.String(), Kind: "ClusterCachedResourceEndpointSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: "instances"},
		Spec: cachev1alpha1.ClusterCachedResourceEndpointSliceSpec{
			ClusterCachedResource: cachev1alpha1.ClusterCachedResourceReference{Name: "instances"},
			APIExport:             cachev1alpha1.ExportBindingReference{Name: "compute"},
		},
	}
	if err := admin.Create(ctx, secondCluster, kcpclient.ClusterCachedResourceEndpointSlices, slice, &cachev1alpha1.ClusterCachedResourceEndpointSlice{}); err != nil {
		t.Fatalf("create endpoint slice: %v", err)
	}
	wantURL := sys.URL(t) + "/shards/" + second + "/services/replication/" + string(secondCluster) + "/instances"
	framework.Eventually(t, func(ctx context.Context) error {
		if err := admin.Get(ctx, secondCluster, kcpclient.ClusterCachedResourceEndpointSlices, "instances", slice); err != nil {
			return err
		}
		if eps := slice.Status.ClusterCachedResourceEndpoints; len(eps) != 1 || eps[0].URL != wantURL {
			return fmt.Errorf("status %+v", slice.Status)
		}
		return nil
	}, "endpoint slice lists %s", wantURL)
	viewCfg := rest.CopyConfig(sys.AdminConfig(t, ""))
	viewCfg.Host = wantURL
	view := dynamic.NewForConfigOrDie(viewCfg).Resource(framework.InstancesGVR)
	framework.Eventually(t, func(ctx context.Context) error {
		got, err := view.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(got.Items) != 7 {
			return fmt.Errorf("%d instances", len(got.Items))
		}
		return nil
	}, "the view lists the second shard's 7 instances")
	if _, err := view.Create(ctx, framework.Instance("forged", "basic", selected), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("create through the view: %v, want 403", err)
	}

	// Deleting the second shard's ClusterCachedResource removes its copies
	// and leaves root's.
	if err := admin.Delete(ctx, secondCluster, kcpclient.ClusterCachedResources, "instances", nil); err != nil {
		t.Fatalf("delete ClusterCachedResource: %v", err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		left, err := cacheCopies(t, cacheclient.Shard(second), secondCluster).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(left.Items) != 0 {
			return fmt.Errorf("%d copies left", len(left.Items))
		}
		return nil
	}, "the second shard's copies are gone")
	rootCopies, err := cacheCopies(t, cacheclient.Shard(system.ShardName(0)), clusters[system.ShardName(0)]).List(ctx, metav1.ListOptions{})
	if err != nil || len(rootCopies.Items) != 7 {
		t.Errorf("root's copies after the other deletion: %v, %v; want 7", len(rootCopies.Items), err)
	}
}

// cacheCopies addresses CachedObjects in the system's cache server as its
// admin.
func cacheCopies(t *testing.T, shard cacheclient.Shard, cluster logicalcluster.Name) dynamic.ResourceInterface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(sys.CacheDir(), "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Host = cacheclient.URL(sys.CacheURL(t), shard, cluster)
	return dynamic.NewForConfigOrDie(cfg).Resource(cacheclient.CachedObjects.Resource)
}
