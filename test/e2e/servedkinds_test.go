package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/test/framework"
)

// TestShardsAreServedWhereKCPServesThem: kcp serves Shards through the
// system export shards.core.kcp.io, which root binds (config/root-phase0
// in kcp): root lists and serves them; an organization workspace does not
// (404, and core.kcp.io/v1alpha1 and the aggregated discovery list only
// logicalclusters there) until it binds the export.
func TestShardsAreServedWhereKCPServesThem(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaces(t)
	ctx := testContext(t)
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "servedkinds")

	resources := func(cluster string) ([]string, error) {
		list, err := e.kube(t, kcpAdmin, cluster).Discovery().ServerResourcesForGroupVersion(corev1alpha1.SchemeGroupVersion.String())
		if err != nil {
			return nil, err
		}
		var names []string
		for _, r := range list.APIResources {
			names = append(names, r.Name)
		}
		return names, nil
	}
	aggregated := func(cluster string) ([]string, error) {
		dc, err := discovery.NewDiscoveryClientForConfig(e.config(t, kcpAdmin, cluster))
		if err != nil {
			return nil, err
		}
		_, lists, _, err := dc.GroupsAndMaybeResources()
		if err != nil {
			return nil, err
		}
		var names []string
		if l := lists[corev1alpha1.SchemeGroupVersion]; l != nil {
			for _, r := range l.APIResources {
				names = append(names, r.Name)
			}
		}
		return names, nil
	}

	root, err := resources("root")
	if err != nil || !slices.Contains(root, "shards") {
		t.Fatalf("root's core.kcp.io/v1alpha1: %v %v, want shards", root, err)
	}
	if err := kcp.list(ctx, "root", shardsGVR, &corev1alpha1.ShardList{}); err != nil {
		t.Fatalf("list Shards in root: %v", err)
	}

	got, err := resources(org.path())
	if err != nil || slices.Contains(got, "shards") || !slices.Contains(got, "logicalclusters") {
		t.Errorf("core.kcp.io/v1alpha1 of %s: %v %v, want logicalclusters without shards", org.path(), got, err)
	}
	got, err = aggregated(org.path())
	if err != nil || slices.Contains(got, "shards") || !slices.Contains(got, "logicalclusters") {
		t.Errorf("aggregated discovery of %s: core.kcp.io/v1alpha1 %v %v, want logicalclusters without shards", org.path(), got, err)
	}
	err = kcp.list(ctx, org.path(), shardsGVR, &corev1alpha1.ShardList{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("list Shards in %s: want 404, got %v", org.path(), err)
	}

	// Bound, they are the workspace's own.
	if err := kcp.create(ctx, org.path(), apiBindingsGVR, bindingTo("shards", "root", "shards.core.kcp.io"), &apisv1alpha2.APIBinding{}); err != nil {
		t.Fatalf("bind root:shards.core.kcp.io in %s: %v", org.path(), err)
	}
	framework.EventuallyEvery(t, wsPoll, wsTimeout, func(ctx context.Context) error {
		got, err := resources(org.path())
		if err != nil {
			return err
		}
		if !slices.Contains(got, "shards") {
			return fmt.Errorf("core.kcp.io/v1alpha1 lists %v", got)
		}
		list := &corev1alpha1.ShardList{}
		if err := kcp.list(ctx, org.path(), shardsGVR, list); err != nil {
			return err
		}
		if len(list.Items) != 0 {
			return fmt.Errorf("the workspace's Shards are root's: %d", len(list.Items))
		}
		return nil
	}, "Shards served in %s once it binds their export", org.path())
}
