package e2e

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/features"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
	"github.com/shardplane/shardplane/test/framework"
)

// TestVirtualResourceServesClusterCachedResourceCopiesToConsumers is kcp's
// TestClusterCachedResources (test/e2e/virtualresources/clustercachedresources)
// on one shard with the CacheAPIs gate: a provider publishes its instances
// through a ClusterCachedResource, an endpoint slice and an APIExport whose
// instances are virtual; two consumers bind the export and find instances
// in discovery (get, list, watch) and OpenAPI; their watches, in their
// workspaces and through the APIExport's view, see an instance the provider
// creates, shown in their own cluster; list and get, both ways, return it as
// the provider has it; an update and a deletion follow in the
// watches; writes are refused; and a CRD of the same name in a consumer is
// refused (kcp creates it with its names not accepted).
func TestVirtualResourceServesClusterCachedResourceCopiesToConsumers(t *testing.T) {
	t.Parallel()
	e := &wsEnv{s: framework.StartShard(t, framework.WithArgs(features.EnableFlag(features.CacheAPIs)))}
	e.waitForRootBootstrap(t)
	ctx := testContext(t)
	provider := e.readyOrg(ctx, t, "vr-provider")
	consumers := []ws{e.readyOrg(ctx, t, "vr-consumer"), e.readyOrg(ctx, t, "vr-consumer")}

	instances, _ := framework.PublishCachedInstances(ctx, t, e.config(t, kcpAdmin, provider.path()))
	watches := map[string]*framework.VirtualWatch{}
	for _, c := range consumers {
		cfg := e.config(t, kcpAdmin, c.path())
		framework.BindCachedInstances(ctx, t, cfg, provider.path())
		list, err := dynamic.NewForConfigOrDie(cfg).Resource(framework.InstancesGVR).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 0 {
			t.Fatalf("instances in %s before the provider has any: %v, %v", c.path(), list, err)
		}
		watches[c.cluster()] = framework.WatchInstances(ctx, t, cfg)
		// And through the APIExport's view, as its owner reads consumers.
		view := exportView(t, e, provider, c)
		watches["view:"+c.cluster()] = framework.WatchInstances(ctx, t, view)
	}

	one, err := instances.Create(ctx, framework.Instance("instances-1", "basic", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create instance: %v", err)
	}
	for _, c := range consumers {
		cluster := logicalcluster.Name(c.cluster())
		framework.Eventually(t, func(context.Context) error { return watches[c.cluster()].Saw(watch.Added, "instances-1", cluster) },
			"the watch in %s sees the instance", c.path())
		framework.RequireVirtualInstance(t, e.config(t, kcpAdmin, c.path()), cluster, one)
		framework.Eventually(t, func(context.Context) error {
			return watches["view:"+c.cluster()].Saw(watch.Added, "instances-1", cluster)
		},
			"the watch in %s through the APIExport's view sees the instance", c.path())
		framework.RequireVirtualInstance(t, exportView(t, e, provider, c), cluster, one)
	}

	consumer := dynamic.NewForConfigOrDie(e.config(t, kcpAdmin, consumers[0].path())).Resource(framework.InstancesGVR)
	if _, err := consumer.Create(ctx, framework.Instance("forged", "basic", nil), metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("create in a consumer: %v, want 403", err)
	}
	if err := consumer.Delete(ctx, "instances-1", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("delete in a consumer: %v, want 403", err)
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
	for _, c := range consumers {
		cluster := logicalcluster.Name(c.cluster())
		for _, typ := range []watch.EventType{watch.Modified, watch.Deleted} {
			framework.Eventually(t, func(context.Context) error { return watches[c.cluster()].Saw(typ, "instances-1", cluster) },
				"the watch in %s sees %s", c.path(), typ)
		}
	}

	framework.RequireConflictingCRDRefused(ctx, t, e.config(t, kcpAdmin, consumers[0].path()))
}

// exportView is a config of the APIExport view of the provider's
// CachedInstancesExport in the consumer's cluster, as the provider's admin.
func exportView(t *testing.T, e *wsEnv, provider, consumer ws) *rest.Config {
	t.Helper()
	cfg := rest.CopyConfig(e.config(t, kcpAdmin, provider.path()))
	cfg.Host = viewurl.APIExportURL(e.s.BaseURL(t), logicalcluster.Name(provider.cluster()), framework.CachedInstancesExport) + logicalcluster.Name(consumer.cluster()).RequestPath()
	return cfg
}
