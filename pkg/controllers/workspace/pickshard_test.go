package workspace

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// staticShards is a shardlookup.Source over a fixed list.
type staticShards []*corev1alpha1.Shard

func (s staticShards) Get(name string) (*corev1alpha1.Shard, error) {
	for _, sh := range s {
		if sh.Name == name {
			return sh, nil
		}
	}
	return nil, nil
}

func (s staticShards) List() ([]*corev1alpha1.Shard, error) { return s, nil }

func TestPickShardFollowsTheLocationSelector(t *testing.T) {
	shard := func(name, region string) *corev1alpha1.Shard {
		return &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"region": region}}}
	}
	c := &Controller{shards: staticShards{shard("alpha", "eu"), shard("beta", "us")}, load: newShardLoad()}
	ws := func(selector *metav1.LabelSelector) *tenancyv1alpha1.Workspace {
		w := &tenancyv1alpha1.Workspace{}
		if selector != nil {
			w.Spec.Location = &tenancyv1alpha1.WorkspaceLocation{Selector: selector}
		}
		return w
	}

	got, err := c.pickShard("root|w", ws(&metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}}))
	if err != nil || got == nil || got.Name != "beta" {
		t.Errorf("region=us: got %v, %v; want beta", got, err)
	}
	got, err = c.pickShard("root|w", ws(&metav1.LabelSelector{MatchLabels: map[string]string{"region": "ap"}}))
	var none noShardError
	if got != nil || !errors.As(err, &none) || err.Error() != "no shard matches spec.location.selector" {
		t.Errorf("region=ap: got %v, %v; want no shard and a noShardError", got, err)
	}
	if got, err = c.pickShard("root|w", ws(nil)); err != nil || got == nil {
		t.Errorf("no selector: got %v, %v; want one of the shards", got, err)
	}

	// An invalid selector is reported as such, not as "no shard matches".
	_, err = c.pickShard("root|w", ws(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Near"}}}))
	var invalid invalidSelectorError
	if !errors.As(err, &invalid) {
		t.Fatalf("invalid selector: got %v, want an invalidSelectorError", err)
	}
	if want := "invalid spec.location.selector"; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
		t.Errorf("message %q does not start with %q", err, want)
	}
}

func scheduledWorkspace(name, shard string) *tenancyv1alpha1.Workspace {
	return &tenancyv1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kcp.io/cluster": "root", corev1alpha1.ShardAnnotationKey: shard}},
		Spec:       tenancyv1alpha1.WorkspaceSpec{Cluster: "c-" + name},
	}
}

func TestPickShardPlacesOnTheLeastLoadedShard(t *testing.T) {
	alpha := &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "alpha"}}
	beta := &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "beta"}}
	candidates := []*corev1alpha1.Shard{alpha, beta}
	l := newShardLoad()
	for _, name := range []string{"a1", "a2", "a3"} {
		l.OnAdd(scheduledWorkspace(name, "alpha"))
	}
	l.OnAdd(scheduledWorkspace("b1", "beta"))

	// beta has one, alpha three: the next two go to beta, assumed before
	// the informer shows them, so that concurrent workers spread.
	for _, key := range []string{"root|n1", "root|n2"} {
		if got := l.pick(key, candidates); got.Name != "beta" {
			t.Fatalf("pick %s: %s, want beta (counts %v, assumed %v)", key, got.Name, l.counts, l.assumed)
		}
	}
	// Now three each: the informer showing n1 and n2 on beta replaces the
	// assumptions without counting them twice.
	l.OnUpdate(nil, scheduledWorkspace("n1", "beta"))
	l.OnUpdate(nil, scheduledWorkspace("n2", "beta"))
	if l.counts["beta"] != 3 || len(l.assumed) != 0 {
		t.Fatalf("after the informer caught up: beta %d, assumed %v; want 3 and none", l.counts["beta"], l.assumed)
	}
	// A placement that failed is forgotten; picking a workspace again
	// replaces its earlier assumption.
	l.pick("root|n3", candidates)
	l.forget("root|n3")
	first := l.pick("root|n4", candidates)
	second := l.pick("root|n4", candidates)
	if len(l.assumed) != 1 || l.assumed["root|n4"] != second.Name {
		t.Fatalf("assumed %v after picking n4 twice (%s, %s); want only n4", l.assumed, first.Name, second.Name)
	}
	// Deleting workspaces lowers the count: alpha becomes the least loaded.
	l.forget("root|n4")
	for _, name := range []string{"a1", "a2"} {
		l.OnDelete(scheduledWorkspace(name, "alpha"))
	}
	if got := l.pick("root|n5", candidates); got.Name != "alpha" {
		t.Errorf("after deleting two of alpha's: picked %s, want alpha (alpha 1, beta 3)", got.Name)
	}
	// Ten picks over two equal shards split evenly.
	even := newShardLoad()
	picked := map[string]int{}
	for i := range 10 {
		picked[even.pick(string(rune('a'+i)), candidates).Name]++
	}
	if picked["alpha"] != 5 || picked["beta"] != 5 {
		t.Errorf("ten picks: %v, want 5 each", picked)
	}
}

func TestPickShardSkipsUnschedulableShards(t *testing.T) {
	closed := &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "alpha", Annotations: map[string]string{corev1alpha1.ShardUnschedulableAnnotationKey: "true"}}}
	open := &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "beta"}}
	c := &Controller{shards: staticShards{closed, open}, load: newShardLoad()}
	for i := range 5 {
		got, err := c.pickShard(string(rune('a'+i)), &tenancyv1alpha1.Workspace{})
		if err != nil || got == nil || got.Name != "beta" {
			t.Fatalf("pick %d: %v, %v; want beta (alpha is unschedulable)", i, got, err)
		}
	}
}

// TestPlacementKeepsTheShardOfALogicalClusterCreatedBefore: this shard
// creates a LogicalCluster before it records the placement; a retry (after
// a failed update, or a restart) places the workspace where it already is
// instead of picking again.
func TestPlacementKeepsTheShardOfALogicalClusterCreatedBefore(t *testing.T) {
	shards := staticShards{
		{ObjectMeta: metav1.ObjectMeta{Name: "alpha"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "beta"}},
	}
	ws := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "w", UID: "uid-1"}}
	newController := func() *Controller {
		return &Controller{
			shards: shards, load: newShardLoad(), shardName: "alpha",
			logicalClusters: wildcardinformer.New(&cache.ListWatch{}, &corev1alpha1.LogicalCluster{}, "test-logicalclusters"),
		}
	}

	// Restarted: the informer holds the cluster this shard created.
	c := newController()
	lc := &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{
		Name:        corev1alpha1.LogicalClusterName,
		Annotations: map[string]string{logicalcluster.AnnotationKey: string(ClusterName("uid-1"))},
	}, Spec: corev1alpha1.LogicalClusterSpec{Owner: &corev1alpha1.LogicalClusterOwner{UID: "uid-1"}}}
	if err := c.logicalClusters.Indexer().Add(lc); err != nil {
		t.Fatal(err)
	}
	c.load.set("root|other", "alpha") // alpha is the busier shard
	for range 10 {
		if got, err := c.placement("root|w", ws); err != nil || got == nil || got.Name != "alpha" {
			t.Fatalf("placement = %v, %v; want alpha, which holds the workspace's LogicalCluster", got, err)
		}
	}

	// Same process, informer behind: the assumed shard is kept.
	c = newController()
	first, err := c.placement("root|w", ws)
	if err != nil || first == nil {
		t.Fatalf("placement = %v, %v", first, err)
	}
	for range 10 {
		if got, _ := c.placement("root|w", ws); got == nil || got.Name != first.Name {
			t.Fatalf("placement moved from %s to %v on retry", first.Name, got)
		}
	}
}
