package e2esystem

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/test/framework"
)

// TestEveryWorkspaceHasExactlyOneLogicalCluster: workspaces created at once
// spread over the shards, and each one's LogicalCluster exists on the shard
// its placement names and on no other, however the scheduler's writes race.
func TestEveryWorkspaceHasExactlyOneLogicalCluster(t *testing.T) {
	if shards < 2 {
		t.Skip("needs a second shard (SHARDPLANE_E2E_SYSTEM_SHARDS >= 2)")
	}
	t.Parallel()
	ctx := testContext(t)
	org := readyWorkspace(ctx, t, "root", uniqueName("spread"), "organization", "")
	parent := logicalcluster.Name(org.Spec.Cluster)
	c := kcp(t, sys.AdminConfig(t, ""))

	const n, workers = 60, 8
	names := make(chan string, n)
	for i := range n {
		names <- fmt.Sprintf("ws-%d", i)
	}
	close(names)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				ws := &tenancyv1alpha1.Workspace{
					TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
					ObjectMeta: metav1.ObjectMeta{Name: name},
				}
				if err := c.Create(ctx, parent, workspacesGVR, ws, &tenancyv1alpha1.Workspace{}); err != nil {
					errs <- fmt.Errorf("create %s: %w", name, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	var list tenancyv1alpha1.WorkspaceList
	framework.Eventually(t, func(ctx context.Context) error {
		if err := c.List(ctx, parent, workspacesGVR, &list); err != nil {
			return err
		}
		for _, ws := range list.Items {
			if ws.Status.Phase != corev1alpha1.LogicalClusterPhaseReady {
				return fmt.Errorf("workspace %s is %q", ws.Name, ws.Status.Phase)
			}
		}
		if len(list.Items) != n {
			return fmt.Errorf("%d workspaces", len(list.Items))
		}
		return nil
	}, "%d workspaces never all Ready", n)

	// Where each logical cluster exists, read on every shard directly.
	found := map[string][]string{}
	for i := range shards {
		shard := "root"
		if i > 0 {
			shard = fmt.Sprintf("shard-%d", i)
		}
		var lcs corev1alpha1.LogicalClusterList
		if err := kcp(t, sys.ShardAdminConfig(t, shard, "")).List(ctx, logicalcluster.Wildcard, kcpclient.LogicalClusters, &lcs); err != nil {
			t.Fatalf("list LogicalClusters on %s: %v", shard, err)
		}
		for _, lc := range lcs.Items {
			cluster := lc.Annotations[logicalcluster.AnnotationKey]
			found[cluster] = append(found[cluster], shard)
		}
	}
	perShard := map[string]int{}
	for _, ws := range list.Items {
		on := found[ws.Spec.Cluster]
		if len(on) != 1 || on[0] != shardOf(&ws) {
			t.Errorf("workspace %s placed on %q: its LogicalCluster %s is on %v", ws.Name, shardOf(&ws), ws.Spec.Cluster, on)
		}
		perShard[shardOf(&ws)]++
	}
	if len(perShard) < 2 {
		t.Errorf("%d workspaces all went to one shard: %v", n, perShard)
	}
	t.Logf("placement of %d workspaces: %v", n, perShard)
}

// TestWorkspaceStillSchedulingAnswers429WithRetryAfter: the path of a
// workspace that has no logical cluster yet answers 429 with Retry-After
// through the front-proxy, to a user who may see it; it is no 403.
func TestWorkspaceStillSchedulingAnswers429WithRetryAfter(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	c := kcp(t, sys.AdminConfig(t, ""))
	name := uniqueName("unplaced")
	ws := &tenancyv1alpha1.Workspace{
		TypeMeta:   metav1.TypeMeta{APIVersion: tenancyv1alpha1.SchemeGroupVersion.String(), Kind: "Workspace"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		// No shard carries this label: the workspace stays Scheduling.
		Spec: tenancyv1alpha1.WorkspaceSpec{Location: &tenancyv1alpha1.WorkspaceLocation{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "nowhere"}}}},
	}
	if err := c.Create(ctx, logicalcluster.Root, workspacesGVR, ws, &tenancyv1alpha1.Workspace{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Delete(context.Background(), logicalcluster.Root, workspacesGVR, name, nil) }()
	token := sys.AdminConfig(t, "").BearerToken
	client := proxyClient(t)
	framework.Eventually(t, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, sys.URL(t)+"/clusters/root:"+name+"/api/v1/namespaces", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusTooManyRequests {
			return fmt.Errorf("%d: %s", resp.StatusCode, body)
		}
		if resp.Header.Get("Retry-After") == "" {
			return fmt.Errorf("429 without Retry-After: %s", body)
		}
		return nil
	}, "429 for the workspace being scheduled")
	got := &tenancyv1alpha1.Workspace{}
	if err := c.Get(ctx, logicalcluster.Root, workspacesGVR, name, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1alpha1.LogicalClusterPhaseScheduling || got.Spec.Cluster != "" {
		t.Errorf("workspace phase %q cluster %q, want Scheduling without a cluster", got.Status.Phase, got.Spec.Cluster)
	}
}
