package e2esystem

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/system"
	"github.com/shardplane/shardplane/test/framework"
)

// TestVirtualResourcesReachConsumersOnEveryShard is kcp's
// TestClusterCachedResources on two shards, every request through the
// front-proxy: the provider's workspace is on the first shard, one
// consumer on each; both bind the export whose instances are virtual and
// find them in discovery, their watches see the provider's new instance in
// their own cluster, list, get and kubectl get return it, its update and
// deletion follow, and writes are refused.
func TestVirtualResourcesReachConsumersOnEveryShard(t *testing.T) {
	if shards < 2 {
		t.Skip("needs two shards")
	}
	t.Parallel()
	ctx := testContext(t)
	provider := readyWorkspace(ctx, t, "root", uniqueName("vr-provider"), "organization", system.ShardName(0))
	providerCluster := provider.Spec.Cluster
	instances, _ := framework.PublishCachedInstances(ctx, t, sys.AdminConfig(t, providerCluster))

	watches := map[string]*framework.VirtualWatch{}
	var consumers []string
	for _, shard := range []string{system.ShardName(1), system.ShardName(0)} {
		ws := readyWorkspace(ctx, t, "root", uniqueName("vr-consumer"), "organization", shard)
		if got := shardOf(ws); got != shard {
			t.Fatalf("consumer on %q, want %q", got, shard)
		}
		cluster := ws.Spec.Cluster
		consumers = append(consumers, cluster)
		cfg := sys.AdminConfig(t, cluster)
		framework.BindCachedInstances(ctx, t, cfg, "root:"+provider.Name)
		watches[cluster] = framework.WatchInstances(ctx, t, cfg)
	}

	one, err := instances.Create(ctx, framework.Instance("instances-1", "basic", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create instance: %v", err)
	}
	for _, cluster := range consumers {
		framework.Eventually(t, func(context.Context) error {
			return watches[cluster].Saw(watch.Added, "instances-1", logicalcluster.Name(cluster))
		}, "the watch in %s sees the instance", cluster)
		framework.RequireVirtualInstance(t, sys.AdminConfig(t, cluster), logicalcluster.Name(cluster), one)
	}
	// The consumer on the other shard than the provider, with kubectl.
	out := kubectl(ctx, t, sys.URL(t)+"/clusters/"+consumers[0], "get", "instances."+framework.InstancesGVR.Group, "-o", "name")
	if !strings.Contains(out, "instance."+framework.InstancesGVR.Group+"/instances-1") {
		t.Errorf("kubectl get instances in the consumer: %q, want instances-1", out)
	}
	if out := kubectl(ctx, t, sys.URL(t)+"/clusters/"+consumers[0], "get", "instances."+framework.InstancesGVR.Group); !strings.Contains(out, "instances-1") {
		t.Errorf("kubectl get instances in the consumer, as a table: %q, want instances-1", out)
	}

	consumer := dynamic.NewForConfigOrDie(sys.AdminConfig(t, consumers[0])).Resource(framework.InstancesGVR)
	if _, err := consumer.Create(ctx, framework.Instance("forged", "basic", nil), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("create in a consumer: %v, want 403", err)
	}

	if err := unstructured.SetNestedField(one.Object, "premium", "spec", "tier"); err != nil {
		t.Fatal(err)
	}
	if _, err := instances.Update(ctx, one, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update instance: %v", err)
	}
	if err := instances.Delete(ctx, "instances-1", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete instance: %v", err)
	}
	for _, cluster := range consumers {
		for _, typ := range []watch.EventType{watch.Modified, watch.Deleted} {
			framework.Eventually(t, func(context.Context) error {
				return watches[cluster].Saw(typ, "instances-1", logicalcluster.Name(cluster))
			}, "the watch in %s sees %s", cluster, typ)
		}
	}
}
