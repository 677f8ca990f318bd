package workspace

import (
	"context"
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

func TestScheduledWorkspaceCarriesKCPsShardAnnotations(t *testing.T) {
	ws := &tenancyv1alpha1.Workspace{}
	setScheduledAnnotations(ws, "root", "2x8j4k1m9q0w3e5r")
	want := map[string]string{
		"core.kcp.io/shard":               "root",
		"internal.tenancy.kcp.io/shard":   "1pfxsevk",
		"internal.tenancy.kcp.io/cluster": "2x8j4k1m9q0w3e5r",
	}
	for k, v := range want {
		if got := ws.Annotations[k]; got != v {
			t.Errorf("annotation %s = %q, want %q", k, got, v)
		}
	}
	if shardOf(ws) != "root" {
		t.Errorf("shardOf = %q, want root", shardOf(ws))
	}
	// Scheduled before core.kcp.io/shard existed: the plain name.
	legacy := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"internal.tenancy.kcp.io/shard": "beta"}}}
	if shardOf(legacy) != "beta" {
		t.Errorf("shardOf(legacy) = %q, want beta", shardOf(legacy))
	}
}

func TestLogicalClusterGetsTheWorkspacesRequiredGroups(t *testing.T) {
	const key = corev1alpha1.RequiredGroupsAnnotationKey
	ref := tenancyv1alpha1.WorkspaceTypeReference{Name: "universal", Path: "root"}
	tests := []struct {
		name            string
		workspace       map[string]string
		parent          map[string]string
		want            string
		wantUnannotated bool
	}{
		{"set by system:masters on the workspace", map[string]string{key: "team-1"}, nil, "team-1", false},
		{"the workspace's value wins over the parent's", map[string]string{key: "team-2"}, map[string]string{key: "team-1"}, "team-2", false},
		{"admitted before inheritance: the parent's", nil, map[string]string{key: "team-1"}, "team-1", false},
		{"none anywhere", nil, nil, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := &tenancyv1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "child", Annotations: tc.workspace}}
			parent := &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Annotations: tc.parent}}
			got := logicalClusterAnnotations(ws, parent, "root:org:child", ref)
			if v, ok := got[key]; tc.wantUnannotated && ok {
				t.Errorf("%s = %q, want unset", key, v)
			} else if !tc.wantUnannotated && v != tc.want {
				t.Errorf("%s = %q, want %q", key, v, tc.want)
			}
			if got["kcp.io/path"] != "root:org:child" || got[corev1alpha1.LogicalClusterTypeAnnotationKey] != "root:universal" {
				t.Errorf("annotations %v lack path and type", got)
			}
		})
	}
}

// TestLogicalClusterOnThisShardIsCreatedInProcess: the LogicalCluster of
// a workspace placed on this shard is created in-process; one placed on
// another shard through that shard's client.
func TestLogicalClusterOnThisShardIsCreatedInProcess(t *testing.T) {
	errRemote := errors.New("through the shard's client")
	var local []string
	c := &Controller{
		shardName: "root",
		createLocal: func(_ context.Context, cluster logicalcluster.Name, objs ...runtime.Object) error {
			for _, obj := range objs {
				local = append(local, string(cluster)+"|"+obj.(*corev1alpha1.LogicalCluster).Name)
			}
			return nil
		},
		shardClient: func(*corev1alpha1.Shard) (*kcpclient.Client, error) { return nil, errRemote },
	}
	lc := &corev1alpha1.LogicalCluster{ObjectMeta: metav1.ObjectMeta{Name: corev1alpha1.LogicalClusterName}}
	if err := c.createLogicalCluster(context.Background(), &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "root"}}, "c1", lc); err != nil {
		t.Fatal(err)
	}
	if want := []string{"c1|cluster"}; !slices.Equal(local, want) {
		t.Errorf("created in-process %q, want %q", local, want)
	}
	if err := c.createLogicalCluster(context.Background(), &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "beta"}}, "c2", lc); !errors.Is(err, errRemote) {
		t.Errorf("on another shard: %v, want the shard's client used", err)
	}
	if len(local) != 1 {
		t.Errorf("created in-process on another shard: %q", local)
	}

	// Without the means, this shard is reached through its client too.
	c.createLocal = nil
	if err := c.createLogicalCluster(context.Background(), &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: "root"}}, "c3", lc); !errors.Is(err, errRemote) {
		t.Errorf("without createLocal: %v, want the shard's client used", err)
	}
}
